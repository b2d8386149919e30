"""S31 end to end in Docker: a Go module the test writes whose cgo package links
``${SRCDIR}/../cpp/cmake-build-release/libfoo.a``, a static library the repository's own CMake
project in ``cpp/`` builds (and ``-lstdc++``). The fix is in the C++ source, the test_patch adds
a Go test. Round 1 builds the plain Go plan: the package does not link on either side, no test
runs. The Go ecosystem's move (`owner_build`, evidence: the directive, the missing path, the
CMake project) plans the library's build into exactly ``cpp/cmake-build-release`` (Release)
before the Go packages compile; that round verifies, the new test FAIL_TO_PASS (the after side's
test run rebuilt the library from the fixed source) and the old one PASS_TO_PASS.
"""

from __future__ import annotations

import pytest

from agents.ecosystems import golang
from tests.agents.ecosystems.test_golang_cgo_native import CPP_FIX, LIB, NEW_TEST, files

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_cgo_package_linking_the_repositorys_own_cmake_library_verifies(mint_with):
    res = mint_with(golang.ECOSYSTEM, files(), "cgo-native", language="Go", created_at="2023-03-01 10:00:00",
                    tests={"pkg/foo_test.go": NEW_TEST}, fix={"cpp/foo.cpp": CPP_FIX})
    assert res.outcome == "verified", (res.reason, [r.model_dump() for r in res.rounds])
    assert res.FAIL_TO_PASS == ["example.com/app/pkg::TestAdd"]
    assert res.PASS_TO_PASS == ["example.com/app/pkg::TestZero"]
    assert res.rounds[0].outcome == "tests_not_run"
    last = res.rounds[-1]
    assert last.move == "owner_build" and last.source == "built"
    assert f"-> {LIB} (missing at the base commit)" in last.evidence
    assert "built by cpp (cmake, Release, into cpp/cmake-build-release)" in last.evidence
    assert "cmake -S /testbed/cpp -B /testbed/cpp/cmake-build-release -DCMAKE_BUILD_TYPE=Release" in res.setup_script

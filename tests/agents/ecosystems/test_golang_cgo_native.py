"""S31: a cgo package links a library that the repository itself builds with its own build.

The repositories are ones the tests write: a Go module whose package ``pkg`` is cgo with
``#cgo LDFLAGS: ${SRCDIR}/../cpp/cmake-build-release/libfoo.a -lstdc++`` and a CMake project in
``cpp/`` building ``libfoo``. A fresh checkout has no ``cpp/cmake-build-release``: the package
does not build on either side. The Go ecosystem's move (`next_moves`, kind ``owner_build``)
names the directive, the missing path and the build that produces it; the plan it asks for
configures ``cpp/CMakeLists.txt`` into exactly ``cpp/cmake-build-release`` (Release) and builds
``foo`` before the Go packages are listed and compiled, every repository value quoted; the test
command brings the library up to date first (a fix to the C++ is what the tests link). A cgo
package that names only system libraries (``-lm``) asks for no build. With the fake sandbox the
loop records the move as a round with its evidence; a build that does not produce the path ends
the row naming it. With the host's go, cmake and g++, the plan's own steps build the library and
``go test`` links it.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from agents.ecosystems import golang
from agents.ecosystems.base import PlanRequest
from agents.ecosystems.golang.go_cgo import CgoNeed, _build_folder, cgo_directives, go_imports
from agents.ecosystems.move_types import MoveContext
from agents.mint_config import MintConfig
from agents.minter import mint_instance
from envpool.fake import FakeSandboxFactory
from envpool.images import ImageConfig
from tests.agents.ecosystems.conftest import force_ecosystem, make_instance, make_patches, make_repo, write_files

GO_MOD = "module example.com/app\n\ngo 1.19\n"
CGO = """package pkg

/*
#cgo CXXFLAGS: -std=c++11
#cgo LDFLAGS: ${SRCDIR}/../cpp/cmake-build-release/libfoo.a -lstdc++
#cgo darwin LDFLAGS: ${SRCDIR}/../cpp/cmake-build-darwin/libfoo.a
int foo_add(int a, int b);
*/
import "C"

// Add returns a+b, computed by the repository's own C++ library.
func Add(a, b int) int { return int(C.foo_add(C.int(a), C.int(b))) }
"""
OLD_TEST = 'package pkg\n\nimport "testing"\n\nfunc TestZero(t *testing.T) {\n\tif Add(0, 0) != 0 {\n\t\tt.Fatal("zero")\n\t}\n}\n'
NEW_TEST = OLD_TEST + '\nfunc TestAdd(t *testing.T) {\n\tif Add(2, 3) != 5 {\n\t\tt.Fatal(Add(2, 3))\n\t}\n}\n'
CMAKE = "cmake_minimum_required(VERSION 3.13)\nproject(foo CXX)\nadd_library(foo STATIC foo.cpp)\n"
CPP_BUG = 'extern "C" int foo_add(int a, int b) { return a - b; }\n'
CPP_FIX = 'extern "C" int foo_add(int a, int b) { return a + b; }\n'
LIB = "cpp/cmake-build-release/libfoo.a"


def files(**over: str) -> dict[str, str]:
    out = {"go.mod": GO_MOD, "pkg/foo.go": CGO, "pkg/foo_test.go": OLD_TEST, "cpp/CMakeLists.txt": CMAKE,
           "cpp/foo.cpp": CPP_BUG}
    out.update(over)
    return {k: v for k, v in out.items() if v}


def repo_with(tmp_path: Path, tree_files: dict[str, str], test_file: str = "pkg/foo_test.go"):
    """(tree, instance) of `tree_files` whose test_patch adds TestAdd to `test_file`."""
    git_dir, sha = make_repo(tmp_path, tree_files)
    test_patch, patch = make_patches(git_dir, {test_file: (tree_files.get(test_file) or OLD_TEST) + NEW_TEST[len(OLD_TEST):]},
                                     {"cpp/foo.cpp": CPP_FIX} if "cpp/foo.cpp" in tree_files else {})
    from agents.gitrepo import GitTree

    return GitTree(git_dir, sha), make_instance(sha, "Go", instance_id="acme__app-1", repo="acme/app",
                                                 test_patch=test_patch, patch=patch or test_patch)


def moves_of(tree, inst, touched, why="no test ran: example.com/app/pkg [build failed]"):
    plan = golang.ECOSYSTEM.plan(tree, inst, touched, ImageConfig())
    return plan, golang.ECOSYSTEM.next_moves(MoveContext(tree=tree, instance=inst, plan=plan, touched=touched, why=why))


# -- the move and the plan it asks for ----------------------------------------------------------

def test_the_move_names_the_missing_path_and_the_build_and_the_plan_builds_it_first(tmp_path, image_store):
    tree, inst = repo_with(tmp_path, files())
    plan, moves = moves_of(tree, inst, ["pkg/foo_test.go"])
    assert not any("cmake" in c for c in plan.setup_commands)  # round 1 is the plain Go plan
    [move] = moves
    assert move.kind == "owner_build" and "S31" in move.serves
    assert move.request == PlanRequest(options={"cgo_native": True})
    assert f"#cgo LDFLAGS ${{SRCDIR}}/../{LIB} -> {LIB} (missing at the base commit)" in move.evidence
    assert "pkg/foo.go" in move.evidence and "built by cpp (cmake, Release, into cpp/cmake-build-release)" in move.evidence

    again = golang.ECOSYSTEM.plan(tree, inst, ["pkg/foo_test.go"], ImageConfig(), move.request)
    setup_cmds = again.setup_commands
    build = next(i for i, c in enumerate(setup_cmds) if c.startswith("cmake -S "))
    listing = next(i for i, c in enumerate(setup_cmds) if "go list -deps -test" in c)
    compiling = next(i for i, c in enumerate(setup_cmds) if "-run '^$'" in c)
    apt = next(i for i, c in enumerate(setup_cmds) if "apt-get install" in c and " cmake " in c)
    check = next(i for i, c in enumerate(setup_cmds) if c.startswith("[ -e "))
    assert apt < build < check < listing < compiling
    assert "g++" in setup_cmds[apt] and "make" in setup_cmds[apt]
    assert setup_cmds[build].startswith(
        "cmake -S /testbed/cpp -B /testbed/cpp/cmake-build-release -DCMAKE_BUILD_TYPE=Release && "
        "{ cmake --build /testbed/cpp/cmake-build-release --target foo -j2 || "
        "cmake --build /testbed/cpp/cmake-build-release -j2; }")
    assert setup_cmds[check].startswith(f"[ -e /testbed/{LIB} ] || {{ echo ")
    assert f"{LIB}: not produced by the build of cpp" in setup_cmds[check]
    # the darwin directive is not this platform's: no build for it
    assert "cmake-build-darwin" not in "\n".join(setup_cmds)
    # each test run brings the library up to date first, offline; a failed rebuild removes it
    assert again.test_command.startswith("{ { cmake --build /testbed/cpp/cmake-build-release --target foo -j2")
    assert f"rm -rf -- /testbed/{LIB}" in again.test_command
    assert all(a.test_command.startswith("{ { cmake --build") for a in again.test_alternatives)
    assert any(n.startswith("S31: pkg/foo.go: #cgo LDFLAGS") for n in again.notes)
    # built once: the move is not offered for a plan that has it
    assert golang.ECOSYSTEM.next_moves(MoveContext(tree=tree, instance=inst, plan=again, touched=["pkg/foo_test.go"],
                                                   why="no test ran: x")) == []
    targeted = golang.ECOSYSTEM.targeted_plan(again, ["example.com/app/pkg::TestAdd"])
    assert targeted is not None and targeted.test_command.startswith("{ { cmake --build")


def test_the_move_s_analysis_is_made_once_per_mint_tree_and_touched_files(tmp_path, image_store):
    """`go_cgo.native_moves` reads the tree (directives, imports, build files) once per tree and
    touched files: asked again in a later round, it answers the same without reading; other
    touched files, or another mint's tree, are analysed anew."""
    from agents.gitrepo import GitTree

    tree, inst = repo_with(tmp_path, files())
    reads: list[str] = []

    class CountingTree(GitTree):
        def read(self, path, limit=2_000_000):
            reads.append(path)
            return super().read(path, limit)

    def moves(t, touched):
        return golang.ECOSYSTEM.next_moves(MoveContext(tree=t, instance=inst, plan=plan, touched=touched,
                                                       why="no test ran: example.com/app/pkg [build failed]"))

    counted = CountingTree(tree.git_dir, tree.commit)
    plan = golang.ECOSYSTEM.plan(counted, inst, ["pkg/foo_test.go"], ImageConfig())
    reads.clear()
    first = moves(counted, ["pkg/foo_test.go"])
    assert [m.key for m in first] == ["cgo_native"] and "pkg/foo.go" in reads
    n = len(reads)
    assert moves(counted, ["pkg/foo_test.go"]) == first and len(reads) == n
    assert moves(counted, ["pkg/foo_test.go", "pkg/foo.go"]) == first and len(reads) > n
    n = len(reads)
    assert moves(CountingTree(tree.git_dir, tree.commit), ["pkg/foo_test.go"]) == first and len(reads) > n


def test_every_repository_value_in_the_commands_is_quoted(tmp_path, image_store):
    folder = "c$(touch pwned);pp"
    cgo = CGO.replace("${SRCDIR}/../cpp/cmake-build-release/libfoo.a",
                      f'"${{SRCDIR}}/../{folder}/cmake-build-release/libfoo.a"')
    tree, inst = repo_with(tmp_path, files(**{"pkg/foo.go": cgo, "cpp/CMakeLists.txt": "", "cpp/foo.cpp": "",
                                          f"{folder}/CMakeLists.txt": CMAKE}))
    _, [move] = moves_of(tree, inst, ["pkg/foo_test.go"])
    plan = golang.ECOSYSTEM.plan(tree, inst, ["pkg/foo_test.go"], ImageConfig(), move.request)
    text = "\n".join(plan.setup_commands) + "\n" + plan.test_command
    src, out = shlex.quote(f"/testbed/{folder}"), shlex.quote(f"/testbed/{folder}/cmake-build-release")
    assert f"cmake -S {src} -B {out} -DCMAKE_BUILD_TYPE=Release" in text
    assert f"[ -e {shlex.quote(f'/testbed/{folder}/cmake-build-release/libfoo.a')} ]" in text
    assert f"cmake --build {out} --target foo" in text
    # run as a shell runs them, the folder's `$(touch pwned)` and `;` stay part of a word
    root = tmp_path / "run"
    root.mkdir()
    rebuild = plan.state["library_rebuild"]
    for c in [next(c for c in plan.setup_commands if c.startswith("[ -e ")), rebuild]:
        assert subprocess.run(["bash", "-n", "-c", c]).returncode == 0
        r = subprocess.run(["bash", "-c", c.replace("/testbed", str(root))], cwd=root, capture_output=True, text=True,
                           env={"PATH": "/usr/bin:/bin"})
        assert f"{folder}/cmake-build-release" in r.stdout
    assert not any(root.rglob("pwned")) and not (Path.cwd() / "pwned").exists()


def test_a_cgo_package_of_system_libraries_asks_for_no_build(tmp_path, image_store):
    system = CGO.replace("${SRCDIR}/../cpp/cmake-build-release/libfoo.a -lstdc++", "-lm").replace(
        "#cgo darwin LDFLAGS: ${SRCDIR}/../cpp/cmake-build-darwin/libfoo.a\n", "")
    tree, inst = repo_with(tmp_path, files(**{"pkg/foo.go": system}))
    plan, moves = moves_of(tree, inst, ["pkg/foo_test.go"])
    assert moves == []
    asked = golang.ECOSYSTEM.plan(tree, inst, ["pkg/foo_test.go"], ImageConfig(), PlanRequest(options={"cgo_native": True}))
    assert not any("cmake" in c for c in asked.setup_commands) and not asked.test_command.startswith("{")
    assert any(n.startswith("S31 asked: no cgo directive") for n in asked.notes)


def test_a_touched_package_importing_the_cgo_package_gets_the_move(tmp_path, image_store):
    user = 'package app\n\nimport "example.com/app/pkg"\n\nfunc Sum(a, b int) int { return pkg.Add(a, b) }\n'
    tree, inst = repo_with(tmp_path, files(**{"app/app.go": user, "app/app_test.go": OLD_TEST.replace("package pkg", "package app")
                                           .replace("Add(0, 0)", "Sum(0, 0)")}), test_file="app/app_test.go")
    _, [move] = moves_of(tree, inst, ["app/app_test.go"])
    assert f"-> {LIB}" in move.evidence and "pkg/foo.go" in move.evidence


def test_a_path_no_build_of_the_repository_produces_gets_no_move(tmp_path, image_store):
    tree, inst = repo_with(tmp_path, files(**{"cpp/CMakeLists.txt": ""}))
    _, moves = moves_of(tree, inst, ["pkg/foo_test.go"])
    assert moves == []


def test_a_makefile_that_names_the_library_builds_it(tmp_path, image_store):
    cgo = CGO.replace("cmake-build-release/", "")
    mk = "libfoo.a: foo.o\n\tar rcs $@ $^\n"
    tree, inst = repo_with(tmp_path, files(**{"pkg/foo.go": cgo, "cpp/CMakeLists.txt": "", "cpp/Makefile": mk}))
    _, [move] = moves_of(tree, inst, ["pkg/foo_test.go"])
    assert "built by cpp (make libfoo.a)" in move.evidence
    plan = golang.ECOSYSTEM.plan(tree, inst, ["pkg/foo_test.go"], ImageConfig(), move.request)
    assert any(c.startswith("{ make -C /testbed/cpp -j2 libfoo.a || make -C /testbed/cpp -j2; }")
               for c in plan.setup_commands)
    # a Makefile that does not name it is not its build
    tree2, inst2 = repo_with(tmp_path / "other", files(**{"pkg/foo.go": cgo, "cpp/CMakeLists.txt": "",
                                                      "cpp/Makefile": "all:\n\techo hi\n"}))
    assert moves_of(tree2, inst2, ["pkg/foo_test.go"])[1] == []


@pytest.mark.parametrize("path, kind, folder, build_type", [
    ("cpp/cmake-build-release/libfoo.a", "library", "cpp/cmake-build-release", "Release"),
    ("cpp/cmake-build-debug/libfoo.a", "library", "cpp/cmake-build-debug", "Debug"),
    ("cpp/build/Release/libfoo.a", "library", "cpp/build/Release", "Release"),
    ("cpp/build-relwithdebinfo/lib/libfoo.a", "library", "cpp/build-relwithdebinfo", "RelWithDebInfo"),
    ("cpp/build", "libdir", "cpp/build", None),
    ("cpp/libfoo.a", "library", "cpp", None),                # the project builds in its own folder
    ("cpp/lib/libfoo.a", "library", "cpp", None),
])
def test_build_folder_and_type_from_the_path(path, kind, folder, build_type):
    need = CgoNeed(package="pkg", file="pkg/foo.go", flag="LDFLAGS", word=path, path=path, kind=kind)
    assert _build_folder("cpp", need) == (folder, build_type)


def test_directives_and_imports_are_read_as_go_reads_them():
    text = ('package x\n\n// #cgo linux,amd64 LDFLAGS: -L${SRCDIR}/lib "-lfoo"\n// #cgo windows LDFLAGS: -lbar\n'
            '// #cgo !darwin CFLAGS: -I ${SRCDIR}/inc\nimport "C"\n\nimport (\n\tf "fmt"\n\t_ "example.com/a/b"\n)\n')
    assert cgo_directives(text) == [("LDFLAGS", ["-L${SRCDIR}/lib", "-lfoo"]), ("CFLAGS", ["-I", "${SRCDIR}/inc"])]
    assert go_imports(text) == ["C", "fmt", "example.com/a/b"]


def test_go_names_the_tests_the_test_patch_adds(tmp_path):
    """A round whose runs never reached TestAdd stalls (`agents.moves.never_ran`): the move is
    asked for also when another touched package's tests ran."""
    _, inst = repo_with(tmp_path, files())
    assert golang.ECOSYSTEM.added_tests(inst.test_patch) == ["TestAdd"]


def test_the_librarys_configure_gets_the_debian_package_it_reports_missing(tmp_path, image_store):
    tree, inst = repo_with(tmp_path, files())
    plan = golang.ECOSYSTEM.plan(tree, inst, ["pkg/foo_test.go"], ImageConfig(), PlanRequest(options={"cgo_native": True}))
    step = next(c for c in plan.setup_commands if c.startswith("cmake -S "))
    out = "CMake Error at CMakeLists.txt:3 (find_package):\n  Could NOT find ZLIB (missing: ZLIB_LIBRARY)\n"
    [fix] = golang.ECOSYSTEM.repair(plan, step, out, set())
    assert "apt-get install" in fix and "zlib1g-dev" in fix
    assert golang.ECOSYSTEM.repair(plan, plan.setup_commands[0], out, set()) is None  # a Go step: not this repair


# -- the loop with the fake sandbox: the move is a round with its evidence -------------------------

def _events(results: dict[str, str] | None) -> str:
    pkg = "example.com/app/pkg"
    if results is None:
        lines = [{"Action": "output", "Package": pkg, "Output": f"/usr/bin/ld: cannot find /testbed/{LIB}\n"},
                 {"Action": "output", "Package": pkg, "Output": f"FAIL\t{pkg} [build failed]\n"},
                 {"Action": "fail", "Package": pkg}]
    else:
        lines = [x for t, a in results.items() for x in ({"Action": "run", "Package": pkg, "Test": t},
                                                          {"Action": a, "Package": pkg, "Test": t, "Elapsed": 0.01})]
        lines.append({"Action": "fail" if "fail" in results.values() else "pass", "Package": pkg})
    return "\n".join(json.dumps(x) for x in lines) + "\n"


def _factory(produces: bool) -> FakeSandboxFactory:
    f = FakeSandboxFactory(run_id="t")

    def cmake(cmd, sb):
        if produces:
            sb.put_file(f"/testbed/{LIB}", b"!<arch>\n")
        return 0, "-- Build files have been written"

    def check(cmd, sb):
        if f"/testbed/{LIB}" in sb.files:
            return 0, ""
        return 1, f"swemint: {LIB}: not produced by the build of cpp (cmake, Release, into cpp/cmake-build-release)\n"

    def fix(cmd, sb):  # the fix applied; the tests run in a snapshot of this sandbox (compile once)
        sb.put_file("/tmp/fixed", b"1")
        return 0, ""

    def go_test(cmd, sb):
        patched = "/tmp/fixed" in sb.files
        if f"/testbed/{LIB}" not in sb.files:
            out = _events(None)
        else:
            out = _events({"TestZero": "pass", "TestAdd": "pass" if patched else "fail"})
        sb.put_file(golang.REPORT_PATH, out)
        return 0, ""

    f.on(r"^cmake -S ", cmake)
    f.on(r"^\[ -e ", check)
    f.on(r"go test -json", go_test)
    f.on(r"after_patch", fix)
    return f


def _mint(tmp_path, monkeypatch, produces: bool):
    force_ecosystem(monkeypatch, golang.ECOSYSTEM)
    git_dir, sha = make_repo(tmp_path, files())
    test_patch, patch = make_patches(git_dir, {"pkg/foo_test.go": NEW_TEST}, {"cpp/foo.cpp": CPP_FIX})
    inst = make_instance(sha, "Go", instance_id="acme__app-1", repo="acme/app", test_patch=test_patch, patch=patch)
    f = _factory(produces)
    res = mint_instance(inst, git_dir, MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False}),
                        factory=f)
    return res, f


def test_the_loop_records_the_move_and_verifies_with_the_library_built(tmp_path, monkeypatch):
    res, f = _mint(tmp_path, monkeypatch, produces=True)
    assert res.outcome == "verified", res.reason
    assert res.FAIL_TO_PASS == ["example.com/app/pkg::TestAdd"] and res.PASS_TO_PASS == ["example.com/app/pkg::TestZero"]
    assert res.rounds[0].outcome == "tests_not_run"
    moved = [r for r in res.rounds if r.move]
    assert [r.move for r in moved] == ["owner_build"] and moved[0] is res.rounds[-1]
    assert f"-> {LIB} (missing at the base commit)" in moved[0].evidence
    assert "built by cpp (cmake, Release" in moved[0].evidence
    assert any(r.feedback == "replan: move owner_build" for r in res.rounds)
    from agents.models import StepRecord

    steps = [StepRecord.model_validate_json(x) for x in Path(res.trajectory_path).read_text().splitlines()]
    assert [(s.rule, s.exit_code) for s in steps if s.agent == "flow" and s.rule.startswith("move:")] == \
        [("move:owner_build", 0)]
    assert any(s.rule == "move" and LIB in s.note for s in steps if s.agent == "flow")
    # the build that verified ran the library's build before the Go packages were listed
    builder = next(sb for sb in reversed(f.sandboxes) if any(c.startswith("cmake -S ") for c in sb.commands))
    order = builder.commands
    assert next(i for i, c in enumerate(order) if c.startswith("cmake -S ")) < \
        next(i for i, c in enumerate(order) if "go list -deps -test" in c)
    cmd = res.test_command  # the row's: the library brought up to date before `go test`
    assert -1 < cmd.find("{ { cmake --build /testbed/cpp/cmake-build-release") < cmd.find("go test -json")


def test_a_build_that_does_not_produce_the_library_ends_the_row_naming_it(tmp_path, monkeypatch):
    res, _ = _mint(tmp_path, monkeypatch, produces=False)
    assert res.outcome == "tests_not_run"
    assert res.rounds[-1].move == "owner_build" and res.rounds[-1].outcome == "replan"
    assert f"{LIB}: not produced by the build of cpp (cmake, Release" in res.reason, res.reason


# -- the plan's own steps with the host's go, cmake and g++ ---------------------------------------

HOST = all(shutil.which(t) for t in ("go", "cmake", "g++", "make"))


def planned(tmp_path: Path, tree_files: dict[str, str], work: dict[str, str] | None = None):
    """(the plan the move asks for on `tree_files`, a plain folder holding `work` -- default the
    same files -- where its steps run with /testbed replaced)."""
    tree, inst = repo_with(tmp_path / "t", tree_files)
    _, [move] = moves_of(tree, inst, ["pkg/foo_test.go"])
    plan = golang.ECOSYSTEM.plan(tree, inst, ["pkg/foo_test.go"], ImageConfig(), move.request)
    write_files(tmp_path / "repo", work or tree_files)
    return plan, tmp_path / "repo"


@pytest.mark.skipif(not HOST, reason="needs go, cmake, g++ and make on this host")
def test_the_plans_steps_build_the_library_and_go_test_links_it(tmp_path, image_store):
    plan, repo = planned(tmp_path, files(), files(**{"cpp/foo.cpp": CPP_FIX}))
    env = {"PATH": "/usr/local/go/bin:/usr/bin:/bin:/usr/local/bin", "HOME": str(tmp_path), "GOFLAGS": "-mod=mod",
           "GOPATH": str(tmp_path / "gopath"), "GOCACHE": str(tmp_path / "gocache"), "GOTOOLCHAIN": "local",
           "CGO_ENABLED": "1"}

    def go_test() -> subprocess.CompletedProcess:
        return subprocess.run(["go", "test", "-count=1", "./pkg"], cwd=repo, env=env, capture_output=True, text=True,
                              timeout=600)

    before = go_test()
    assert before.returncode != 0 and "libfoo.a" in before.stdout + before.stderr  # the class: it does not link
    ours = [c for c in plan.setup_commands if c.startswith(("cmake -S ", "[ -e "))]
    assert len(ours) == 2
    for c in ours:
        r = subprocess.run(["bash", "-c", c.replace("/testbed", str(repo))], env=env, capture_output=True, text=True,
                           timeout=600)
        assert r.returncode == 0, r.stdout + r.stderr
    assert (repo / LIB).is_file()
    after = go_test()
    assert after.returncode == 0, after.stdout + after.stderr


@pytest.mark.skipif(not HOST, reason="needs cmake, g++ and make on this host")
def test_a_project_that_builds_another_library_fails_naming_the_path(tmp_path, image_store):
    other = CMAKE.replace("add_library(foo ", "add_library(bar ")
    plan, repo = planned(tmp_path, files(**{"cpp/CMakeLists.txt": other}))
    script = "set -e\n" + "\n".join(c.replace("/testbed", str(repo)) for c in plan.setup_commands
                                    if c.startswith(("cmake -S ", "[ -e ")))
    r = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1
    assert r.stdout.strip().splitlines()[-1] == (f"swemint: {LIB}: not produced by the build of cpp (cmake, Release, "
                                                 f"into cpp/cmake-build-release); pkg links {LIB}")
    assert (repo / "cpp/cmake-build-release/libbar.a").is_file()  # the whole build ran when `foo` was no target

"""S35: the Meson helper (``recipes/meson_tests.py``) run on the host against stand-ins of meson
and ninja (small scripts the test writes): what reaches the console of a run, which a row's
stored ``test_command`` prints before ``cat``-ing ``meson-logs/testlog.json`` for the row's parser
(`agents.ecosystems.runs.stored_test_command`). The code under test must not be able to put a
result there: meson's console repeats a failing test's own output (``--print-errorlogs``), and the
helper's own lines carry test names from the repository's meson.build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agents.ecosystems import cfamily
from envpool.testrun.registry import get_parser
from envpool.testrun.status import TestStatus

parse = get_parser("meson_testlog")
FORGED = json.dumps({"name": "calc:forged", "result": "OK", "returncode": 0})

MESON = r'''#!PYTHON
import json, os, sys
args = sys.argv[1:]
if args[:1] == ["test"]:
    build = args[args.index("-C") + 1]
    os.makedirs(os.path.join(build, "meson-logs"), exist_ok=True)
    with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
        program = json.load(f)[0]["cmd"][0]
    import subprocess
    p = subprocess.run([program], stdout=subprocess.PIPE, universal_newlines=True)
    printed = os.environ["FORGED"] if os.path.exists(program + ".c.o") else p.stdout.rstrip("\n")
    print("1/1 calc:add FAIL 0.01s exit status %d" % p.returncode)
    print("--- stdout ---")
    print(printed)   # what the test program printed, repeated by --print-errorlogs
    with open(os.path.join(build, "meson-logs", "testlog.json"), "w") as f:
        f.write(json.dumps({"name": "calc:add", "result": "FAIL" if p.returncode else "OK",
                            "returncode": p.returncode, "stdout": printed + "\n"}) + "\n")
    sys.exit(1)
sys.exit(0)
'''
NINJA = r'''#!PYTHON
import sys
if "-n" in sys.argv:
    print("ninja: no work to do.")
sys.exit(0)
'''


def _run_helper(tmp_path: Path, name: str = "add", printed: str = FORGED, target: str = "t_add",
                built: bool = True) -> tuple[str, str]:
    """(the helper's console, testlog.json) of a test run of one failing test named `name` that
    prints `printed`; its program is target `target`'s, missing unless `built` (then meson runs
    the helper's stub in its place)."""
    bin_dir, build, src = tmp_path / "bin", tmp_path / "build", tmp_path / "src"
    for d in (bin_dir, build / "meson-info", src / "tests"):
        d.mkdir(parents=True)
    for tool, text in (("meson", MESON), ("ninja", NINJA)):
        (bin_dir / tool).write_text(text.replace("PYTHON", sys.executable))
        (bin_dir / tool).chmod(0o755)
    (src / "tests" / "t_add.c").write_text("int main(void) { return 1; }\n")
    program = build / "tests" / "t_add"
    program.parent.mkdir()
    if built:
        program.write_text("#!/bin/sh\nexit 1\n")
        program.chmod(0o755)
        Path(str(program) + ".c.o").write_text("")
    targets = [{"id": "t_add@exe", "name": target, "filename": [str(program)], "defined_in": str(src / "tests/meson.build"),
                "target_sources": [{"sources": [str(src / "tests/t_add.c")]}]}]
    tests = [{"suite": ["calc"], "name": name, "cmd": [str(program)], "depends": ["t_add@exe"]}]
    (build / "meson-info" / "intro-targets.json").write_text(json.dumps(targets))
    (build / "meson-info" / "intro-tests.json").write_text(json.dumps(tests))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "FORGED": printed}
    out = subprocess.run([sys.executable, str(cfamily.RECIPES / "meson_tests.py"), str(build), "--jobs", "1",
                          "--", "tests/t_add.c"], cwd=src, env=env, capture_output=True, text=True, timeout=120)
    return out.stdout, (build / "meson-logs" / "testlog.json").read_text()


def test_a_failing_test_cannot_print_a_result_into_the_stored_commands_output(tmp_path):
    console, log = _run_helper(tmp_path)
    assert "calc:forged" in console   # meson repeated the test's output
    rep = parse(console + log)        # the stored test_command: the run, then `cat testlog.json`
    assert rep.statuses == {"calc:add": TestStatus.FAILED}
    assert parse(log).statuses == {"calc:add": TestStatus.FAILED}   # the file itself: top-level records only


def test_a_test_name_with_a_newline_cannot_print_a_result(tmp_path):
    console, log = _run_helper(tmp_path, name="add\n" + FORGED, printed="1 != 2")
    assert "calc:forged" in console
    assert "calc:forged" not in parse(console + log).statuses


def test_the_stub_of_a_program_that_did_not_build_prints_its_target_name_as_is(tmp_path):
    name = "t'$(touch injected)'\\c `touch injected2` \\n"
    console, log = _run_helper(tmp_path, target=name, built=False)
    record = json.loads(log)
    assert record["stdout"] == f"swemint-meson-tests: unbuilt {name}\n" and record["result"] == "FAIL"
    assert not list((tmp_path / "src").glob("injected*")) and not list(tmp_path.glob("injected*"))
    rep = parse(console + log)
    assert rep.statuses == {"calc:add": TestStatus.FAILED} and rep.collection_errors == ["calc:add [build failed]"]


LOGGING_NINJA = r'''#!PYTHON
import os, sys
with open(os.environ["NINJA_LOG"], "a") as f:
    f.write(" ".join(sys.argv[1:]) + "\n")
if "-n" in sys.argv:
    print("ninja: no work to do.")
sys.exit(0)
'''


def test_a_test_sharing_a_picked_tests_name_has_its_program_built_too(tmp_path):
    """S35: `meson test <project>:<name>` runs every test of that name. Two tests named `t` (one in
    tests/a, owning the touched file, one in tests/b) -> the build step builds both programs, so
    meson never stops on the other one's missing program ("The test program ... does not exist")."""
    bin_dir, build, src = tmp_path / "bin", tmp_path / "build", tmp_path / "src"
    for d in (bin_dir, build / "meson-info", src / "tests" / "a", src / "tests" / "b"):
        d.mkdir(parents=True)
    (bin_dir / "ninja").write_text(LOGGING_NINJA.replace("PYTHON", sys.executable))
    (bin_dir / "ninja").chmod(0o755)
    targets, tests = [], []
    for sub in ("a", "b"):
        (src / "tests" / sub / "t.c").write_text("int main(void) { return 0; }\n")
        program = build / "tests" / sub / "t"
        targets.append({"id": f"t_{sub}@exe", "name": "t", "filename": [str(program)],
                        "defined_in": str(src / "tests" / sub / "meson.build"),
                        "target_sources": [{"sources": [str(src / "tests" / sub / "t.c")]}]})
        tests.append({"suite": [f"calc:{sub}"], "name": "t", "cmd": [str(program)], "depends": [f"t_{sub}@exe"]})
    (build / "meson-info" / "intro-targets.json").write_text(json.dumps(targets))
    (build / "meson-info" / "intro-tests.json").write_text(json.dumps(tests))
    log = tmp_path / "ninja.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "NINJA_LOG": str(log)}
    out = subprocess.run([sys.executable, str(cfamily.RECIPES / "meson_tests.py"), str(build), "--jobs", "1",
                          "--build-only", "--", "tests/a/t.c"], cwd=src, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    builds = [line.split() for line in log.read_text().splitlines() if "-k" in line.split()]
    assert builds and "tests/a/t" in builds[0] and "tests/b/t" in builds[0], log.read_text()
    assert "sharing a picked test's name" in out.stdout


SELECTING_MESON = r'''#!PYTHON
import json, os, sys
args = sys.argv[1:]
build = args[args.index("-C") + 1]
with open(os.path.join(build, "meson-info", "intro-tests.json")) as f:
    tests = json.load(f)
names = [a for a in args[1:] if ":" in a]
chosen = [t for t in tests if "%s:%s" % (t["suite"][0].split(":")[0], t["name"]) in names]
for t in chosen:  # meson's own check before it runs anything
    if not os.path.exists(t["cmd"][0]):
        print("The test program %s does not exist" % t["cmd"][0])
        sys.exit(1)
os.makedirs(os.path.join(build, "meson-logs"), exist_ok=True)
with open(os.path.join(build, "meson-logs", "testlog.json"), "w") as f:
    for t in chosen:
        f.write(json.dumps({"name": "%s - calc:%s" % (t["suite"][0].split(":")[1], t["name"]),
                            "result": "OK", "returncode": 0, "stdout": ""}) + "\n")
'''
FAILING_B_NINJA = r'''#!PYTHON
import sys
if "-n" in sys.argv:
    print("ninja: no work to do." if not any(a.endswith("b/t") for a in sys.argv) else "[1/1] cc tests/b/t")
sys.exit(0 if "-n" in sys.argv else 1)
'''


def test_a_rerun_of_one_of_two_same_named_tests_still_stubs_the_other_ones_unbuilt_program(tmp_path):
    """S35: two tests named `t` (suites calc:a, calc:b), tests/b's program fails to build, a rerun
    ``--only ["a - calc:t"]``: meson selects by ``calc:t`` so it runs b too -- b's program must be
    the helper's failing stub, or meson stops before any test ("The test program ... does not
    exist") and a's result is lost."""
    bin_dir, build, src = tmp_path / "bin", tmp_path / "build", tmp_path / "src"
    for d in (bin_dir, build / "meson-info", src / "tests" / "a", src / "tests" / "b"):
        d.mkdir(parents=True)
    for tool, text in (("meson", SELECTING_MESON), ("ninja", FAILING_B_NINJA)):
        (bin_dir / tool).write_text(text.replace("PYTHON", sys.executable))
        (bin_dir / tool).chmod(0o755)
    targets, tests = [], []
    for sub in ("a", "b"):
        (src / "tests" / sub / "t.c").write_text("int main(void) { return 0; }\n")
        program = build / "tests" / sub / "t"
        program.parent.mkdir(parents=True)
        if sub == "a":
            program.write_text("#!/bin/sh\nexit 0\n")
            program.chmod(0o755)
        targets.append({"id": f"t_{sub}@exe", "name": "t", "filename": [str(program)],
                        "defined_in": str(src / "tests" / sub / "meson.build"),
                        "target_sources": [{"sources": [str(src / "tests" / sub / "t.c")]}]})
        tests.append({"suite": [f"calc:{sub}"], "name": "t", "cmd": [str(program)], "depends": [f"t_{sub}@exe"]})
    (build / "meson-info" / "intro-targets.json").write_text(json.dumps(targets))
    (build / "meson-info" / "intro-tests.json").write_text(json.dumps(tests))
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    out = subprocess.run([sys.executable, str(cfamily.RECIPES / "meson_tests.py"), str(build), "--jobs", "1",
                          "--only", json.dumps(["a - calc:t"]), "--", "tests/a/t.c"], cwd=src, env=env,
                         capture_output=True, text=True, timeout=120)
    assert "does not exist" not in out.stdout, out.stdout + out.stderr
    rep = parse(out.stdout + (build / "meson-logs" / "testlog.json").read_text())
    assert rep.statuses.get("a - calc:t") == TestStatus.PASSED, out.stdout
    assert not (build / "tests" / "b" / "t").exists()  # the stub is removed after the run

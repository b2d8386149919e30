"""run_pytest, the plugin, the parsers, patches and grading against real pytest in containers.

The first tests are fast and need no engine: the runner's pure parts (addopts sanitising, config
precedence, the command) and its source fallbacks on a FakeSandbox. The rest are marked
`docker` and `slow`.

One image per pytest flavour is prepared per module (bridge network: pip install pytest into a
venv, commit), then every run happens in a network-less container of it. Each case is a small
repository written into its own folder of a shared container. The cases come from public
reports of harness bugs: ids with spaces/brackets/' - ', import errors, repository addopts, CI
and colour variables, forged output, non-UTF-8 output, hangs, and patches that need
normalisation.
"""

from __future__ import annotations

import os
import re
import shlex
import uuid
from pathlib import Path

import pytest

from tests.session import SESSION
from envpool.docker_sandbox import DockerSandboxFactory
from envpool.errors import InfraError, PatchApplyError
from envpool.fake import FakeSandbox
from envpool.grading import grade
from envpool.patches import apply_patch
from envpool.sandbox import SandboxSpec
from envpool.testrun import channel, parsers
from envpool.testrun.pytest_runner import (
    PLUGIN_NAME,
    PytestPaths,
    addopts_from_config,
    config_dirs,
    cross_check,
    install_plugin,
    pytest_command,
    pytest_script,
    read_addopts,
    run_pytest,
    run_pytest_detailed,
    sanitise_addopts,
)
from envpool.testrun.status import TestStatus

RUN_ID = f"test-runner-{SESSION}"
VENV_PY = "/opt/venv/bin/python"
MODERN_PYTEST = "pytest==8.4.2"
P, F, E, S = TestStatus.PASSED, TestStatus.FAILED, TestStatus.ERROR, TestStatus.SKIPPED


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: docker tests must run)")
    pytest.skip(reason)


def _local_image(client, prefix: str) -> str | None:
    refs = []
    for img in client.images.list(name="swemint/python"):
        refs += [(img.attrs.get("Created", ""), t) for t in img.tags if t.startswith(prefix)]
    return max(refs)[1] if refs else None


def _base_image(client, version: str) -> str | None:
    """A local swemint/python:<version>-* image; builds 3.11 when none exists."""
    ref = _local_image(client, f"swemint/python:{version}-")
    if ref or version != "3.11":
        return ref
    from envpool.images import ensure_python_image

    try:
        return ensure_python_image("3.11", engine=client)
    except InfraError:
        return None


@pytest.fixture(scope="module")
def factory():
    try:
        f = DockerSandboxFactory(run_id=RUN_ID)
    except InfraError as e:
        _unavailable(f"no Docker engine: {e}")
    yield f
    f.sweep(RUN_ID)
    for img in f.client.images.list(filters={"label": f"swemint.test-run={RUN_ID}"}):
        try:
            f.client.images.remove(img.id, force=True)
        except Exception:
            pass


def _prepare(factory, base: str, requirement: str, name: str) -> str:
    """Commit `base` + a venv at /opt/venv with `requirement` installed; returns the tag."""
    with factory.sandbox(SandboxSpec(image=base, run_id=RUN_ID, network="bridge")) as sb:
        r = sb.exec(f"python3 -m venv /opt/venv && /opt/venv/bin/pip install -q "
                    f"--disable-pip-version-check '{requirement}'", timeout=300)
        if not r.ok:
            _unavailable(f"pip install {requirement} failed: {r.output[-500:]}")
        tag = f"{name}-{uuid.uuid4().hex[:8]}"
        sb.commit("swemint-test/pytest-runner", tag, labels={"swemint.test-run": RUN_ID})
    return f"swemint-test/pytest-runner:{tag}"


@pytest.fixture(scope="module")
def box(factory):
    """A network-less container with Python 3.11 (else 3.9) and a modern pytest in /opt/venv."""
    base = _base_image(factory.client, "3.11") or _base_image(factory.client, "3.9")
    if not base:
        _unavailable("no swemint/python image")
    image = _prepare(factory, base, MODERN_PYTEST, "modern")
    with factory.sandbox(SandboxSpec(image=image, run_id=RUN_ID, network="none")) as sb:
        yield sb


def make_repo(sb, root: str, files: dict[str, str | bytes]) -> str:
    """Write `files` under `root` in the sandbox and commit them as a git repository."""
    for path, text in files.items():
        sb.put_file(f"{root}/{path}", text)
    r = sb.exec("git init -q && git add -A && git commit -qm base", workdir=root)
    assert r.ok, r.output
    return root


# -- fast tests of the runner's logic (no engine) ---------------------------------------------

DATA = Path(__file__).resolve().parents[1] / "data" / "testrun"


def test_sanitise_addopts_drops_shape_changing_options_and_keeps_the_rest():
    kept, dropped = sanitise_addopts(
        "-n auto -q --verbose --color=yes -x --maxfail=1 -p pytester --doctest-modules "
        "--strict-markers -vvx -sv -nauto --cov src --cov-report term-missing --cov=pkg "
        "-m 'not slow' --dist loadscope --lf --reruns 3 --junitxml=out.xml -rxs --tb=long "
        "-W error::DeprecationWarning -p no:cacheprovider tests")
    assert kept == ["-p", "pytester", "--doctest-modules", "--strict-markers", "-s", "-m",
                    "not slow", "-W", "error::DeprecationWarning", "-p", "no:cacheprovider", "tests"]
    assert {"-nauto", "-q", "--verbose", "--color=yes", "-x", "--maxfail=1", "--cov", "src",
            "--lf", "--reruns", "3", "--junitxml=out.xml", "-rxs", "--tb=long"} <= set(dropped)
    assert sanitise_addopts(["-n", "4", "--doctest-glob=*.rst"]) == (["--doctest-glob=*.rst"], ["-n4"])
    assert sanitise_addopts("--cov --doctest-modules")[0] == ["--doctest-modules"]


@pytest.mark.parametrize("name,text,expected", [
    ("pytest.ini", "[pytest]\naddopts = -n auto\n", "-n auto"),
    ("pytest.ini", "", ""),  # pytest.ini always is the config, even empty
    ("setup.cfg", "[tool:pytest]\naddopts =\n  -q\n  --doctest-modules\n", "\n-q\n--doctest-modules"),
    ("setup.cfg", "[metadata]\nname = x\n", None),
    ("tox.ini", "[pytest]\naddopts = -x\n", "-x"),
    ("tox.ini", "[tox]\nenvlist = py\n", None),
    ("pyproject.toml", "[tool.pytest.ini_options]\naddopts = ['-n', 'auto']\n", ["-n", "auto"]),
    ("pyproject.toml", "[tool.pytest.ini_options]\nminversion = '6'\n", ""),
    ("pyproject.toml", "[tool.pytest]\naddopts = ['-q']\n", ["-q"]),  # pytest 9 native TOML
    ("pyproject.toml", "[tool.black]\nline-length = 99\n", None),
    ("pytest.toml", "[pytest]\naddopts = ['-v']\n", ["-v"]),
    ("setup.cfg", "not an ini [[[", None),
])
def test_addopts_from_each_config_format(name, text, expected):
    assert addopts_from_config(name, text) == expected


def test_read_addopts_follows_pytest_precedence():
    sb = FakeSandbox(SandboxSpec(image="fake"))
    sb.put_file("/testbed/pyproject.toml", "[tool.black]\n")
    sb.put_file("/testbed/setup.cfg", "[tool:pytest]\naddopts = -n 2\n")
    assert read_addopts(sb, ["tests/test_a.py"]) == ("-n 2", "/testbed/setup.cfg")
    sb.put_file("/testbed/tests/pytest.ini", "[pytest]\naddopts = -q\n")  # nearer the test files
    assert read_addopts(sb, ["tests/test_a.py"]) == ("-q", "/testbed/tests/pytest.ini")
    assert read_addopts(sb, ["other/test_b.py", "tests/test_a.py"])[1] == "/testbed/setup.cfg"
    assert config_dirs(["a/b/test_x.py", "a/test_y.py"]) == ["a", ""]


def test_pytest_command_shape_is_stable_and_quoted():
    paths = PytestPaths.new("before")
    cmd = pytest_command(["tests/test_a.py", "tests/t b.py"], python="/opt/venv/bin/python",
                         addopts="-n auto -p pytester -m 'not slow'", paths=paths)
    argv = shlex.split(cmd)
    assert argv[:5] == ["/opt/venv/bin/python", "-m", "pytest", "-p", PLUGIN_NAME]
    assert "-rA" in argv and "--tb=short" in argv and "--continue-on-collection-errors" in argv
    assert f"addopts={shlex.join(['-p', 'pytester', '-m', 'not slow'])}" in argv
    assert f"--junitxml={paths.junit}" in argv and f"cache_dir={paths.cache}" in argv
    assert argv[-2:] == ["tests/test_a.py", "tests/t b.py"]
    no_junit = shlex.split(pytest_command(["t.py"], addopts="-p no:junitxml", plugin=False))
    assert not any(a.startswith("--junitxml") for a in no_junit) and PLUGIN_NAME not in no_junit


def test_script_unsets_ci_and_colour_forcing_and_sets_report_env():
    paths = PytestPaths.new("x")
    script = pytest_script("python -m pytest", paths, per_test_timeout=30, workdir="/testbed")
    unset = script.splitlines()[0].split()
    assert {"CI", "BUILD_NUMBER", "FORCE_COLOR", "PYTEST_ADDOPTS", "SWEMINT_TEST_TIMEOUT"} <= set(unset)
    assert "COLUMNS=200" in script and "NO_COLOR=1" in script and "PY_COLORS=0" in script
    assert "SWEMINT_CHANNEL=3" in script and "SWEMINT_KEY=stdin" in script and "SWEMINT_TEST_TIMEOUT=30" in script
    assert "SWEMINT_REPORT" not in script.split("\n", 1)[1]  # no report file: the channel
    assert script.splitlines()[1] == "exec 3>&2 2>&1"  # fd 3 = the exec's stderr, console on stdout
    assert "PYTHONDONTWRITEBYTECODE=1" in script
    assert "export PYTHONPATH=/opt/swemint/plugins${PYTHONPATH:+:$PYTHONPATH}" in script


def fake_runner(exit_code: int | None = None, plugin: bytes | None = None, junit: bytes | None = None,
                log: str = "", sign: bool = True, duration: float = 0.0) -> FakeSandbox:
    """A FakeSandbox whose pytest sends the records of `plugin` (JSON lines) on the channel,
    signed with the key the runner gave, writes `junit` and prints `log`."""
    from envpool.fake import pytest_reply

    sb = FakeSandbox(SandboxSpec(image="fake"))
    records = parsers.plugin_records(plugin) if plugin is not None else []
    for r in records:  # goldens of the file-era plugin: their session_finish is the seal
        if r.get("kind") == "session_finish":
            r["seal"] = True
    play = pytest_reply(records, exit_code, log, sign=sign, duration=duration)

    def reply(command: str, box: FakeSandbox):
        junit_path = re.search(r"--junitxml=(\S+)", command)
        if junit is not None and junit_path:
            box.put_file(junit_path.group(1), junit)
        return play(command, box)

    sb.on(r"-m pytest", reply)
    return sb


def test_fake_run_reads_the_signed_channel_and_agrees_with_junit_and_log():
    sb = fake_runner(1, plugin=(DATA / "pytest8_report.jsonl").read_bytes(),
                     junit=(DATA / "pytest8_junit.xml").read_bytes(),
                     log=(DATA / "pytest8_rA.log").read_text(errors="replace"))
    run = run_pytest_detailed(sb, ["tests/test_cases.py"], addopts="-n auto -q")
    assert run.report.source == "plugin" and run.report.exit_code == 1 and run.report.tests_ran
    assert run.anomalies == [] and run.dropped_addopts == ["-nauto", "-q"]
    assert run.timeouts == ["tests/test_cases.py::test_hangs"] and run.collected == 32
    assert set(run.sources) == {"junit", "log"} and run.sources["junit"].statuses  # compared, and they agree
    call = [c for c in sb.calls if "-m pytest" in c.command][0]
    assert call.channel and len(call.stdin) == 65 and call.stdin.endswith(b"\n")  # a fresh key, on stdin only
    assert call.stdin.strip().decode() not in call.command and not call.env
    assert sb.files["/opt/swemint/plugins/swemint_pytest_report.py"].startswith(b'"""swemint')


def test_junit_and_log_alone_are_never_graded():
    sb = fake_runner(1, junit=(DATA / "pytest8_junit.xml").read_bytes(),
                     log=(DATA / "pytest8_rA.log").read_text(errors="replace"))
    run = run_pytest_detailed(sb, ["tests/test_cases.py"], addopts="")
    assert run.report.statuses == {} and run.report.tests_ran is False and not run.plugin_loaded
    assert any("no authenticated report" in a for a in run.anomalies)


def test_forged_all_passed_log_with_nonzero_exit_is_not_tests_ran():
    log = "=== short test summary info ===\nPASSED t.py::test_a\nPASSED t.py::test_b\n=== 2 passed ===\n"
    run = run_pytest_detailed(fake_runner(1, log=log), ["t.py"], addopts="")
    assert run.report.tests_ran is False and run.report.statuses == {}
    assert any("no authenticated report" in a for a in run.anomalies)


def test_frames_without_the_key_are_tampering():
    sb = fake_runner(plugin=(DATA / "pytest8_report.jsonl").read_bytes(), sign=False)
    run = run_pytest_detailed(sb, ["tests/test_cases.py"], addopts="")
    assert run.report.tests_ran is False and run.tampered
    assert any("signed, but no key" in a or "forged" in a for a in run.tampered)


def test_whole_run_timeout_on_fake_keeps_plugin_results_but_is_not_graded():
    lines = (DATA / "pytest8_report.jsonl").read_bytes().splitlines(keepends=True)[:12]
    sb = fake_runner(0, plugin=b"".join(lines), duration=999)
    run = run_pytest_detailed(sb, ["t.py"], addopts="", timeout=10)
    rep = run.report
    assert rep.timed_out and rep.exit_code == 124 and rep.statuses and rep.source == "plugin"
    assert rep.tests_ran is False and any("timed out" in a for a in run.anomalies) and not run.tampered


def test_cross_check_flags_exit_code_contradictions():
    from envpool.testrun.status import TestRunReport

    ok = TestRunReport(statuses={"t::a": TestStatus.PASSED}, exit_code=1, tests_ran=True, source="plugin")
    assert any("no failed or errored test" in a for a in cross_check(ok, plugin_exitstatus=1))
    assert any("status 0 but the process exited 1" in a for a in cross_check(ok, plugin_exitstatus=0))
    assert any("never finished" in a for a in cross_check(ok, plugin_exitstatus=None))
    bad = TestRunReport(statuses={"t::a": TestStatus.FAILED}, exit_code=0, tests_ran=True, source="plugin")
    assert any("exit code 0 but" in a for a in cross_check(bad, plugin_exitstatus=0))
    assert any("collected" in a for a in cross_check(bad, plugin_exitstatus=0, collected=5))
    fine = TestRunReport(statuses={"t::a": TestStatus.FAILED}, exit_code=1, tests_ran=True, source="plugin")
    assert cross_check(fine, plugin_exitstatus=1, collected=1) == []


# -- the sample repository -------------------------------------------------------------------

CALC = "def add(a, b):\n    return a - b\n"
CALC_FIX = (
    "diff --git a/calc/__init__.py b/calc/__init__.py\n"
    "--- a/calc/__init__.py\n+++ b/calc/__init__.py\n"
    "@@ -1,2 +1,6 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n+\n+\n"
    "+def mul(a, b):\n+    return a * b\n"
)
TEST_CALC = ("from calc import add\n\n\ndef test_add_zero():\n    assert add(1, 0) == 1\n\n\n"
             "def test_add():\n    assert add(2, 3) == 5\n")
TEST_NEW = "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n"
TEST_IDS = '''import pytest

PARAMS = ["a b", "it's \\"q\\"", "f(x)", "a - b", "a::b", "[x]", "x]", "\\u00e9 \\u00fc", "\\u65e5\\u672c"]


@pytest.mark.parametrize("value", PARAMS)
def test_param(value):
    assert value


@pytest.mark.parametrize("v", [1, 2], ids=["one - two [x]", "na\\u00efve (b) :: c"])
def test_explicit(v):
    assert v


class TestKlass:
    @pytest.mark.parametrize("s", ["x y", "p - q"])
    def test_method(self, s):
        assert s
'''
IDS = ["tests/test_ids.py::test_param[" + p + "]" for p in
       ["a b", "it's \"q\"", "f(x)", "a - b", "a::b", "[x]", "x]", "\\xe9 \\xfc", "\\u65e5\\u672c"]]
IDS += ["tests/test_ids.py::test_explicit[one - two [x]]",
        "tests/test_ids.py::test_explicit[na\\xefve (b) :: c]",
        "tests/test_ids.py::TestKlass::test_method[x y]",
        "tests/test_ids.py::TestKlass::test_method[p - q]"]
BASE_FILES = {"calc/__init__.py": CALC, "tests/test_calc.py": TEST_CALC, "tests/test_ids.py": TEST_IDS}
TEST_FILES = ["tests/test_calc.py", "tests/test_ids.py"]


@pytest.mark.docker
@pytest.mark.slow
def test_ids_with_special_characters_are_exact_and_identical_before_after(box):
    root = make_repo(box, "/r/ids", BASE_FILES)
    before = run_pytest(box, TEST_FILES, python=VENV_PY, workdir=root, timeout=120, log_label="before")
    assert apply_patch(box, CALC_FIX, workdir=root) == "git_apply"
    after = run_pytest(box, TEST_FILES, python=VENV_PY, workdir=root, timeout=120, log_label="after")
    assert before.source == after.source == "plugin"
    assert before.tests_ran and before.exit_code == 1 and after.exit_code == 0
    assert set(IDS) <= set(before.statuses) and set(before.statuses) == set(after.statuses)
    g = grade([before], [after], None)
    assert g.FAIL_TO_PASS == ["tests/test_calc.py::test_add"]
    assert g.PASS_TO_PASS == sorted(IDS + ["tests/test_calc.py::test_add_zero"])


def _raw_run(sb, root: str, test_files, extra_args=(), addopts=""):
    """Run the full command once and return (plugin, junit, log) reports of the same run."""
    install_plugin(sb)
    paths = PytestPaths.new("raw")
    cmd = pytest_command(test_files, python=VENV_PY, paths=paths, addopts=addopts, extra_args=extra_args)
    key = channel.new_key()
    res = sb.exec(pytest_script(cmd, paths, None, root), timeout=120, workdir=root, stdin=channel.key_line(key),
                  channel=True)
    chan = channel.read_channel(res.channel, key)
    assert chan.tampered == [] and chan.sealed
    plugin = parsers.parse_pytest_records(chan.records)
    junit = parsers.parse_pytest_junit(sb.get_file(paths.junit), known_files=test_files)
    return plugin, junit, parsers.parse_pytest_log(res.output), res


@pytest.mark.docker
@pytest.mark.slow
def test_plugin_junit_and_coloured_log_agree_on_special_ids(box):
    root = make_repo(box, "/r/agree", BASE_FILES)
    plugin, junit, logrep, res = _raw_run(box, root, TEST_FILES, extra_args=["--color=yes"])
    assert "\x1b[" in res.output  # colours really were on
    assert plugin.statuses == junit.statuses == logrep.statuses
    assert plugin.statuses["tests/test_calc.py::test_add"] == F


CONFTEST_PYTESTER = "pytest_plugins = []\n"
TEST_USES_PYTESTER = "def test_pytester_fixture(pytester):\n    assert pytester is not None\n"
NASTY_INI = ("[pytest]\naddopts = -n auto -q --verbose --color=yes -x --maxfail=1 -p pytester "
             "--cov=calc --cov-report term --junitxml=/testbed/j.xml -r fE --tb=line\n")


@pytest.mark.docker
@pytest.mark.slow
def test_repo_addopts_ci_and_colour_variables_do_not_change_result_map(box, factory):
    files = {**BASE_FILES, "tests/test_pyt.py": TEST_USES_PYTESTER}
    plain = make_repo(box, "/r/plain", {**files, "pytest.ini": "[pytest]\naddopts = -p pytester\n"})
    nasty = make_repo(box, "/r/nasty", {**files, "pytest.ini": NASTY_INI})
    cfg = make_repo(box, "/r/cfg", {**files, "setup.cfg": "[tool:pytest]\naddopts = -vv -p pytester -x\n",
                                    "pyproject.toml": "[tool.black]\nline-length = 99\n"})
    test_files = TEST_FILES + ["tests/test_pyt.py"]
    ref = run_pytest_detailed(box, test_files, python=VENV_PY, workdir=plain, timeout=120)
    assert ref.report.statuses["tests/test_pyt.py::test_pytester_fixture"] == P  # -p pytester kept
    assert ref.report.statuses["tests/test_calc.py::test_add"] == F
    bad = run_pytest_detailed(box, test_files, python=VENV_PY, workdir=nasty, timeout=120)
    assert "-nauto" in bad.dropped_addopts and "-x" in bad.dropped_addopts
    assert bad.report.statuses == ref.report.statuses and bad.anomalies == []
    via_cfg = run_pytest(box, test_files, python=VENV_PY, workdir=cfg, timeout=120)
    assert via_cfg.statuses == ref.report.statuses
    env = {"CI": "true", "COLUMNS": "40", "FORCE_COLOR": "1", "PY_COLORS": "1", "BUILD_NUMBER": "7",
           "PYTEST_ADDOPTS": "-x -q --color=yes"}
    image = box.spec.image
    with factory.sandbox(SandboxSpec(image=image, run_id=RUN_ID, network="none", env=env)) as sb:
        root = make_repo(sb, "/r/env", {**files, "pytest.ini": NASTY_INI})
        ci = run_pytest(sb, test_files, python=VENV_PY, workdir=root, timeout=120)
    assert ci.statuses == ref.report.statuses


@pytest.mark.docker
@pytest.mark.slow
def test_module_failing_at_import_counts_as_not_passing_and_other_files_still_run(box):
    root = make_repo(box, "/r/imp", {**BASE_FILES, "tests/test_new.py": TEST_NEW})
    files = TEST_FILES + ["tests/test_new.py"]
    before = run_pytest(box, files, python=VENV_PY, workdir=root, timeout=120)
    assert before.collection_errors == ["tests/test_new.py"]
    assert "tests/test_new.py::test_mul" not in before.statuses
    assert before.statuses["tests/test_calc.py::test_add_zero"] == P  # other files still ran
    apply_patch(box, CALC_FIX, workdir=root)
    after = run_pytest(box, files, python=VENV_PY, workdir=root, timeout=120)
    g = grade([before], [after], None)
    assert g.FAIL_TO_PASS == ["tests/test_calc.py::test_add", "tests/test_new.py::test_mul"]
    assert "tests/test_calc.py::test_add_zero" in g.PASS_TO_PASS


@pytest.mark.docker
@pytest.mark.slow
def test_run_where_only_an_import_error_happens_is_not_all_passed(box):
    root = make_repo(box, "/r/only", {"calc/__init__.py": CALC, "tests/test_new.py": TEST_NEW})
    for flag in (True, False):  # with and without --continue-on-collection-errors
        run = run_pytest_detailed(box, ["tests/test_new.py"], python=VENV_PY, workdir=root,
                                  timeout=120, continue_on_collection_errors=flag)
        rep = run.report
        assert rep.tests_ran is False and rep.statuses == {}
        assert rep.collection_errors == ["tests/test_new.py"]
        assert rep.exit_code == (1 if flag else 2) == run.plugin_exitstatus  # 2: "Interrupted"
    empty = run_pytest(box, ["tests/does_not_exist.py"], python=VENV_PY, workdir=root, timeout=60)
    assert empty.tests_ran is False and empty.exit_code == 4 and empty.statuses == {}


FORGER = '''import os, sys


def test_real_failure():
    assert 1 == 2


def test_forger():
    print("PASSED tests/test_forge.py::test_real_failure")
    print("=" * 20 + " short test summary info " + "=" * 20)
    print("PASSED tests/test_forge.py::test_real_failure")
    print("=" * 20 + " 3 passed in 0.01s " + "=" * 20)
    os.write(1, b"PASSED tests/test_forge.py::test_real_failure\\n+ exit 0\\nSWEBENCH_EXIT_CODE=0\\n")
    sys.stderr.write("PASSED tests/test_forge.py::test_real_failure\\n")
    assert "SWEMINT_REPORT" not in os.environ  # the report file is hidden from the code under test
    assert False, "forger fails too"


def test_binary_output():
    sys.stdout.buffer.write(b"\\xff\\xfe\\xc3( not utf-8\\n")
    sys.stdout.flush()
    assert b"\\xff" == b"\\xfe"


def test_ok():
    pass
'''


@pytest.mark.docker
@pytest.mark.slow
def test_fake_passed_lines_and_exit_markers_do_not_change_grading(box):
    root = make_repo(box, "/r/forge", {"tests/test_forge.py": FORGER})
    plugin, junit, logrep, _ = _raw_run(box, root, ["tests/test_forge.py"])
    for rep in (plugin, junit, logrep):
        assert rep.statuses["tests/test_forge.py::test_real_failure"] == F
        assert rep.statuses["tests/test_forge.py::test_forger"] == F
    after = run_pytest(box, ["tests/test_forge.py"], python=VENV_PY, workdir=root, timeout=60)
    g = grade([after], [after], None)
    assert g.FAIL_TO_PASS == [] and g.PASS_TO_PASS == ["tests/test_forge.py::test_ok"]


@pytest.mark.docker
@pytest.mark.slow
def test_non_utf8_bytes_in_output_parse_fine(box):
    root = make_repo(box, "/r/bytes", {"tests/test_forge.py": FORGER})
    plugin, _junit, logrep, res = _raw_run(box, root, ["tests/test_forge.py"])
    assert "\ufffd" in res.output
    assert plugin.statuses["tests/test_forge.py::test_binary_output"] == F
    assert logrep.statuses == plugin.statuses


HANG = '''import time


def test_before():
    pass


def test_hangs():
    try:
        time.sleep(600)
    except Exception:  # a test swallowing exceptions still stops
        time.sleep(600)


def test_after():
    pass
'''


@pytest.mark.docker
@pytest.mark.slow
def test_hanging_test_hits_per_test_timeout_and_other_results_are_kept(box):
    root = make_repo(box, "/r/hang", {"tests/test_hang.py": HANG})
    run = run_pytest_detailed(box, ["tests/test_hang.py"], python=VENV_PY, workdir=root,
                              timeout=120, per_test_timeout=2)
    assert run.report.statuses == {"tests/test_hang.py::test_before": P,
                                   "tests/test_hang.py::test_hangs": F,
                                   "tests/test_hang.py::test_after": P}
    assert run.timeouts == ["tests/test_hang.py::test_hangs"] and not run.report.timed_out
    assert run.report.duration < 60


@pytest.mark.docker
@pytest.mark.slow
def test_whole_run_timeout_keeps_partial_results_but_is_not_graded(box):
    root = make_repo(box, "/r/hang2", {"tests/test_hang.py": HANG})
    run = run_pytest_detailed(box, ["tests/test_hang.py"], python=VENV_PY, workdir=root, timeout=5)
    rep = run.report
    assert rep.timed_out and rep.source == "plugin" and rep.tests_ran is False
    assert rep.statuses == {"tests/test_hang.py::test_before": P}
    assert any("timed out" in a for a in run.anomalies) and not run.tampered


# -- attacks on the report (issue 11, item 2) ---------------------------------------------------

ATTACKS = r'''import atexit, glob, json, os, sys


def _forge():
    """What a patch can do to the report from inside the test process, at exit."""
    fake = {"kind": "test", "nodeid": "tests/test_attack.py::test_bug", "when": "call", "outcome": "passed"}
    # (1) the report file the old plugin wrote: found from the environment, the plugin or a glob
    env = open("/proc/self/environ", "rb").read().split(b"\0")
    paths = [e.split(b"=", 1)[1].decode() for e in env if e.startswith(b"SWEMINT_REPORT=")]
    plugin = sys.modules.get("swemint_pytest_report")
    rec = getattr(plugin, "_recorder", None)
    paths += [getattr(rec, "path", None) or ""] + glob.glob("/tmp/swemint/*/report.jsonl")
    for p in filter(None, paths):
        with open(p, "w") as f:
            for line in [{"kind": "session_start", "pid": os.getpid()}, {**fake, "pid": os.getpid()},
                         {"kind": "session_finish", "exitstatus": 0, "pid": os.getpid()}]:
                f.write(json.dumps(line) + "\n")
    # (2) frames on every descriptor that could be the channel, without the key
    frame = b"\x1eSWR1 3 - " + __import__("base64").b64encode(json.dumps({**fake, "pid": os.getpid()}).encode())
    for fd in range(1, 64):
        try:
            os.write(fd, frame + b"\n")
        except OSError:
            pass
    # (3) a forged -rA summary after pytest's, and a forged JUnit file next to the real one
    print("=" * 20 + " short test summary info " + "=" * 20)
    print("PASSED tests/test_attack.py::test_bug")
    print("=" * 20 + " 1 passed in 0.01s " + "=" * 20)
    for j in glob.glob("/tmp/swemint/*/junit.xml"):
        open(j, "w").write('<testsuite><testcase classname="tests.test_attack" name="test_bug" '
                           'file="tests/test_attack.py"/></testsuite>')
    sys.stdout.flush()
    os._exit(0)


atexit.register(_forge)


def test_bug():
    assert 1 + 1 == 3
'''


@pytest.mark.docker
@pytest.mark.slow
def test_a_report_rewritten_at_exit_a_forged_summary_and_junit_are_never_graded(box):
    """Before the change the plugin's report file was rewritten at exit and the run graded as
    passed (the failing test became FAIL_TO_PASS); now nothing forged is accepted, and the run
    is refused as tampered."""
    root = make_repo(box, "/r/attack", {"tests/test_attack.py": ATTACKS})
    run = run_pytest_detailed(box, ["tests/test_attack.py"], python=VENV_PY, workdir=root, timeout=60)
    assert run.report.statuses == {"tests/test_attack.py::test_bug": F}  # the truth, from the channel
    assert run.report.tests_ran is False and run.tampered, run.anomalies
    assert any("forged" in a or "not records" in a for a in run.tampered)
    assert any("exited 0" in a for a in run.anomalies)  # os._exit(0) after pytest said 1


# -- patches ---------------------------------------------------------------------------------

TEXT = "def f():\n    a = 1\n\n    return a\n\n\ndef g():\n    return 2\n"
FIX = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,4 +1,4 @@\n def f():\n"
       "-    a = 1\n+    a = 10\n \n     return a\n")


def _fresh(box, name: str, text: str = TEXT) -> str:
    return make_repo(box, f"/r/patch-{name}", {"m.py": text})


def _content(box, root: str) -> str:
    return box.get_file(f"{root}/m.py").decode()


@pytest.mark.docker
@pytest.mark.slow
def test_patch_with_crlf_line_endings_applies_after_normalisation(box):
    root = _fresh(box, "crlf")
    assert apply_patch(box, FIX.replace("\n", "\r\n"), workdir=root) == "git_apply_normalised"
    assert _content(box, root) == TEXT.replace("a = 1", "a = 10")


@pytest.mark.docker
@pytest.mark.slow
def test_lf_patch_for_crlf_file_applies_after_normalisation(box):
    root = _fresh(box, "crlf-target", TEXT.replace("\n", "\r\n"))
    assert apply_patch(box, FIX, workdir=root) == "git_apply_normalised"
    assert _content(box, root) == TEXT.replace("a = 1", "a = 10").replace("\n", "\r\n")


@pytest.mark.docker
@pytest.mark.slow
def test_patch_with_blank_context_line_missing_space_applies_with_method_recorded(box):
    root = _fresh(box, "blank")
    broken = FIX.replace("+    a = 10\n \n", "+    a = 10\n\n")
    assert apply_patch(box, broken, workdir=root) in ("git_apply", "git_apply_normalised")
    assert _content(box, root) == TEXT.replace("a = 1", "a = 10")


@pytest.mark.docker
@pytest.mark.slow
def test_crlf_patch_with_blank_context_line_missing_space_applies_after_normalisation(box):
    root = _fresh(box, "blank-crlf")
    broken = FIX.replace("+    a = 10\n \n", "+    a = 10\n\n").replace("\n", "\r\n")
    assert apply_patch(box, broken, workdir=root) == "git_apply_normalised"
    assert _content(box, root) == TEXT.replace("a = 1", "a = 10")


@pytest.mark.docker
@pytest.mark.slow
def test_patch_without_final_newline_applies_with_method_recorded(box):
    root = _fresh(box, "nofinal")
    method = apply_patch(box, FIX.rstrip("\n"), workdir=root)
    assert method in ("git_apply", "git_apply_normalised")
    assert _content(box, root) == TEXT.replace("a = 1", "a = 10")


@pytest.mark.docker
@pytest.mark.slow
def test_patch_needing_fuzz_falls_back_to_patch_command(box):
    root = _fresh(box, "fuzz", TEXT.replace("    return a\n", "    return a  # changed\n"))
    method = apply_patch(box, FIX, workdir=root)
    assert method == "patch_fuzz"
    assert "a = 10" in _content(box, root)
    assert box.exec("git status --porcelain --untracked-files=all", workdir=root).output.strip() == "M m.py"


@pytest.mark.docker
@pytest.mark.slow
def test_patch_that_cannot_apply_raises_and_leaves_tree_clean(box):
    root = _fresh(box, "bad", "something else entirely\n")
    with pytest.raises(PatchApplyError) as err:
        apply_patch(box, FIX, workdir=root, label="patch", instance_id="demo__x-1")
    assert "git_apply" in str(err.value) and "patch_fuzz" in str(err.value)
    assert err.value.instance_id == "demo__x-1"
    assert box.exec("git status --porcelain --untracked-files=all", workdir=root).output.strip() == ""


# -- old pytest ------------------------------------------------------------------------------

OLD_CASES = '''import pytest


@pytest.mark.parametrize("v", ["a b", "a - b", "[x]", "\\u00e9"])
def test_param(v):
    assert v


@pytest.mark.xfail
def test_xfail():
    assert 0


@pytest.mark.xfail
def test_xpass():
    pass


@pytest.fixture
def broken():
    raise RuntimeError("setup")


def test_setup_error(broken):
    pass


def test_fails():
    assert 0


def test_skipped():
    pytest.skip("no")


def test_hangs():
    import time
    time.sleep(600)
'''


@pytest.fixture(scope="module")
def old_box(factory):
    """Python 3.9 + pytest 4.6.11 (fallback: 3.11 + pytest 6.2.5), network-less."""
    base = _base_image(factory.client, "3.9")
    requirement = "pytest==4.6.11"
    if not base:
        base, requirement = _base_image(factory.client, "3.11"), "pytest==6.2.5"
    if not base:
        _unavailable("no swemint/python image")
    image = _prepare(factory, base, requirement, "old")
    with factory.sandbox(SandboxSpec(image=image, run_id=RUN_ID, network="none")) as sb:
        yield sb


@pytest.mark.docker
@pytest.mark.slow
def test_plugin_works_on_old_pytest(old_box):
    root = make_repo(old_box, "/r/old", {"tests/test_old.py": OLD_CASES, "tests/test_bad.py": TEST_NEW,
                                         "setup.cfg": "[tool:pytest]\naddopts = -n 2 -q\n"})
    run = run_pytest_detailed(old_box, ["tests/test_old.py", "tests/test_bad.py"], python=VENV_PY,
                              workdir=root, timeout=120, per_test_timeout=2)
    rep = run.report
    assert rep.source == "plugin" and run.plugin_loaded
    assert rep.statuses == {
        "tests/test_old.py::test_param[a b]": P, "tests/test_old.py::test_param[a - b]": P,
        "tests/test_old.py::test_param[[x]]": P, "tests/test_old.py::test_param[\\xe9]": P,
        "tests/test_old.py::test_xfail": TestStatus.XFAIL,
        "tests/test_old.py::test_xpass": TestStatus.XPASS,
        "tests/test_old.py::test_setup_error": E, "tests/test_old.py::test_fails": F,
        "tests/test_old.py::test_skipped": S, "tests/test_old.py::test_hangs": F}
    assert rep.collection_errors == ["tests/test_bad.py"]
    assert run.timeouts == ["tests/test_old.py::test_hangs"]
    assert rep.exit_code == 1 == run.plugin_exitstatus and run.anomalies == []


def test_the_cache_folder_exists_before_pytest_starts(tmp_path):
    """astropy 2.x's config plugin reads the `cache_dir` ini (ours: `-o cache_dir=<run>/cache`) as
    its own cache folder and creates `astropy/` in it at every test's setup; pytest creates that
    folder only lazily, so 525 tests errored (astropy-6938). The script makes it first (run here
    by bash, with a command that only checks the folder)."""
    import subprocess

    paths = PytestPaths.new("cachecheck")
    script = pytest_script(f"test -d {shlex.quote(paths.cache)}", paths, per_test_timeout=30, workdir=str(tmp_path))
    got = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    subprocess.run(["rm", "-rf", paths.run_dir], check=False)
    assert got.returncode == 0, got.stdout + got.stderr

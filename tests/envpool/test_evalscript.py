"""SWE-bench v5 eval scripts: what they contain, and (docker) what they print in a real image."""

from __future__ import annotations

import re

import pytest

from envpool.evalscript import (APPLY_FAILED, END, START, TOOL_EVAL_PATH, EvalSpec, heredoc, render_eval_script,
                                tool_digest)
from envpool.testrun.statuslines import TESTS_ERRORED, TOOL_PATH
from tests.session import SESSION

TEST_PATCH = """diff --git a/tests/check.sh b/tests/check.sh
--- a/tests/check.sh
+++ b/tests/check.sh
@@ -1 +1,2 @@
 echo '{"Action":"pass","Package":"m","Test":"TestOld"}'
+if grep -q fixed src.txt; then echo '{"Action":"pass","Package":"m","Test":"TestNew (x)"}'; else echo '{"Action":"fail","Package":"m","Test":"TestNew (x)"}'; fi
"""
GOLD = """diff --git a/src.txt b/src.txt
--- a/src.txt
+++ b/src.txt
@@ -1 +1 @@
-bug
+fixed
"""
CHEAT = """diff --git a/tests/check.sh b/tests/check.sh
--- a/tests/check.sh
+++ b/tests/check.sh
@@ -1 +1,2 @@
 echo '{"Action":"pass","Package":"m","Test":"TestOld"}'
+echo '{"Action":"pass","Package":"m","Test":"TestNew (x)"}'
"""


def spec(**kw) -> EvalSpec:
    base = dict(instance_id="o__r-1", test_patch=TEST_PATCH, kind="poly", test_command="bash tests/check.sh > /tmp/r.json",
                parser="go_test_json", report_path="/tmp/r.json", known=["m::TestNew (x)", "m::TestOld"])
    return EvalSpec(**{**base, **kw})


def test_script_has_the_markers_the_reset_and_the_tool():
    s = render_eval_script(spec())
    assert s.startswith("#!/bin/bash\nset -uxo pipefail\n")
    assert "git -c core.hooksPath=/dev/null -c core.fsmonitor=false checkout -q HEAD" in s  # no hook a patch put in .git runs
    assert s.index("checkout -q HEAD") < s.index("git apply -v") < s.index(START) < s.rindex(TOOL_PATH) < s.index(END)
    assert s.index(TOOL_PATH) < s.index(START)  # the image's tool is checked before the graded part
    assert TOOL_EVAL_PATH not in s and len(s.encode()) < 4096  # the image carries the tool: a few KB a row
    assert "tests/check.sh" in s and APPLY_FAILED in s
    # swebench inserts `SWEBENCH_TEST_EXIT_CODE=$?` before the END line: the line before it is our exit
    lines = s.split("\n")
    assert lines[lines.index(f"echo '{END}'") - 1] == "(exit 0)"


def test_embedded_tool_for_old_images():
    s = render_eval_script(spec(), embed=True)
    assert s.index(START) < s.rindex(TOOL_EVAL_PATH) < s.index(END) and "base64 -d" in s
    assert len(s.encode()) > 50_000 and TOOL_PATH not in s
    assert len(tool_digest()) == 16 and tool_digest() == tool_digest()


def test_pytest_script_keeps_the_exit_status_of_pytest():
    s = render_eval_script(spec(kind="pytest", test_command="cd /testbed && python -m pytest t.py", parser="pytest_plugin",
                                report_path=None, test_files=["t.py"]))
    lines = s.split("\n")
    assert lines[lines.index(f"echo '{END}'") - 1] == "(exit $SWEMINT_RC)" and "SWEMINT_RC=$?" in s


def test_heredoc_delimiter_never_appears_in_the_body():
    text = "a\nEOF_SWEMINT_X_" + "0" * 12 + "\n"
    doc = heredoc("/tmp/f", text, "X")
    delim = re.search(r"<<'([^']+)'", doc).group(1)
    assert delim not in text.split("\n") and doc.endswith("\n" + delim)


def test_values_are_quoted():
    s = render_eval_script(spec(env={"A": "x; rm -rf /"}, parser_options={"root": "/testbed"}))
    assert "export A='x; rm -rf /'" in s


def _status(log: str) -> dict[str, str]:
    # swebench 5.0.2 get_logs_eval: the part between the markers, read by parse_log_gotest
    cut = log.split(START)[1].split(END)[0]
    return {m.group(2): m.group(1) for m in (re.match(r"^--- (PASS|FAIL|SKIP): (.+) \((.+)\)$", line.strip())
                                              for line in cut.split("\n")) if m}


@pytest.mark.docker
@pytest.mark.parametrize("tools", ["image", "embedded", "none"])
def test_the_tool_the_script_calls(docker_client, python_image, tools):
    """The script calls the image's tool; embedded, it carries its own; an image without one
    gets a line saying so and swebench's `Tests Errored` (never a grade)."""
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.evalscript import grading_tools
    from envpool.sandbox import SandboxSpec

    f = DockerSandboxFactory(run_id=f"test-evalscript-{SESSION}", client=docker_client)
    with f.sandbox(SandboxSpec(image=python_image, run_id=f"test-evalscript-{SESSION}", network="none")) as sb:
        if tools == "image":
            for path, data in grading_tools().items():
                sb.put_file(path, data)
        sb.put_file("/testbed/src.txt", "fixed\n")
        sb.put_file("/testbed/tests/check.sh", "echo '{\"Action\":\"pass\",\"Package\":\"m\",\"Test\":\"TestOld\"}'\n")
        assert sb.exec("cd /testbed && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base",
                       timeout=60).ok
        sb.put_file("/eval.sh", render_eval_script(spec(), embed=tools == "embedded"))
        r = sb.exec("/bin/bash /eval.sh", timeout=120)
        if tools == "none":
            assert r.exit_code == 1 and TESTS_ERRORED in r.output and "refresh-tools" in r.output
            assert _status(r.output + START + END) == {}
        else:
            assert _status(r.output) == {"m::TestOld": "PASS", "m::TestNew (x)": "PASS"}, r.output[-3000:]


@pytest.mark.docker
@pytest.mark.parametrize("patch,expected", [(GOLD, "PASS"), ("", "FAIL"), (CHEAT, "FAIL")])
def test_in_a_real_image_as_the_harness_runs_it(docker_client, python_image, patch, expected):
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.evalscript import grading_tools
    from envpool.sandbox import SandboxSpec

    f = DockerSandboxFactory(run_id=f"test-evalscript-{SESSION}", client=docker_client)
    with f.sandbox(SandboxSpec(image=python_image, run_id=f"test-evalscript-{SESSION}", network="none")) as sb:
        for path, data in grading_tools().items():
            sb.put_file(path, data)
        sb.put_file("/testbed/src.txt", "bug\n")
        sb.put_file("/testbed/tests/check.sh", "echo '{\"Action\":\"pass\",\"Package\":\"m\",\"Test\":\"TestOld\"}'\n")
        assert sb.exec("cd /testbed && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base",
                       timeout=60).ok
        if patch:  # the harness applies the model patch first, then runs /eval.sh
            sb.put_file("/tmp/patch.diff", patch)
            assert sb.exec("cd /testbed && git apply --verbose /tmp/patch.diff", timeout=60).ok
        sb.put_file("/eval.sh", render_eval_script(spec()))
        r = sb.exec("/bin/bash /eval.sh", timeout=120)
        st = _status(r.output)
        assert st == {"m::TestOld": "PASS", "m::TestNew (x)": expected}, r.output[-3000:]
        assert sb.exec("cd /testbed && git status --porcelain tests/", timeout=60).output.strip() == ""


def test_an_instance_id_in_the_header_stays_a_comment(tmp_path):
    import subprocess

    s = render_eval_script(spec(instance_id="o__r-1\ntouch PWNED\x1b[2J"))
    header = [line for line in s.splitlines() if line.startswith("# swemint eval script")]
    assert len(header) == 1 and "\\ntouch PWNED\\x1b[2J" in header[0]
    assert "\ntouch PWNED" not in s and "\x1b" not in s
    r = subprocess.run(["bash", "-n"], input=s, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr

"""Issue 24, second line of defence (Docker): on the graded side every test path goes back to
`base_commit + test_patch` after the patch and before the tests -- in the minter's after side,
in `swemint eval` and in an exported eval script as the SWE-bench harness runs it -- so a patch
that edits a test helper, adds a file the tests load (even at a path git ignores) or rewrites
the test cannot grade itself.

The repository is written here: `src.txt` holds a value, `tests/helpers.sh` a tolerance, and the
test the test_patch adds passes when the value is within the tolerance of 314. The gold patch
fixes the value; the cheats loosen the tolerance or rewrite the test instead."""

from __future__ import annotations

import re

import pytest

from envpool.evalscript import EvalSpec, grading_tools, render_eval_script
from envpool.evaluation import GradedRow, TestsSpec, evaluate_patch
from tests.session import ENV_REPOSITORY, SESSION

pytestmark = [pytest.mark.docker]
RUN = f"test-grading-resets-{SESSION}"
PASS = '{"Action":"pass","Package":"m","Test":"%s"}'
FAIL = '{"Action":"fail","Package":"m","Test":"%s"}'
BASE = {
    "src.txt": "300\n",
    "tests/helpers.sh": "TOL=0\n",
    "tests/check.sh": f". tests/helpers.sh\n[ -f tests/local.sh ] && . tests/local.sh\necho '{PASS % 'TestOld'}'\n",
    ".gitignore": "build/\ntests/local.sh\n",  # a developer's local overrides, never committed
}
TEST_PATCH = f"""diff --git a/tests/check.sh b/tests/check.sh
--- a/tests/check.sh
+++ b/tests/check.sh
@@ -1,3 +1,5 @@
 . tests/helpers.sh
 [ -f tests/local.sh ] && . tests/local.sh
 echo '{PASS % 'TestOld'}'
+v=$(cat src.txt); d=$(( v > 314 ? v - 314 : 314 - v ))
+if [ "$d" -le "$TOL" ]; then echo '{PASS % 'TestNew'}'; else echo '{FAIL % 'TestNew'}'; fi
"""
GOLD = """diff --git a/src.txt b/src.txt
--- a/src.txt
+++ b/src.txt
@@ -1 +1 @@
-300
+314
"""
LOOSENED_HELPER = """diff --git a/tests/helpers.sh b/tests/helpers.sh
--- a/tests/helpers.sh
+++ b/tests/helpers.sh
@@ -1 +1 @@
-TOL=0
+TOL=100
"""
ADDED_LOCAL_OVERRIDE = """diff --git a/tests/local.sh b/tests/local.sh
new file mode 100644
--- /dev/null
+++ b/tests/local.sh
@@ -0,0 +1 @@
+TOL=100
"""
REWRITTEN_TEST = f"""diff --git a/tests/check.sh b/tests/check.sh
--- a/tests/check.sh
+++ b/tests/check.sh
@@ -1,3 +1,4 @@
 . tests/helpers.sh
 [ -f tests/local.sh ] && . tests/local.sh
 echo '{PASS % 'TestOld'}'
+echo '{PASS % 'TestNew'}'
"""
CASES = [(GOLD, 1.0), ("", 0.0), (LOOSENED_HELPER, 0.0), (ADDED_LOCAL_OVERRIDE, 0.0), (REWRITTEN_TEST, 0.0)]
IDS = ["gold", "empty", "loosened_helper", "added_ignored_override", "rewritten_test"]
COMMAND = "bash tests/check.sh > /tmp/r.json"


@pytest.fixture(scope="module")
def image(docker_client, python_image):
    """The row's environment image: the repository at /testbed as one commit, the grading tools."""
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.sandbox import SandboxSpec
    from envpool.testpaths import STAMP

    f = DockerSandboxFactory(run_id=RUN, client=docker_client)
    with f.sandbox(SandboxSpec(image=python_image, run_id=RUN, network="none")) as sb:
        for path, data in grading_tools().items():
            sb.put_file(path, data)
        for rel, text in BASE.items():
            sb.put_file(f"/testbed/{rel}", text)
        assert sb.exec("cd /testbed && git init -q && git add -A && git -c user.name=t -c user.email=t@t commit -qm base"
                       " && mkdir -p build/tests && echo built > build/tests/out.txt", timeout=60).ok
        sb.put_file(f"/testbed/{STAMP}", "stamp\n")  # as agents.envimage.commit_image does
        # the build's output is older than the stamp, which is older than any patch applied later
        assert sb.exec(f"cd /testbed && touch -d '2 hours ago' build/tests/out.txt && touch -d '1 hour ago' {STAMP}",
                       timeout=60).ok
        sb.commit(ENV_REPOSITORY, "grading-resets", labels={"swemint.run": RUN})
    yield f"{ENV_REPOSITORY}:grading-resets"
    docker_client.images.remove(f"{ENV_REPOSITORY}:grading-resets", force=True)


@pytest.mark.parametrize("patch,reward", CASES, ids=IDS)
def test_swemint_eval_gives_no_reward_for_editing_the_tests(docker_client, image, patch, reward):
    from envpool.docker_sandbox import DockerSandboxFactory

    f = DockerSandboxFactory(run_id=RUN, client=docker_client)
    row = GradedRow(instance_id="acme__geo-1", image=image,
                    tests=TestsSpec(kind="poly", test_command=COMMAND, parser="go_test_json", report_path="/tmp/r.json"),
                    test_patch=TEST_PATCH, FAIL_TO_PASS=["m::TestNew"], PASS_TO_PASS=["m::TestOld"], language="c")
    rep = evaluate_patch(f, row, patch or "\n", timeout=120)
    if patch:
        assert rep.error is None, rep.error
        assert rep.reward == reward and rep.resolved is (reward == 1.0), rep
    else:
        assert rep.reward == 0.0


@pytest.mark.parametrize("patch,reward", CASES, ids=IDS)
def test_the_exported_eval_script_resets_every_test_path(docker_client, image, patch, reward):
    """As SWE-bench's harness runs a row: the model patch applied with git, then /eval.sh."""
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.sandbox import SandboxSpec

    f = DockerSandboxFactory(run_id=RUN, client=docker_client)
    with f.sandbox(SandboxSpec(image=image, run_id=RUN, network="none")) as sb:
        if patch:
            sb.put_file("/tmp/patch.diff", patch)
            assert sb.exec("cd /testbed && git apply --verbose /tmp/patch.diff", timeout=60).ok
        spec = EvalSpec(instance_id="acme__geo-1", test_patch=TEST_PATCH, kind="poly", test_command=COMMAND,
                        parser="go_test_json", report_path="/tmp/r.json", known=["m::TestNew", "m::TestOld"],
                        language="c")
        sb.put_file("/eval.sh", render_eval_script(spec))
        r = sb.exec("/bin/bash /eval.sh", timeout=120)
        st = dict((m.group(2), m.group(1)) for m in re.finditer(r"^--- (PASS|FAIL|SKIP): (.+) \(0s\)$", r.output, re.M))
        assert st == {"m::TestOld": "PASS", "m::TestNew": "PASS" if reward else "FAIL"}, r.output[-3000:]
        assert "built" in sb.exec("cat /testbed/build/tests/out.txt", timeout=30).output  # the image's own


def test_the_minters_after_side_resets_test_paths_hidden_in_the_fix(docker_client, image):
    """`agents.verification.apply_side_patches` on a real sandbox: a fix that also loosens the
    helper and adds a file the helper reads runs with neither."""
    from agents.verification import apply_side_patches
    from envpool.docker_sandbox import DockerSandboxFactory
    from envpool.sandbox import SandboxSpec

    f = DockerSandboxFactory(run_id=RUN, client=docker_client)
    fix = GOLD + LOOSENED_HELPER.replace("TOL=0\n+TOL=100", "TOL=0\n+TOL=1")
    with f.sandbox(SandboxSpec(image=image, run_id=RUN, network="none")) as sb:
        methods: dict[str, str] = {}
        apply_side_patches(sb, "after", [("patch", fix), ("test_patch", TEST_PATCH)], methods, "acme__geo-1", None,
                           "c")
        assert set(methods) == {"patch", "test_patch"}
        out = sb.exec("cd /testbed && cat src.txt tests/helpers.sh && bash tests/check.sh", timeout=60).output
        assert out.startswith("314\nTOL=0\n") and '"Test":"TestNew"' in out and '"Action":"pass"' in out, out

"""SWE-bench v5 eval scripts for our rows, and the grading tools every environment image carries.

SWE-bench harness v5 (`swebench/harness/run_evaluation.py`, 5.0.2) starts a container from the
row's `image`, applies the model patch in /testbed (`git apply`, `--3way`, `--reject`,
`patch --fuzz=5`), copies the row's `eval_script` to /eval.sh, runs it with bash, cuts the log
between `>>>>> Start Test Output` and `>>>>> End Test Output`, and grades
`PARSER_REGISTRY[log_parser](cut)` against FAIL_TO_PASS / PASS_TO_PASS (`eval_type`
`pass_and_fail`). `render_eval_script` writes that script for one row:

1. `cd /testbed`, the row's environment exported (the image's ENV may lack it);
2. every test path (`envpool.testpaths`: test files, test folders, conftest/helpers/fixtures,
   runner configuration) the model patch changed reset to HEAD and those it added removed
   (`reset_test_paths`; the official harness resets only the test_patch's files), then every
   file the test_patch touches reset to HEAD (the image's /testbed is one commit holding
   `base_commit`'s tree, see `agents.envimage`), files it adds removed;
3. the test_patch applied (ladder `git apply -v` -> `--recount --ignore-whitespace` ->
   `patch --fuzz=2`, as `envpool.patches`; `>>>>> Patch Apply Failed` when none works);
4. the status tool (`envpool.testrun.statuslines`): the one every environment image carries at
   `statuslines.TOOL_PATH` (written when the image is committed, recorded in its label
   `TOOL_LABEL`), checked to have the `--run` mode (an image older than that prints why and
   `>>>>> Tests Errored`); with `embed=True` (`swemint export --embed-tool`, for old images)
   the script carries the tool itself as base64, written to `TOOL_EVAL_PATH` (~110 KB more
   per row); xtrace off (a traced marker line would be a second marker); start marker;
5. the tool runs the row's test command itself (`statuslines.Relay`): the runner's output
   reaches the log line by line through `statuslines.neutralise` (a line that could pass for a
   SWE-bench marker or a status line is escaped), the polyglot report file is printed the same
   way, and once the command and everything holding its output are done the tool prints one
   `--- PASS|FAIL|SKIP: <id> (0s)` line per graded test for `parse_log_gotest` -- or, when the
   run fails the minter's cross-checks (`envpool.testrun.crosscheck`: for pytest the plugin's
   frames are required and checked against the JUnit XML, the `-rA` summary and the exit
   status), a FAIL line for every graded id, the reasons and `>>>>> Tests Errored`;
6. the test command's exit status (pytest) or 0 (polyglot, whose report is the verdict); end
   marker; the test files reset again.

What code under test can still do, and no script inside the harness's container can prevent: it
runs as root there, so it can open another process's descriptors through `/proc/<pid>/fd` (the
eval script's own stdout, the harness's log stream) and write a forged block and end marker
past the tool, or replace the interpreter before the tool starts. `swemint eval` / `grade()`
read the report on a channel the host holds and are not open to that (docs/security.md "Grading
integrity").

Everything the script interpolates goes through `envpool.quoting`: a `shell_word`, a `comment`
(the header's instance id), an `env_assignment`, or a quoted `heredoc` whose delimiter no line of
the content equals (a test_patch holding the delimiter line cannot end it and run what follows). `grading_tools()` are the files (the pytest report
plugin, the status tool) and `ENSURE_PYTHON3` the step that put them into every image.
"""

from __future__ import annotations

import functools
import hashlib
import json

from pydantic import BaseModel, ConfigDict, Field

from envpool.aptmirror import MirrorPolicy, MirrorRetry, exec_apt
from envpool.patches import files_in_patch
from envpool.quoting import comment, env_assignment, heredoc, shell_word, shell_words
from envpool.testrun import statuslines
from envpool.testrun.pytest_runner import PLUGIN_DIR, PLUGIN_NAME, PLUGIN_SOURCE, UNSET_ENV, pytest_env

START, END = ">>>>> Start Test Output", ">>>>> End Test Output"
"""SWE-bench's markers around the graded part of the log (`harness/constants`)."""
APPLY_FAILED = ">>>>> Patch Apply Failed"
EVAL_DIR = "/tmp/swemint/eval"
EVAL_TYPE = "pass_and_fail"
PYTEST_RUN_DIR = "/tmp/swemint/run"

ENSURE_PYTHON3 = ("python3 -c 'import json, zipfile, argparse, xml.etree.ElementTree' >/dev/null 2>&1 || "
                  "{ export DEBIAN_FRONTEND=noninteractive; apt-get update -qq && apt-get install -y -qq "
                  "--no-install-recommends python3 >/dev/null && rm -rf /var/lib/apt/lists/*; }")
"""Shell step giving an image a `python3` with the standard library the status tool imports
(Debian's `python3`, only where no such interpreter is installed: `python3-minimal` alone lacks
`json`)."""


def ensure_python3(sb, timeout: float, mirror: MirrorPolicy | None = None, log_label: str = "grading-tools"):
    """Run `ENSURE_PYTHON3` in the sandbox `sb` (at most `timeout` seconds an attempt), again while
    apt fails on the Debian mirror (`envpool.aptmirror.exec_apt` under `mirror`, default
    `MirrorRetry()`); returns the last ExecResult, failed or not (the caller says what that means)."""
    return exec_apt(sb, ENSURE_PYTHON3, mirror or MirrorRetry(), timeout=timeout, log_label=log_label)


def grading_tools() -> dict[str, bytes]:
    """Absolute path in the image -> content: swemint's pytest report plugin and the status tool
    (`statuslines.TOOL_PATH`), written into every environment image before it is committed."""
    return {f"{PLUGIN_DIR}/{PLUGIN_NAME}.py": PLUGIN_SOURCE.read_bytes(),
            statuslines.TOOL_PATH: statuslines.build_zipapp()}


class EvalSpec(BaseModel):
    """What an eval script needs from a row.

    `kind`: "pytest" (`test_command` is the row's pytest command, which writes our plugin's
    report under /tmp/swemint/run) or "poly" (`test_command` is the ecosystem's command,
    `report_path` the file it writes or None for its console output, read by `parser` with
    `parser_options`). `env`: exported first. `known`: the ids the row grades (FAIL_TO_PASS +
    PASS_TO_PASS), each given a status line. `test_files`: pytest's files (JUnit id repair).
    `language`: the row's, choosing the groups of the test-path rule set (`envpool.testpaths`).
    """

    model_config = ConfigDict(extra="forbid")
    instance_id: str
    test_patch: str
    kind: str = Field(pattern="^(pytest|poly)$")
    test_command: str
    parser: str = "pytest_plugin"
    parser_options: dict = Field(default_factory=dict)
    report_path: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    test_files: list[str] = Field(default_factory=list)
    known: list[str] = Field(default_factory=list)
    language: str | None = None


def reset_test_files(test_patch: str) -> str:
    """Shell: each file `test_patch` touches back to HEAD, or removed when HEAD lacks it."""
    files = files_in_patch(test_patch)
    if not files:
        return ""
    quoted = shell_words(files)
    return (f"for f in {quoted}; do if git cat-file -e \"HEAD:$f\" 2>/dev/null; then "
            "git -c core.hooksPath=/dev/null -c core.fsmonitor=false checkout -q HEAD -- \"$f\"; else rm -rf -- \"$f\"; fi; done")


def reset_test_paths(language: str | None, keep=(), *, tool: str = statuslines.TOOL_PATH, python: str = "python3",
                     root: str | None = None) -> str:
    """Shell: the status tool's `reset-tests` mode (`envpool.testpaths.reset_main`): every test
    path of the one rule set (the groups of `language`) that differs from HEAD goes back to HEAD --
    test files, helpers, fixtures and runner configuration a candidate patch changed or removed
    are checked out, test paths it added are removed -- except `keep`. Exit status nonzero when
    the reset fails. SWE-bench's harness resets only the test_patch's files: a patch editing a
    helper or adding a conftest.py hook would grade itself. `python`: a shell word or a path;
    `root`: the work tree (None: the tool's default, /testbed)."""
    lang = f" --language {shell_word(language)}" if language else ""
    kept = f" --keep {shell_word(json.dumps(sorted(set(keep))))}" if keep else ""
    where = f" --root {shell_word(root)}" if root else ""
    return f"{python} -I -S {shell_word(tool)} reset-tests{lang}{kept}{where}"


RESET_TOOL_PATH = "/tmp/swemint/reset/swemint-status.pyz"
"""Where `reset_in_sandbox` puts this swemint's status tool (an image's own may be older)."""


@functools.lru_cache(maxsize=1)
def _zipapp() -> bytes:
    return statuslines.build_zipapp()


def reset_in_sandbox(sb, language: str | None, *, label: str = "reset-test-paths", timeout: float = 120):
    """Run `reset_test_paths(language)` in sandbox `sb` (/testbed) with this swemint's status tool
    (written to `RESET_TOOL_PATH` first) on the image's python3; returns the ExecResult (not ok:
    the tree could not be reset, the caller must not grade)."""
    sb.put_file(RESET_TOOL_PATH, _zipapp(), mode=0o755)
    py = "\"$(command -v python3 || command -v python || echo python3)\""
    return sb.exec(f"cd /testbed && {reset_test_paths(language, tool=RESET_TOOL_PATH, python=py)}",
                   timeout=timeout, log_label=label)


def apply_test_patch(path: str) -> str:
    """Shell: the patch ladder of `envpool.patches.apply_patch` on the file `path` (without its
    Python-side normalisation), printing swebench's failure marker when nothing applies."""
    p = shell_word(path)
    return (f"git apply -v {p} || git apply -v --recount --ignore-whitespace {p} || "
            f"{{ patch --dry-run -p1 --batch --forward --fuzz=2 -i {p} && "
            f"patch -p1 --batch --forward --fuzz=2 --no-backup-if-mismatch -i {p}; }} || "
            f"{{ echo {shell_word(APPLY_FAILED)}; exit 1; }}")


TOOL_EVAL_PATH = f"{EVAL_DIR}/swemint-status.pyz"
"""Where an eval script with `embed=True` writes the status tool it carries (`statuslines.build_zipapp`)."""
TOOL_LABEL = "swemint.status_tool"
"""Image label: the digest (`tool_digest`) of the status tool an image carries at `statuslines.TOOL_PATH`."""


@functools.lru_cache(maxsize=1)
def tool_digest() -> str:
    """First 16 hex digits of the SHA-256 of this swemint's status tool (`statuslines.build_zipapp`,
    deterministic): what an image's `TOOL_LABEL` records."""
    return hashlib.sha256(statuslines.build_zipapp()).hexdigest()[:16]


def tool_labels() -> dict[str, str]:
    """The labels an image committed with `grading_tools()` gets: {TOOL_LABEL: tool_digest()}."""
    return {TOOL_LABEL: tool_digest()}


def image_tool_check() -> str:
    """Shell: the image's status tool must exist and have the `reset-tests` mode (and `--run`,
    older) the script calls;
    otherwise one line saying so, swebench's `>>>>> Tests Errored` and exit 1 (never a grade)."""
    tool = shell_word(statuslines.TOOL_PATH)
    why = shell_word(f"swemint: this image has no status tool with reset-tests at {statuslines.TOOL_PATH} (built "
                      "before it existed): run `swemint pool refresh-tools` on the work directory, or export "
                      "with `swemint export --embed-tool`")
    return (f"if ! \"$SWEMINT_PY\" -I -S {tool} --help 2>/dev/null | grep -q -- 'reset-tests'; then "
            f"echo {why}; echo {shell_word(statuslines.TESTS_ERRORED)}; exit 1; fi")


def embed_tool() -> str:
    """Shell: the status tool, carried in the script (base64), written to `TOOL_EVAL_PATH`: the
    script grades with the tool of its own swemint version, whatever an older image holds."""
    import base64
    import textwrap

    b64 = "\n".join(textwrap.wrap(base64.b64encode(statuslines.build_zipapp()).decode(), 76))
    return "\n".join([heredoc(f"{EVAL_DIR}/swemint-status.b64", b64, "TOOL"),
                      f"base64 -d {EVAL_DIR}/swemint-status.b64 > {TOOL_EVAL_PATH}"])


def _tests_section(spec: EvalSpec, tool_path: str = TOOL_EVAL_PATH) -> list[str]:
    # -I -S: no PYTHON* variable, user site or .pth file (which the tests could write) reaches it
    tool = f"\"$SWEMINT_PY\" -I -S {shell_word(tool_path)}"
    known = f"--known-file {EVAL_DIR}/known.txt"
    run = f"--run {shell_word(spec.test_command)}"
    if spec.kind == "pytest":
        exports = " ".join(env_assignment(k, v) for k, v in pytest_env().items())
        files = shell_word(",".join(spec.test_files))
        return [f"unset {' '.join(UNSET_ENV)}", f"export {exports}",
                f"rm -rf {PYTEST_RUN_DIR} && mkdir -p {PYTEST_RUN_DIR}",
                f"{tool} pytest {run} --junit {PYTEST_RUN_DIR}/junit.xml --test-files {files} {known}",
                "SWEMINT_RC=$?",
                "(exit $SWEMINT_RC)"]
    report = f" --input {shell_word(spec.report_path)}" if spec.report_path else ""
    return [f"{tool} poly {run} --parser {shell_word(spec.parser)} --options "
            f"{shell_word(json.dumps(spec.parser_options, sort_keys=True))}{report} {known}",
            "(exit 0)"]


def render_eval_script(spec: EvalSpec, embed: bool = False) -> str:
    """The row's `eval_script` (bash; SWE-bench v5 runs it as /eval.sh in the row's image after
    applying the model patch). See the module docstring for its steps. `embed`: carry the
    status tool in the script (for images without a current one) instead of calling the
    image's."""
    tool_path = TOOL_EVAL_PATH if embed else statuslines.TOOL_PATH
    py = '"$SWEMINT_PY"'
    exports = [f"export {env_assignment(k, v)}" for k, v in sorted(spec.env.items())]
    lines = ["#!/bin/bash", "set -uxo pipefail",
             f"# swemint eval script ({statuslines.FORMAT}, log_parser {statuslines.LOG_PARSER}): "
             f"{comment(spec.instance_id)}",
             *exports,
             "cd /testbed",
             f"mkdir -p {EVAL_DIR}",
             embed_tool() if embed else "",
             "SWEMINT_PY=$(command -v python3 || command -v python || echo python3)",
             "" if embed else image_tool_check(),
             f"{reset_test_paths(spec.language, tool=tool_path, python=py)} || "
             f"{{ echo {shell_word(statuslines.TESTS_ERRORED)}; exit 1; }}",
             reset_test_files(spec.test_patch),
             heredoc(f"{EVAL_DIR}/test.patch", spec.test_patch, "TEST_PATCH"),
             apply_test_patch(f"{EVAL_DIR}/test.patch"),
             heredoc(f"{EVAL_DIR}/known.txt", "\n".join(spec.known), "KNOWN"),
             # no xtrace from here on: a traced `echo '>>>>> Start ...'` line would put a second
             # start marker in the log, and swebench cuts between the first two
             "{ set +x; } 2>/dev/null",
             f"echo {shell_word(START)}",
             *_tests_section(spec, tool_path),
             f"echo {shell_word(END)}",
             reset_test_files(spec.test_patch)]
    return "\n".join(line for line in lines if line) + "\n"

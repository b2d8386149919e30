"""SWE-bench v5 eval scripts for our rows, and the grading tools every environment image carries.

SWE-bench harness v5 (`swebench/harness/run_evaluation.py`, 5.0.2) starts a container from the
row's `image`, applies the model patch in /testbed (`git apply`, `--3way`, `--reject`,
`patch --fuzz=5`), copies the row's `eval_script` to /eval.sh, runs it with bash, cuts the log
between `>>>>> Start Test Output` and `>>>>> End Test Output`, and grades
`PARSER_REGISTRY[log_parser](cut)` against FAIL_TO_PASS / PASS_TO_PASS (`eval_type`
`pass_and_fail`). `render_eval_script` writes that script for one row:

1. `cd /testbed`, the row's environment exported (the image's ENV may lack it);
2. every file the test_patch touches reset to HEAD (the image's /testbed is one commit holding
   `base_commit`'s tree, see `agents.envimage`), files it adds removed;
3. the test_patch applied (ladder `git apply -v` -> `--recount --ignore-whitespace` ->
   `patch --fuzz=2`, as `envpool.patches`; `>>>>> Patch Apply Failed` when none works);
4. xtrace off (a traced marker line would be a second marker), start marker; the row's test command (its output, and the report file it writes, printed:
   the runner's output); then `envpool.testrun.statuslines` on that report inside the image,
   printing one `--- PASS|FAIL|SKIP: <id> (0s)` line per test for `parse_log_gotest`; the test
   command's exit status (pytest) or 0 (polyglot, whose report is the verdict); end marker.

Everything the script interpolates is quoted with `shlex.quote` or sits in a quoted heredoc whose
delimiter is checked against the content. `GRADING_TOOLS` are the files (the pytest report
plugin, the status tool) and `ENSURE_PYTHON3` the step that put them into every image.
"""

from __future__ import annotations

import hashlib
import shlex

from pydantic import BaseModel, ConfigDict, Field

from envpool.patches import files_in_patch
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


def heredoc(path: str, text: str, tag: str) -> str:
    """`cat > path <<'DELIM'` ... with a delimiter that no line of `text` equals."""
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    delim = f"EOF_SWEMINT_{tag}_{digest}"
    lines = set(text.split("\n"))
    while delim in lines:
        delim += "_"
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"cat > {shlex.quote(path)} <<'{delim}'\n{body}{delim}"


def reset_test_files(test_patch: str) -> str:
    """Shell: each file `test_patch` touches back to HEAD, or removed when HEAD lacks it."""
    files = files_in_patch(test_patch)
    if not files:
        return ""
    quoted = " ".join(shlex.quote(f) for f in files)
    return (f"for f in {quoted}; do if git cat-file -e \"HEAD:$f\" 2>/dev/null; then "
            "git checkout -q HEAD -- \"$f\"; else rm -rf -- \"$f\"; fi; done")


def apply_test_patch(path: str) -> str:
    """Shell: the patch ladder of `envpool.patches.apply_patch` on the file `path` (without its
    Python-side normalisation), printing swebench's failure marker when nothing applies."""
    p = shlex.quote(path)
    return (f"git apply -v {p} || git apply -v --recount --ignore-whitespace {p} || "
            f"{{ patch --dry-run -p1 --batch --forward --fuzz=2 -i {p} && "
            f"patch -p1 --batch --forward --fuzz=2 --no-backup-if-mismatch -i {p}; }} || "
            f"{{ echo {shlex.quote(APPLY_FAILED)}; exit 1; }}")


def _tests_section(spec: EvalSpec) -> list[str]:
    tool = f"\"$SWEMINT_PY\" {statuslines.TOOL_PATH}"
    known = f"--known-file {EVAL_DIR}/known.txt"
    if spec.kind == "pytest":
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in pytest_env().items())
        log = f"{EVAL_DIR}/test.log"
        files = shlex.quote(",".join(spec.test_files))
        return [f"unset {' '.join(UNSET_ENV)}", f"export {exports}",
                f"rm -rf {PYTEST_RUN_DIR} && mkdir -p {PYTEST_RUN_DIR}",
                f"( {spec.test_command} ) 2>&1 | tee {log}", "SWEMINT_RC=$?",
                f"{tool} pytest --report {PYTEST_RUN_DIR}/report.jsonl --junit {PYTEST_RUN_DIR}/junit.xml "
                f"--log {log} --test-files {files} {known}",
                "(exit $SWEMINT_RC)"]
    report = spec.report_path or f"{EVAL_DIR}/output.log"
    lines = []
    if spec.report_path:
        lines += [f"rm -f {shlex.quote(spec.report_path)}", f"( {spec.test_command} )",
                  f"cat {shlex.quote(spec.report_path)}"]
    else:
        lines += [f"( {spec.test_command} ) 2>&1 | tee {shlex.quote(report)}"]
    import json

    lines += [f"{tool} poly --parser {shlex.quote(spec.parser)} --options "
              f"{shlex.quote(json.dumps(spec.parser_options, sort_keys=True))} --input {shlex.quote(report)} {known}",
              "(exit 0)"]
    return lines


def render_eval_script(spec: EvalSpec) -> str:
    """The row's `eval_script` (bash; SWE-bench v5 runs it as /eval.sh in the row's image after
    applying the model patch). See the module docstring for its steps."""
    exports = [f"export {k}={shlex.quote(v)}" for k, v in sorted(spec.env.items())]
    lines = ["#!/bin/bash", "set -uxo pipefail",
             f"# swemint eval script ({statuslines.FORMAT}, log_parser {statuslines.LOG_PARSER}): "
             f"{spec.instance_id}",
             *exports,
             "cd /testbed",
             reset_test_files(spec.test_patch),
             f"mkdir -p {EVAL_DIR}",
             heredoc(f"{EVAL_DIR}/test.patch", spec.test_patch, "TEST_PATCH"),
             apply_test_patch(f"{EVAL_DIR}/test.patch"),
             heredoc(f"{EVAL_DIR}/known.txt", "\n".join(spec.known), "KNOWN"),
             "SWEMINT_PY=$(command -v python3 || command -v python || echo python3)",
             # no xtrace from here on: a traced `echo '>>>>> Start ...'` line would put a second
             # start marker in the log, and swebench cuts between the first two
             "{ set +x; } 2>/dev/null",
             f"echo {shlex.quote(START)}",
             *_tests_section(spec),
             f"echo {shlex.quote(END)}",
             reset_test_files(spec.test_patch)]
    return "\n".join(line for line in lines if line) + "\n"

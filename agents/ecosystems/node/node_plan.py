"""The plan from an analysis: install commands per package manager and the test command with
a machine-readable report."""

from __future__ import annotations

import shlex
from pathlib import Path, PurePosixPath


from agents.ecosystems.base import PolyPlan
from agents.ecosystems.node.ava import ava_command
from agents.ecosystems.node.builtin_runner import node_test_command
from agents.ecosystems.node.runner import NODE_TEST
from agents.ecosystems.node.decisions import NodeAnalysis
from agents.ecosystems.node.karma import setup_commands as karma_setup, test_command as karma_test
from agents.ecosystems.node.build import rebuild_guard, setup_commands as build_setup, snapshot_build
from agents.ecosystems.node.runner_timeouts import limit_option
from agents.ecosystems.node.manifest import recipe
from envpool.toolchains import ToolchainChoice
from envpool.toolchains.node_image import NODE_PATH_ENV

REPORT_PATH = "/tmp/swemint-node/report.json"
"""Where vitest/jest write their JSON report (inside the test container)."""


# -- plan ---------------------------------------------------------------------------------------

def rebuild_skipped_scripts() -> str:
    """Shell: when install scripts are off (a repair's `npm config set ignore-scripts true`), the
    install script of every other installed package, one by one (`recipes/node-rebuild-skipped.js`);
    nothing otherwise. Never fails."""
    script = (Path(__file__).parents[1] / "recipes" / "node-rebuild-skipped.js").read_text()
    return (f"if [ \"$(npm config get ignore-scripts)\" = true ]; then node -e {shlex.quote(script)}; "
            "else echo 'swemint: install scripts ran'; fi")


def _install_commands(a: NodeAnalysis) -> list[str]:
    cmds: list[str] = []
    if a.pm == "pnpm":
        cmds.append(f"npm install -g --no-audit --no-fund pnpm@{a.pm_version or 'latest'} && pnpm --version")
        cmds.append("pnpm install --frozen-lockfile" if a.lockfile else "pnpm install")
    elif a.pm == "yarn":
        cmds.append("yarn install --frozen-lockfile --non-interactive --network-timeout 600000"
                    if a.lockfile else "yarn install --non-interactive --network-timeout 600000")
    elif a.pm == "yarn-berry":
        if not a.yarn_path:  # a vendored release (.yarnrc.yml yarnPath) is run by yarn 1 itself
            cmds.append("npm install -g --no-audit --no-fund corepack@latest && rm -f /opt/node/bin/yarn "
                        "/opt/node/bin/yarnpkg /usr/local/bin/yarn /usr/local/bin/yarnpkg && "
                        "corepack enable --install-directory /opt/node/bin yarn && "
                        f"corepack prepare yarn@{a.pm_version or 'stable'} --activate && yarn --version")
        cmds.append("yarn install --immutable" if a.lockfile else "yarn install")
    else:
        cmds.append("npm ci --no-audit --no-fund" if a.lockfile else "npm install --no-audit --no-fund")
    if a.pm in ("npm", "yarn"):
        cmds.append(rebuild_skipped_scripts())
    if a.extra_packages:
        pkgs = " ".join(shlex.quote(p) for p in a.extra_packages)
        if a.pm == "npm":
            cmds.append(f"npm install --no-save --no-audit --no-fund {pkgs}")
        else:
            lock = a.lockfile or "package.json"
            add = {"pnpm": f"pnpm add -D -w {pkgs}", "yarn": f"yarn add -D -W --non-interactive {pkgs}",
                   "yarn-berry": f"yarn add -D {pkgs}"}[a.pm]
            cmds.append(f"cp package.json /tmp/swemint-package.json && cp {lock} /tmp/swemint-lock && "
                        f"{{ {add}; rc=$?; cp /tmp/swemint-package.json package.json; cp /tmp/swemint-lock {lock}; "
                        f"exit $rc; }}")
    if a.build:
        cmds += build_setup(a.build)
    if a.karma:
        cmds += karma_setup(a.karma)
    return cmds


def _bin_path(a: NodeAnalysis) -> str:
    dirs = ["$PWD/node_modules/.bin"] + (["/testbed/node_modules/.bin"] if a.runner_dir else [])
    return ":".join(dirs) + ":$PATH"


def test_command(a: NodeAnalysis) -> tuple[str, str | None, str]:
    """(bash command run in /testbed, report path or None = its output, parser name)."""
    cd = f"cd {shlex.quote(a.runner_dir)} && " if a.runner_dir else ""
    build = rebuild_guard(a.build) if a.build else ""
    prefix = f"{build}{cd}mkdir -p {PurePosixPath(REPORT_PATH).parent} && export PATH={_bin_path(a)} && "
    rel = [str(PurePosixPath(f).relative_to(a.runner_dir)) if a.runner_dir else f for f in a.test_files]
    files = " ".join(shlex.quote(f) for f in rel)
    env = "".join(f"{k}={shlex.quote(v)} " for k, _, v in (e.partition("=") for e in a.runner_env))
    berry = a.pm == "yarn-berry"
    run = (lambda b: f"yarn {b}") if berry else (lambda b: b)
    opts = " ".join([*(shlex.quote(o) for o in a.runner_options),
                     *([limit_option(a.runner)] if a.per_test_limit else [])])  # shell text: not quoted
    opts = f"{opts} " if opts else ""
    if a.runner == NODE_TEST:  # each file from its package's directory, TAP named per file
        files_dirs = [(f, a.file_dirs.get(f, "")) for f in a.test_files]
        return (f"{build}export PATH={_bin_path(a)} && {node_test_command(files_dirs, a.dir_options, a.runner_env)}",
                None, "node_tap")
    if a.runner == "karma" and a.karma:
        return f"{prefix}{karma_test(a.karma, a.test_files, REPORT_PATH)}", REPORT_PATH, "karma_json"
    start = " ".join(shlex.quote(w) for w in a.launcher) if a.launcher else ""
    if a.runner == "vitest":
        return (f"{prefix}{env}{start or run('vitest')} run {opts}{files} --reporter=json --outputFile={REPORT_PATH}",
                REPORT_PATH, "vitest_json")
    if a.runner == "jest":
        jest = f"{run(a.cra)} test --watchAll=false" if a.cra else (start or run("jest"))
        return (f"{prefix}{env}{jest} {opts}--json --outputFile={REPORT_PATH} --runTestsByPath {files}",
                REPORT_PATH, "jest_json")
    if a.runner == "ava":
        # AVA treats files named `_*` as helpers, not tests; named on its command line they run as
        # tests and fail with "No tests found in ..." (chalk-359's test/_fixture.js)
        ava_files = " ".join(shlex.quote(f) for f in rel if not PurePosixPath(f).name.startswith("_")) or files
        return f"{prefix}{ava_command(env + run('ava'), opts + ava_files)}", None, "ava_tap"
    return (f"{prefix}{env}{start or run('mocha')} {opts}--reporter json {files}", None, "mocha_json")


def _start(a: NodeAnalysis) -> str:
    """The words that start the runner in `test_command` with the options taken from the
    project's script (``jest --runInBand``, ``yarn vitest``, a launcher)."""
    start = " ".join(shlex.quote(w) for w in a.launcher) if a.launcher else \
        (f"yarn {a.runner}" if a.pm == "yarn-berry" else a.runner)
    opts = " ".join(shlex.quote(o) for o in a.runner_options)
    return f"{start} {opts}".strip()


def script_command(plan: PolyPlan) -> str | None:
    """`plan`'s test command with its runner started through the package's own test script
    (``npm run test -- <the runner's arguments>``: wrappers, flags, options and environment the
    script sets apply, so the options taken from it are not given twice), or None when the plan has no such script (jest only: its arguments follow the
    script's own)."""
    st = plan.state
    start, script = st.get("start"), st.get("script")
    marker = f"{start} "
    if not (start and script and st.get("runner") == "jest") or marker not in plan.test_command:
        return None
    pm = {"npm": "npm run", "pnpm": "pnpm run", "yarn": "yarn run", "yarn-berry": "yarn run"}.get(st.get("pm"), "npm run")
    return plan.test_command.replace(marker, f"{pm} {shlex.quote(script)} -- ", 1)


def build_plan(a: NodeAnalysis, choice: ToolchainChoice) -> PolyPlan:
    """The PolyPlan for analysis `a` on toolchain image `choice` (pure)."""
    env = {str(k): str(v) for k, v in recipe()["env"].items()}
    env["PATH"] = NODE_PATH_ENV
    command, report, parser = test_command(a)
    pm = f"{a.pm} {a.pm_version}" if a.pm_version else a.pm
    # compile once (`NodeEcosystem.build_command`): for test commands that hold this guard
    build = {"build_command": snapshot_build(a.build), "rebuild_guard": rebuild_guard(a.build)} if a.build else {}
    return PolyPlan(ecosystem="node", toolchain=f"node {choice.version}", image=choice.image, route=choice.route,
                    substitutions=[*choice.substitutions, *a.substitutions],
                    setup_commands=_install_commands(a), env=env, test_command=command, parser=parser,
                    report_path=report, test_files=list(a.test_files),
                    state={"pm": a.pm, "lockfile": a.lockfile, "runner": a.runner, "script": a.script_name,
                           "start": _start(a), **build},
                    notes=[*a.notes, f"package manager: {pm}" + (f" ({a.lockfile})" if a.lockfile else ""),
                           f"runner: {a.runner}" + (f" in {a.runner_dir}" if a.runner_dir else "")])



"""`analyze`: the decisions for one instance (package manager, Node, runner, test files, extra
packages), pure: it reads the tree only."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date, datetime

import yaml

from agents.models import Instance
from agents.ecosystems.node.runner_timeouts import FLAGS as LIMIT_FLAGS, own_timeout, takes_option
from agents.ecosystems.node.build import BuildStep, build_step
from agents.ecosystems.node.karma import KarmaSetup, karma_covers, karma_setup
from agents.ecosystems.node.manifest import added_dependencies, package_deps, package_manager, read_json
from agents.ecosystems.node.builtin_runner import node_test_invocation
from agents.ecosystems.node.runner import (NODE_TEST, data_test_files, fixture_test_files, glob_regex, has_config, mocha_spec_globs,
                                         package_dir, root_vitest_projects, runner_launcher, runner_of, runner_options,
                                         select_test_files, snapshot_test_files)
from agents.ecosystems.node.version import choose_node
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.errors import EnvBuildError
from envpool.toolchains import version_key


@dataclass
class NodeAnalysis:
    """What `analyze` found for one instance.

    - `pm`: ``npm`` | ``yarn`` | ``yarn-berry`` | ``pnpm``; `pm_version`: exact or major (``9.7.0``,
      ``8``) or None (the image's npm / yarn v1); `lockfile`: its path or None;
    - `node_request`: what to ask `ensure_image` for (a version or major); `node_reason`: why;
    - `runner`: ``vitest`` | ``jest`` | ``mocha`` | ``ava`` | ``karma`` | ``node-test`` (Node's
      own ``node --test``); `runner_dir`: where to run it ("" = root);
      `runner_options`: options taken from the project's script; `per_test_limit`: the runner gets
      its timeout option at the JS per-test limit (`agents.ecosystems.node.runner_timeouts`: the project
      sets none and the runner takes it); `runner_env`: ``VAR=value``
      assignments that script sets; `launcher`: how the script starts the runner when it runs it
      through Node with flags (``node --experimental-vm-modules node_modules/jest/bin/jest.js``),
      used instead of the bare runner; `script_name`: the package script (``test``) that runs the
      runner, for the loop's `ci_command` move; `cra`: jest is run through react-scripts (or craco);
    - `yarn_path`: yarn berry's vendored release (``.yarnrc.yml`` ``yarnPath``), run by yarn 1;
    - `test_files`: touched test files (repository relative);
    - `extra_packages`: ``name@range`` the patch/test_patch adds to the root package.json;
    - `file_dirs`, `dir_options` (runner ``node-test`` only): each test file's package directory
      (nearest package.json, "" = root) and the Node flags of each such package's
      ``node --test`` script (the root's when it has none; `agents.ecosystems.node.builtin_runner`);
    - `karma`: the karma route (`agents.ecosystems.node.karma`) when `runner` is ``karma``;
    - `build`: the repository's own build step before tests (`agents.ecosystems.node.build`),
      None when no workspace package needs one;
    - `substitutions`, `notes`: human-readable records.
    """

    pm: str
    pm_version: str | None
    lockfile: str | None
    node_request: str
    node_reason: str
    runner: str
    runner_dir: str
    test_files: list[str]
    runner_options: list[str] = field(default_factory=list)
    per_test_limit: bool = False
    runner_env: list[str] = field(default_factory=list)
    launcher: list[str] = field(default_factory=list)
    script_name: str | None = None
    cra: str | None = None
    yarn_path: str | None = None
    extra_packages: list[str] = field(default_factory=list)
    build: BuildStep | None = None
    karma: KarmaSetup | None = None
    file_dirs: dict[str, str] = field(default_factory=dict)
    dir_options: dict[str, list[str]] = field(default_factory=dict)
    substitutions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# -- analysis -----------------------------------------------------------------------------------

def _covered(files: list[str], script: str | None, runner_dir: str) -> bool:
    """Whether some touched file is inside the mocha script's spec globs (a script without globs
    runs ./test: all are; no script -- mocha only a dependency, as karma-mocha needs -- none)."""
    if script is None:
        return False
    globs = [glob_regex(g) for g in mocha_spec_globs(script)]
    base = f"{runner_dir}/" if runner_dir else ""
    return not globs or any(g.match(f[len(base):]) or any(f[len(base):].startswith(x.rstrip("/") + "/")
                                                         for x in mocha_spec_globs(script))
                            for f in files for g in globs)


def _commit_day(tree, instance: Instance) -> date | None:
    try:
        return tree.commit_time.date()
    except Exception:
        created = instance.created
        return created.date() if isinstance(created, datetime) else None


def analyze(tree, instance: Instance, touched: list[str]) -> NodeAnalysis:
    """Decide package manager, Node, runner, test files and extra packages for `instance`.

    `tree`: an `agents.gitrepo.GitTree` (or anything with `files`, `exists`, `read`,
    `commit_time`). Raises EnvBuildError when there is no root package.json, no touched test
    file, or no supported runner (vitest, jest, mocha, ava, node --test)."""
    iid = instance.instance_id
    pkg = read_json(tree, "package.json")
    if not pkg:
        raise EnvBuildError("no readable package.json at the repository root", instance_id=iid)
    pm, pm_version, lockfile, notes = package_manager(tree, pkg)
    request, reason, subs = choose_node(tree, pkg, pm, pm_version, lockfile, _commit_day(tree, instance))
    notes.append(f"node {request}: {reason}")
    files = select_test_files(touched)
    snapshots = [f for f in snapshot_test_files(tree, touched) if f not in files]
    if snapshots:  # a test_patch that changes a snapshot: the test file that reads it runs
        files += snapshots
        notes.append(f"touched snapshots are read by {', '.join(snapshots[:5])}")
    if not files:
        files = fixture_test_files(tree, touched)
        if files:
            notes.append(f"touched fixtures run by {', '.join(files[:5])}")
    if not files:  # data the tests read (a baseline, a fixture): the test files that name it
        named = data_test_files(tree, touched)
        files = [t for t, _ in named]
        if files:
            notes.append("touched data read by " + ", ".join(f"{t} (names {d})" for t, d in named[:5]))
    if not files:
        raise EnvBuildError(f"test_patch touches no JS/TS test file ({', '.join(touched[:5])})", instance_id=iid)
    # the runner: the root's when it has one, else the touched files' workspace package's
    runner, script, cra = runner_of(pkg, tree, "")
    runner_dir = ""
    pkg_dirs = {package_dir(tree, f) for f in files} - {""}
    if len(pkg_dirs) == 1:
        d = next(iter(pkg_dirs))
        sub = read_json(tree, f"{d}/package.json")
        r2, s2, c2 = runner_of(sub, tree, d)
        root_configured = runner is not None and (script is not None or has_config(tree, pkg, "", runner))
        projects = root_vitest_projects(tree) if runner == "vitest" and root_configured else None
        if projects is not None:
            notes.append(f"vitest run from the root: {projects} declares its projects")
        elif r2 is not None and (not root_configured or (s2 is not None and has_config(tree, sub, d, r2))):
            runner, script, cra, runner_dir = r2, s2, c2, d
            notes.append(f"{r2} run from workspace package {d}")
    karma = karma_setup(tree, pkg)
    if karma is not None and karma_covers(tree, karma, files) is not False and \
            (runner is None or (runner == "mocha" and not _covered(files, script, runner_dir))):
        notes.append(f"karma ({karma.config}, {karma.browser}): the touched specs are no Node runner's")
        runner, runner_dir, cra = "karma", "", None
    if runner is None:
        deps = package_deps(pkg)
        other = [r for r in ("karma", "tap", "jasmine", "qunit", "uvu", "tape") if r in deps]
        raise EnvBuildError("no supported JS test runner (vitest, jest, mocha, ava, node --test) in package.json"
                            + (f"; found {', '.join(other)}" if other else ""), instance_id=iid)
    file_dirs: dict[str, str] = {}
    dir_options: dict[str, list[str]] = {}
    if runner == NODE_TEST:  # Node's own runner: its flags per package (`builtin_runner`), Node >= 18
        opts, env_assign = node_test_invocation(script) or ([], [])
        file_dirs = {f: package_dir(tree, f) for f in files}
        dir_options = {"": opts}
        for d in set(file_dirs.values()) - {""}:
            _r, s_d, _c = runner_of(read_json(tree, f"{d}/package.json"), tree, d)
            own = node_test_invocation(s_d) if _r == NODE_TEST else None
            dir_options[d] = own[0] if own else opts
        major = version_key(request)[:1]
        if major and major[0] < 18:
            subs.append(f"node {request} raised to 18: node --test (the node:test module) needs Node >= 18")
            request, reason = "18", f"{reason}; raised to 18 for node --test"
            notes.append("node 18: node --test needs it")
    else:
        opts, env_assign = runner_options(script, runner) if not cra and runner != "karma" else ([], [])
    launcher = runner_launcher(script, runner) if not cra and runner != "karma" else []
    scripts = (read_json(tree, f"{runner_dir}/package.json") if runner_dir else pkg).get("scripts") or {}
    script_name = "test" if script is not None and isinstance(scripts, dict) and \
        isinstance(scripts.get("test"), str) and runner in scripts["test"] else None
    if launcher:
        notes.append(f"{runner} started as the project's script starts it: {' '.join(launcher)}")
    if runner == "mocha":
        # touched files outside the script's spec globs belong to another runner (karma specs)
        globs = [glob_regex(g) for g in mocha_spec_globs(script)]
        base = f"{runner_dir}/" if runner_dir else ""
        inside = [f for f in files if any(g.match(f[len(base):]) for g in globs)]
        if globs and inside and len(inside) < len(files):
            notes.append(f"left out (not mocha specs by the test script): {', '.join(sorted(set(files) - set(inside)))}")
            files = inside
    extra: list[str] = []
    for text in (instance.test_patch, instance.patch):
        extra += added_dependencies(text, pkg)
    extra = list(dict.fromkeys(extra))
    if extra:
        notes.append(f"installed for the patched package.json: {', '.join(extra)}")
    runner_pkg = read_json(tree, f"{runner_dir}/package.json") if runner_dir else pkg
    per_test_limit = False  # the runner's timeout option at the JS per-test limit (`node.runner_timeouts`)
    if runner in LIMIT_FLAGS:
        own = own_timeout(tree, [runner_pkg, pkg], runner, runner_dir, opts)
        if own:
            notes.append(f"{runner} keeps the project's own per-test timeout ({own})")
        elif not takes_option(runner, {**package_deps(pkg), **package_deps(runner_pkg)}, cra):
            notes.append(f"{runner} keeps its default per-test timeout (no declared version known to take "
                         f"{LIMIT_FLAGS[runner].split('=')[0].split()[0]})")
        else:
            per_test_limit = True
    mocha_spec = package_deps(read_json(tree, f"{runner_dir}/package.json") if runner_dir else pkg).get("mocha") or \
        package_deps(pkg).get("mocha", "")
    mocha_major = version_key(re.sub(r"^[\^~>=<v\s]+", "", mocha_spec))[:1]
    if runner == "mocha" and "--exit" not in opts and not (mocha_major and mocha_major[0] < 4):
        opts.append("--exit")  # mocha >= 4 waits for open handles (servers) otherwise
    build = build_step(tree, pkg, pm, runner)
    if build:
        notes.append(f"build before tests: {build.command} ({build.source}; {build.reason})")
    yarn_path = None
    if pm == "yarn-berry":
        try:
            rc = load_untrusted_yaml(tree.read(".yarnrc.yml") or "") or {}
        except yaml.YAMLError:
            rc = {}
        yarn_path = str(rc.get("yarnPath")) if isinstance(rc, dict) and rc.get("yarnPath") else None
    return NodeAnalysis(file_dirs=file_dirs, dir_options=dir_options, pm=pm, pm_version=pm_version, lockfile=lockfile, node_request=request, yarn_path=yarn_path,
                        node_reason=reason, runner=runner, runner_dir=runner_dir, test_files=files,
                        runner_options=opts, per_test_limit=per_test_limit, runner_env=env_assign, launcher=launcher, script_name=script_name, cra=cra, extra_packages=extra, build=build,
                        karma=karma if runner == "karma" else None,
                        substitutions=subs, notes=notes)



"""Which repository paths are test code or test infrastructure: the one rule set and its reader.

The rules are data, `envpool/testpaths.yaml` (its header says what each key means): per group
(`common`, `python`, `go`, `rust`, `java`, `js`, `cfamily`, `php`, `ruby`, ...) test folders
(`dirs`), whole-path globs (`paths`), test-module names (`names`), test-infrastructure names
(`support`: runner configuration, plugins, set-up files) and shared configuration files whose
runner sections count (`config`). A row's language picks its groups (`languages`; no language:
every group). Everything that asks "is this a test path?" reads these rules:

- the sources' split of a PR diff into `patch` / `test_patch` (`envpool.patches.split_by_rules`,
  as SWE-bench's collection puts every test file, helpers and fixtures included, in the
  test_patch);
- the minter's refusal of a `patch` that edits test code or test infrastructure (outcome
  `invalid_task`, `envpool.patches.test_paths_in`);
- the reset of every test path to the base tree before the test_patch is applied on the graded
  side (`reset_tree`, run in the sandbox by the status tool: the minter's after side, `swemint
  eval`, a row's test_command and exported eval script), the SWE-bench harness's reset of the
  test files generalised to every test path;
- the ecosystems' choice of test files (`is_test_file`, `in_test_dir`), and where an ecosystem
  means something narrower than "a test path" -- the test modules pytest is handed, the classes
  Surefire runs, the scripts a C project's test units run -- a named `role` of its group
  (`role(group, name)`, `Role`): ordered include/exclude entries in the same file.

This module is stdlib only: the status tool every environment image carries
(`envpool.testrun.statuslines`, `python3 -I -S` >= 3.9) packs it with the rules as JSON and runs
the reset there (`swemint-status.pyz reset-tests`, `reset_main`), classifying paths with the same
code as the host. Reading the YAML (`rule_data`) needs PyYAML, host only.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import json
import os
import re
import subprocess
import sys
import time
from collections import Counter
from pathlib import PurePosixPath

RULES_FILE = os.path.join(os.path.dirname(os.path.abspath(globals().get("__file__", "."))), "testpaths.yaml")
"""The rule set (YAML). (`globals().get`: inside a sandbox this source runs without a file.)"""

KINDS = ("dirs", "paths", "names", "support", "modules", "deps", "config", "roles", "tooling")
"""The keys a group may have."""

MATCHERS = ("dirs", "paths", "names", "stems", "suffixes")
"""The keys of a role entry's matcher (`Role`)."""

TOOLING_KEYS = ("dirs", "names", "paths")
"""The keys of a group's `tooling`: files that configure how the project is built or how its tests
run and report (`TestPathRules.is_tooling`)."""

DEPENDENCY_DIRS = ("node_modules", "vendor", "bower_components", ".bundle", "target", ".gradle", ".venv",
                   "venv", "__pycache__", ".tox", ".nox", ".git")
"""Folders of installed dependencies and build output: untracked files there older than the
image's stamp came with the environment image (a package's own `test/` folder under
node_modules) and stay; one newer than the stamp came from a patch, and the reset refuses to
grade (`changed_test_paths`)."""

STAMP = ".git/swemint-image-stamp"
"""A file (relative to /testbed) whose modification time is when the environment image was
committed (`agents.envimage.commit_image` touches it): an untracked file newer than it came
after the image (a patch), an older one with the image (the build)."""


def outside_stamp(root: str) -> str:
    """The image stamp beside the work tree `root` (`/.testbed.swemint-image-stamp` for /testbed),
    which the reset reads before `STAMP`: a patch cannot write there (`git apply` and `patch -p1`
    refuse absolute paths and `..`), while `patch -p1` rewrote `.git/swemint-image-stamp` (the
    SWE-bench harness falls back to it for a path `git apply` refuses) so that a conftest.py the
    same patch added read as the build's. Images made before it carry only `STAMP`."""
    real = os.path.realpath(root)
    return os.path.join(os.path.dirname(real), "." + os.path.basename(real) + ".swemint-image-stamp")


IMAGE_STAMP = "/.testbed.swemint-image-stamp"
"""`outside_stamp("/testbed")`: what `agents.envimage.commit_image` writes into every image."""

GIT_SAFE = ("-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false")
"""Options of every git command the reset runs: no hook and no file-system monitor runs (a hook
a patch put in .git would run at the reset's own `git checkout` and could write test files back
after it)."""

_COMMAND_CONFIG = re.compile(r"^(filter\..*\.(clean|smudge|process)|(diff|merge)\..*\.(command|textconv|driver)|"
                             r"include\.path|includeif\..*|core\.(worktree|sshcommand|gitproxy|"
                             r"pager|editor|askpass))$")
"""Keys of a repository's own git configuration that make git run a command or read other files:
the reset refuses to run with one (`command_config`). Not `core.hooksPath` / `core.fsmonitor`:
every git command of the reset overrides both (`GIT_SAFE`), and a repository's own set-up sets
the first (husky's `prepare` script, run by `npm install`, writes `core.hooksPath=.husky`): refusing
it left axios' rows ungraded (`tests_not_run`)."""


STAMP_MARGIN_NS = 2_000_000_000
"""An untracked file counts as newer than the `STAMP` only past this margin (ns): the stamp's time
has whole seconds (a tar member's), a build output of the same second is the image's."""


def wait_past_stamp(stamped: float, now=time.time, sleep=time.sleep) -> float:
    """Sleep until the clock is past `stamped` (seconds since the epoch: an upper bound of the
    `STAMP`'s mtime) by `STAMP_MARGIN_NS` plus one second, so that any file a patch writes in a
    container of the image afterwards is newer than the stamp past the margin (the reset then
    removes it; within the margin it would read as the build's). Returns the seconds slept
    (0.0 when the time has passed: a commit usually takes longer than the margin)."""
    wait = stamped + STAMP_MARGIN_NS / 1e9 + 1.0 - now()
    if wait > 0:
        sleep(wait)
        return wait
    return 0.0


class RuleSetError(ValueError):
    """The rule data is malformed (an unknown key, group or language, a bad pattern)."""


def rule_data(path: str | None = None) -> dict:
    """The rule set as a dict {"languages": {language: [group]}, "groups": {group: {kind: ...}}},
    read from `path` (default `RULES_FILE`) and checked (`check_rule_data`). Raises RuleSetError
    for a malformed file, OSError when it cannot be read. Needs PyYAML."""
    import yaml

    with open(path or RULES_FILE, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    check_rule_data(data)
    return data


def check_rule_data(data: object) -> None:
    """Raise RuleSetError unless `data` has the shape `rule_data` documents: known kinds, lists
    of strings, config entries with `files` and regexes that compile, languages naming groups."""
    if not isinstance(data, dict) or not isinstance(data.get("groups"), dict):
        raise RuleSetError("the test-path rules need a `groups` mapping")
    for name, group in data["groups"].items():
        if not isinstance(group, dict) or set(group) - set(KINDS):
            raise RuleSetError(f"group {name!r}: unknown keys {sorted(set(group or {}) - set(KINDS))}")
        for kind in ("dirs", "paths", "names", "support", "modules", "deps"):
            if not all(isinstance(x, str) and x for x in group.get(kind, [])):
                raise RuleSetError(f"group {name!r}: {kind} must be a list of non-empty strings")
        for entry in group.get("config", []):
            if not isinstance(entry, dict) or not entry.get("files") or \
                    set(entry) - {"files", "lines", "sections", "headers", "keys"} or \
                    entry.get("headers", "ini") not in HEADERS:
                raise RuleSetError(f"group {name!r}: a config entry needs `files`, and only `lines`, `sections`, "
                                   f"`keys`, `headers` ({sorted(HEADERS)})")
            if not all(isinstance(k, str) and k and all(k.split(".")) for k in entry.get("keys", [])):
                raise RuleSetError(f"group {name!r}: config keys are dotted JSON/TOML key globs (`jest`, `scripts.test*`)")
            for rx in entry.get("lines", []) + entry.get("sections", []):
                try:
                    re.compile(rx)
                except re.error as e:
                    raise RuleSetError(f"group {name!r}: bad regex {rx!r}: {e}") from e
        tooling = group.get("tooling", {})
        if not isinstance(tooling, dict) or set(tooling) - set(TOOLING_KEYS) or not all(
                isinstance(v, list) and all(isinstance(x, str) and x for x in v) for v in tooling.values()):
            raise RuleSetError(f"group {name!r}: tooling maps some of {list(TOOLING_KEYS)} to lists of non-empty "
                               "strings")
        roles = group.get("roles", {})
        if not isinstance(roles, dict):
            raise RuleSetError(f"group {name!r}: roles must map a role name to its entries")
        for rname, entries in roles.items():
            _check_role(f"group {name!r} role {rname!r}", entries)
    for lang, groups in (data.get("languages") or {}).items():
        unknown = [g for g in groups if g not in data["groups"]]
        if unknown:
            raise RuleSetError(f"language {lang!r} names unknown groups {unknown}")


def _check_role(where: str, entries: object) -> None:
    """Raise RuleSetError unless `entries` is a non-empty list of {include|exclude: matcher},
    each matcher a non-empty mapping of `MATCHERS` keys to lists of non-empty strings."""
    if not isinstance(entries, list) or not entries:
        raise RuleSetError(f"{where}: a role is a non-empty list of include/exclude entries")
    for entry in entries:
        if not isinstance(entry, dict) or len(entry) != 1 or next(iter(entry)) not in ("include", "exclude"):
            raise RuleSetError(f"{where}: each entry is one `include:` or `exclude:` mapping, not {entry!r}")
        matcher = next(iter(entry.values()))
        if not isinstance(matcher, dict) or not matcher or set(matcher) - set(MATCHERS):
            raise RuleSetError(f"{where}: a matcher has some of the keys {list(MATCHERS)}, not {matcher!r}")
        for key, values in matcher.items():
            if not isinstance(values, list) or not values or not all(isinstance(x, str) and x for x in values):
                raise RuleSetError(f"{where}: {key} must be a non-empty list of non-empty strings")


def _glob_regex(glob: str) -> str:
    """A path glob as a regex: `**/` any folders (or none), `**` anything, `*` and `?` within one
    path component, `[...]` as in fnmatch."""
    out, i = [], 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return "".join(out)


def _key_values(doc, parts: list[str]) -> list:
    """The values of a JSON (or TOML) document at a dotted key path whose parts are globs (sorted
    by key)."""
    found = [doc]
    for part in parts:
        found = [v[k] for v in found if isinstance(v, dict) for k in sorted(v) if fnmatch.fnmatchcase(k, part)]
    return [json.dumps(v, sort_keys=True, default=str) for v in found]


def _toml_reader():
    """`tomllib.loads` (or tomli's), or None where neither is there: the status tool runs on the
    image's python3 (>= 3.9, stdlib only)."""
    try:
        import tomllib
        return tomllib.loads
    except ImportError:
        pass
    try:
        import tomli  # type: ignore[import-not-found]
        return tomli.loads
    except ImportError:
        return None


def _parse_doc(text: str, toml: bool):
    """A configuration file's text as data ({} for an empty text); ValueError when it is not JSON
    / TOML, LookupError when no TOML reader is there."""
    if not text.strip():
        return {}
    if not toml:
        return json.loads(text)
    loads = _toml_reader()
    if loads is None:
        raise LookupError("no TOML reader")
    try:
        return loads(text)
    except Exception as e:  # tomllib.TOMLDecodeError is a ValueError; tomli's too, old ones not
        raise ValueError(str(e)) from e


def _any_regex(patterns) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in sorted(patterns)) or "(?!)")


HEADERS = {
    "ini": re.compile(r"^\s*\[[^\]]+\]+\s*([#;].*)?$"),
    "make": re.compile(r"^[^\s#=:][^=:]*::?(?!=)"),
}
"""Section headers by a config entry's `headers` style: INI/TOML `[name]` lines (default), or
Makefile target lines (`name: deps`, not `X := y`)."""


class ConfigRule:
    """One `config` entry: which files (`files`, name globs) and what in their changes counts
    (`lines`: a changed line matches; `sections`: the change lies below a section header --
    `headers` style, `HEADERS` -- that matches; `keys`: a JSON file's value at one of these
    dotted key paths differs, each part a glob: `jest`, `scripts.test*` -- wherever in the file
    the change sits, which a changed line alone cannot tell: a `"testResultsProcessor"` added
    deep inside `"jest"`)."""

    def __init__(self, files, lines=(), sections=(), headers="ini", keys=()):
        self.files = list(files)
        self.lines = _any_regex(lines) if lines else None
        self.sections = _any_regex(sections) if sections else None
        self.header = HEADERS[headers]
        self.keys = [k.split(".") for k in keys]
        self.toml = bool(self.files) and all(g.endswith(".toml") for g in self.files)

    def changed(self, old: str, new: str) -> bool:
        """True when the file's text going from `old` to `new` changes runner configuration: a
        `hit` among the changes with the whole old text above each (`line_changes`: a section
        header far above a change still counts), or a `keys` value that differs (a text that is
        not JSON -- TOML for an entry whose files are `*.toml`: the document as TOML readers see
        it, so `[ tool . "pytest" ]` and a dotted `tool.pytest.ini_options.addopts = ...` count
        as `tool.pytest*` --: every key counts as changed when the texts differ, and so does any
        difference of a TOML file where no TOML reader is there)."""
        if old == new:
            return False
        if self.hit(line_changes(old, new)):
            return True
        if not self.keys:
            return False
        try:
            a, b = _parse_doc(old, self.toml), _parse_doc(new, self.toml)
        except (ValueError, LookupError):
            return True
        return any(_key_values(a, k) != _key_values(b, k) for k in self.keys)

    def applies(self, name: str) -> bool:
        """True when a file named `name` is one of this entry's files."""
        return any(fnmatch.fnmatchcase(name, g) for g in self.files)

    def section(self, above) -> str:
        """The nearest section header among `above` (lines before a change, nearest last), or ""."""
        for line in reversed(above):
            if self.header.match(line):
                return line
        return ""

    def hit(self, changes) -> bool:
        """True when any change (lines above it, nearest last; its changed lines) changes runner
        configuration."""
        for above, lines in changes:
            if self.lines is not None and any(self.lines.search(x) for x in lines):
                return True
            if self.sections is not None and self.sections.search(self.section(above)):
                return True
        return False


class TestPathRules:
    """The compiled rules of some groups of the rule set.

    Args:
        data: the rule set (`rule_data()`'s shape; default the packaged one).
        groups: the groups to use (None: every group). Raises KeyError for an unknown group.
        extra_dirs / extra_names / extra_paths: added test folders, names and path globs
            (`pipeline.sources.crawl_config.SplitConfig`).
    """

    __test__ = False  # not a pytest test class

    def __init__(self, data: dict | None = None, groups=None, *, extra_dirs=(), extra_names=(), extra_paths=()):
        data = data if data is not None else packaged_rules()
        chosen = list(data["groups"]) if groups is None else list(groups)
        dirs, names, paths, support, modules = set(extra_dirs), set(extra_names), set(extra_paths), set(), set()
        tooling: dict[str, set[str]] = {k: set() for k in TOOLING_KEYS}
        deps: set[str] = set()
        self.config: list[ConfigRule] = []
        for g in chosen:
            rule = data["groups"][g]
            for k, values in (rule.get("tooling") or {}).items():
                tooling[k].update(values)
            dirs.update(rule.get("dirs", []))
            names.update(rule.get("names", []))
            paths.update(rule.get("paths", []))
            support.update(rule.get("support", []))
            modules.update(rule.get("modules", []))
            deps.update(d.lower() for d in rule.get("deps", []))
            self.config += [ConfigRule(c["files"], c.get("lines", []), c.get("sections", []),
                                       c.get("headers", "ini"), c.get("keys", [])) for c in rule.get("config", [])]
        self.groups = chosen
        self._dir_exact = {d.lower() for d in dirs if not any(c in d for c in "*?[")}
        self._dir_globs = sorted(d.lower() for d in dirs if d.lower() not in self._dir_exact)
        self._names = sorted(names)
        self._support = sorted(support)
        self._paths = _any_regex(_glob_regex(p) for p in paths)
        self._modules = frozenset(modules)
        self._tooling_dirs = sorted(d.lower() for d in tooling["dirs"])
        self._tooling_names = sorted(tooling["names"])
        self._tooling_paths = _any_regex(_glob_regex(p) for p in tooling["paths"])
        self._deps = frozenset(deps)

    def is_tooling(self, path: str) -> bool:
        """True when `path` (relative, `/`-separated) is a file that configures how the project is
        built or how its tests run and report (the groups' `tooling`: a folder of the path matches
        `dirs` -- any level, case-insensitive --, its file name `names`, or the whole path
        `paths`): a `.babelrc`, anything below `.cargo/`, a `*.config.*`, a Makefile, CMakeLists.txt,
        pom.xml, package.json, pyproject.toml... A fix's FAIL_TO_PASS must hold without its
        hunks there (`envpool.patches.tooling_split`, `agents.verification`)."""
        p = PurePosixPath(path)
        if not p.parts:
            return False
        if any(fnmatch.fnmatchcase(d.lower(), g) for d in p.parts[:-1] for g in self._tooling_dirs):
            return True
        return any(fnmatch.fnmatchcase(p.name, g) for g in self._tooling_names) or \
            bool(self._tooling_paths.fullmatch(path))

    def in_dependencies(self, path: str) -> bool:
        """True when a folder of `path` is a folder of installed dependencies (`deps`:
        node_modules, site-packages, .venv, ...; any level, any case): the test framework lives
        there, so a file a patch writes below one (a fake `expect` in
        node_modules/@jest/expect/node_modules/) changes what grades the patch."""
        return any(d.lower() in self._deps for d in PurePosixPath(path).parts[:-1])

    def shadows(self, path: str) -> bool:
        """True when `path` is a module at the work tree's top named as one of `modules` (the
        standard library, the runner and what it imports): `NAME.py`/`.pyc`/`.pyw`, an extension
        `NAME[.tag].so`/`.pyd`, or a package's `NAME/__init__.*` / `NAME/__main__.*`. `python -m
        pytest` runs with the work tree first on sys.path (and pytest's rootdir insertion puts it
        there too), so such a module is imported instead of the real one: `pytest/__main__.py`
        is the runner. The same below a top `src/` folder: pytest's rootdir insertion puts it
        first for tests inside a package there (src/pkg/tests/...), and a standard-library
        module imported after that (`import fractions` in a test) is then the fix's."""
        parts = PurePosixPath(path).parts
        if len(parts) > 1 and parts[0] == "src":
            parts = parts[1:]
        if len(parts) == 1:
            stem, _, ext = parts[0].partition(".")
            return stem in self._modules and ext.rsplit(".", 1)[-1] in ("py", "pyc", "pyw", "so", "pyd")
        return len(parts) == 2 and parts[0] in self._modules and parts[1].split(".")[0] in ("__init__", "__main__")

    def shadows_below(self, path: str, is_package) -> bool:
        """True when `path` is a module named as one of `modules` (`shadows`' shapes) in a folder
        below the top that is no package (`is_package(folder)` false: no `__init__.py` there).
        pytest's rootdir insertion puts the folder above a test's topmost package first on
        sys.path, and that can be any folder (lib/ for lib/calc/tests/test_x.py), so
        lib/fractions.py stood in for the standard library's fractions a test imports (h24c, trial
        8). A module of that name inside a package (pkg/json.py) is the package's own."""
        parts = PurePosixPath(path).parts
        if len(parts) >= 3 and parts[-1].split(".")[0] in ("__init__", "__main__"):
            folder, name = parts[:-2], parts[-2]
        elif len(parts) >= 2:
            folder, name = parts[:-1], parts[-1]
            stem, _, ext = name.partition(".")
            if ext.rsplit(".", 1)[-1] not in ("py", "pyc", "pyw", "so", "pyd"):
                return False
            name = stem
        else:
            return False
        return bool(folder) and name in self._modules and not is_package("/".join(folder))

    def in_test_dir(self, path: str) -> bool:
        """True when a folder of `path` is a test folder (`dirs`) or the path matches `paths`."""
        parts = PurePosixPath(path).parts
        for d in (p.lower() for p in parts[:-1]):
            if d in self._dir_exact or any(fnmatch.fnmatchcase(d, g) for g in self._dir_globs):
                return True
        return bool(self._paths.fullmatch(path))

    def is_test_file(self, path: str) -> bool:
        """True when the file name of `path` is a test module's (`names`: `test_*.py`,
        `*_test.go`, `FooTest.java`, `*.spec.ts`...)."""
        name = PurePosixPath(path).name
        return bool(name) and any(fnmatch.fnmatchcase(name, n) for n in self._names)

    def is_support(self, path: str) -> bool:
        """True when `path` is test infrastructure by its name (`support`: conftest.py,
        pytest.ini, jest.config.js, phpunit.xml, spec_helper.rb...) or a top-level module that
        stands in for one the runner imports (`shadows`)."""
        name = PurePosixPath(path).name
        return bool(name) and (any(fnmatch.fnmatchcase(name, n) for n in self._support) or self.shadows(path))

    def is_test(self, path: str) -> bool:
        """True when `path` (relative, `/`-separated) is test code, test data or test
        infrastructure by its path alone (`in_test_dir`, `is_test_file`, `is_support`)."""
        return bool(PurePosixPath(path).parts) and (
            self.in_test_dir(path) or self.is_test_file(path) or self.is_support(path))

    def config_rules(self, path: str) -> list[ConfigRule]:
        """The `config` entries that apply to `path` ([] for most files)."""
        name = PurePosixPath(path).name
        return [c for c in self.config if c.applies(name)]

    def config_hit(self, path: str, changes) -> bool:
        """True when changes of shared configuration file `path` touch runner configuration.
        `changes`: (lines above the change, nearest last; changed lines) per change, as
        `line_changes` or `envpool.patches.file_changes` make them."""
        return any(c.hit(changes) for c in self.config_rules(path))

    def config_changed(self, path: str, old: str, new: str) -> bool:
        """True when shared configuration file `path` going from text `old` (its base; "" for a
        file added) to `new` changes runner configuration (`ConfigRule.changed` of its entries):
        the judgement from both texts, which a diff's hunks alone cannot give (a `[tool:pytest]`
        header more lines above a change than the hunk's context, a key deep in package.json's
        `"jest"`)."""
        return any(c.changed(old, new) for c in self.config_rules(path))

    def kind(self, path: str) -> str | None:
        """"test" (a test module or anything in a test folder), "support" (test infrastructure
        by name), "config" (a shared configuration file with runner sections: only its changes
        decide) or None."""
        if self.in_test_dir(path) or self.is_test_file(path):
            return "test"
        if self.is_support(path) or self.in_dependencies(path):
            return "support"
        return "config" if self.config_rules(path) else None


class Role:
    """A named subset of paths one ecosystem asks for (a group's `roles` in the rule set): an
    ordered list of entries, each `include` or `exclude` with a matcher; the first entry whose
    matcher matches decides, a path no entry matches is not in the role. A matcher matches when
    every key it has matches (keys and their lists as in the groups):

    - `dirs`: a folder of the path (any level, case-insensitive, globs allowed) is one of these;
    - `paths`: the whole path matches one of these globs (`**` spans folders; case-sensitive);
    - `names`: the file name matches one of these globs (case-sensitive);
    - `stems`: the file name without its last extension (`FooTest` of `FooTest.java`) does;
    - `suffixes`: the path ends with one of these strings.

    Args:
        name: for messages, `group.role`.
        entries: the role's entries (`check_rule_data` has checked their shape).
    """

    def __init__(self, name: str, entries: list):
        self.name = name
        self.entries = [(kind == "include", _Matcher(m)) for e in entries for kind, m in e.items()]

    def matches(self, path: str) -> bool:
        """True when `path` (relative, `/`-separated) is in the role."""
        for include, matcher in self.entries:
            if matcher.matches(path):
                return include
        return False

    def select(self, paths) -> list[str]:
        """The paths of `paths` in the role, in their order."""
        return [p for p in paths if self.matches(p)]

    def pathspec_globs(self) -> list[str]:
        """The role as path globs for git's `:(glob)` pathspecs (same `**` meaning): only a role
        made of `include` entries with `paths` alone can be. Raises ValueError otherwise."""
        if not all(include and set(m.keys) == {"paths"} for include, m in self.entries):
            raise ValueError(f"test-path role {self.name}: only include entries with `paths` alone are git globs")
        return [g for _, m in self.entries for g in m.globs]


class _Matcher:
    """One role entry's matcher (`Role`'s keys)."""

    def __init__(self, spec: dict):
        self.keys = sorted(spec)
        dirs = [d.lower() for d in spec.get("dirs", [])]
        self.dir_exact = {d for d in dirs if not any(c in d for c in "*?[")}
        self.dir_globs = [d for d in dirs if d not in self.dir_exact]
        self.globs = list(spec.get("paths", []))
        self.paths = _any_regex(_glob_regex(p) for p in self.globs) if "paths" in spec else None
        self.names = spec.get("names")
        self.stems = spec.get("stems")
        self.suffixes = tuple(spec["suffixes"]) if "suffixes" in spec else None

    def matches(self, path: str) -> bool:
        p = PurePosixPath(path)
        if self.suffixes is not None and not path.endswith(self.suffixes):
            return False
        if self.names is not None and not any(fnmatch.fnmatchcase(p.name, g) for g in self.names):
            return False
        if self.stems is not None and not any(fnmatch.fnmatchcase(p.stem, g) for g in self.stems):
            return False
        if self.paths is not None and not self.paths.fullmatch(path):
            return False
        if self.dir_exact or self.dir_globs:
            folders = [d.lower() for d in p.parts[:-1]]
            if not any(d in self.dir_exact or any(fnmatch.fnmatchcase(d, g) for g in self.dir_globs)
                       for d in folders):
                return False
        return True


def role(group: str, name: str, data: dict | None = None) -> Role:
    """The role `name` of `group` in the rule set (`data`; default the packaged one, compiled
    once). Raises KeyError naming the group and role when the rule set has no such role."""
    if data is None:
        return _packaged_role(group, name)
    try:
        entries = data["groups"][group]["roles"][name]
    except KeyError:
        raise KeyError(f"the test-path rules have no role {name!r} in group {group!r}") from None
    return Role(f"{group}.{name}", entries)


@functools.lru_cache(maxsize=64)
def _packaged_role(group: str, name: str) -> Role:
    return role(group, name, packaged_rules())


@functools.lru_cache(maxsize=1)
def packaged_rules() -> dict:
    """The packaged rule set (`rule_data()`), read once."""
    return rule_data()


def groups_for(language: str | None, data: dict | None = None) -> list[str] | None:
    """The groups of `language` (swemint's vocabulary, `agents.models.LANGUAGES`): `common` plus
    those `languages` lists; None (every group) for no language or one the rules do not know."""
    data = data if data is not None else packaged_rules()
    groups = (data.get("languages") or {}).get((language or "").lower())
    if not groups:
        return None
    return ["common", *[g for g in groups if g != "common"]] if "common" in data["groups"] else list(groups)


@functools.lru_cache(maxsize=64)
def rules_for(language: str | None = None) -> TestPathRules:
    """The packaged rules for `language` (`groups_for`; None: every group), shared."""
    return TestPathRules(None, groups_for(language))


# -- changes of a configuration file from its two texts (in the sandbox: no diff to parse) -------

def line_changes(old: str, new: str) -> list[tuple[list[str], list[str]]]:
    """(lines of `old` above the change, changed lines) for every change from `old` to `new`
    (difflib's opcodes); for `TestPathRules.config_hit`."""
    a, b = old.splitlines(), new.splitlines()
    return [(a[:i1], a[i1:i2] + b[j1:j2])
            for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
            if tag != "equal"]


# -- a tooling change that only lists the patch's own files -----------------------------------------

_LIST_WORD = re.compile(r"[A-Za-z0-9_.+@/-]+")
_VARIABLE = re.compile(r"\$[({][A-Za-z_][A-Za-z0-9_]*[)}]")
LIST_MARKS = frozenset(",'\"\\()[]{}")
"""The characters besides file names a source-list change may add or remove (`lists_only`): list
punctuation, quotes, a line continuation."""


_MODULE_ENTRY = {
    "pom.xml": re.compile(r"\s*<module>\s*(?P<e>[^<>\s]+)\s*</module>\s*"),
    "CMakeLists.txt": re.compile(r"\s*add_subdirectory\s*\(\s*(?P<e>[^()\s]+)\s*\)\s*"),
    "meson.build": re.compile(r"\s*subdir\s*\(\s*'(?P<e>[^']+)'\s*\)\s*"),
    "settings.gradle": re.compile(r"\s*include\s*\(?(?P<e>(?:\s*['\"][^'\"\s]+['\"]\s*,?)+)\s*\)?\s*"),
    "go.work": re.compile(r"\s*use\s+(?P<e>[^\s()]+)\s*"),
}
_MODULE_ENTRY["settings.gradle.kts"] = _MODULE_ENTRY["settings.gradle"]
MODULE_BUILD_FILES = frozenset({"pom.xml", "build.gradle", "build.gradle.kts", "CMakeLists.txt", "meson.build",
                                "go.mod", "Cargo.toml", "package.json"})
"""The file names that make a folder a module of its build (`envpool.patches.new_modules`)."""
_QUOTED = re.compile(r"['\"]([^'\"]+)['\"]")


def module_entries(line: str, build_file: str, whole: bool = True) -> list[str] | None:
    """The folders `line` of the build file `build_file` (a path; its name decides the syntax)
    registers as modules of the build, relative to that file's folder -- Maven pom.xml
    `<module>x</module>`, CMakeLists.txt `add_subdirectory(x)`, meson.build `subdir('x')`,
    settings.gradle(.kts) `include 'x', ':y:z'` (`y/z`), go.work `use ./x` --, or None for any
    other line or file (the whole line must be the registration; `whole=False`: every
    registration found in the line, a one-line pom.xml's `<modules>` included). Class: a fix that
    creates a module registers it in its parent build (`envpool.patches.new_modules`, the tooling
    check's new-module rule)."""
    pattern = _MODULE_ENTRY.get(PurePosixPath(build_file).name)
    if pattern is None:
        return None
    found = [pattern.fullmatch(line)] if whole else list(pattern.finditer(line))
    if not found or found[0] is None:
        return None
    if PurePosixPath(build_file).name.startswith("settings.gradle"):
        return [q.strip(":").replace(":", "/") for m in found for q in _QUOTED.findall(m.group("e"))]
    return [m.group("e") for m in found]


def _list_words(lines) -> tuple[Counter, Counter]:
    """(words, other characters) of `lines`, counted: a word is a run of `[A-Za-z0-9_.+@/-]`
    holding a letter or digit (a path, a target); `$(VAR)` / `${VAR}` references are left out."""
    words: Counter = Counter()
    marks: Counter = Counter()
    for line in lines:
        line = _VARIABLE.sub(" ", line)
        for w in _LIST_WORD.findall(line):
            if any(c.isalnum() for c in w):
                words[w] += 1
            else:
                marks.update(w)
        marks.update(c for c in _LIST_WORD.sub(" ", line) if not c.isspace())
    return words, marks


def file_names(paths) -> set[str]:
    """The names `paths` go by in a build file's source list: each path, its file name, both less
    the last extension, the path less its extension with dots (a Python module), and each folder
    above it (whole, by its name, with dots)."""
    out: set[str] = set()
    for path in paths:
        p = PurePosixPath(path)
        if not p.parts:
            continue
        bare = p.with_suffix("") if p.suffix else p
        out |= {path, p.name, bare.name, str(bare), str(bare).replace("/", ".")}
        for parent in list(p.parents)[:-1]:
            out |= {str(parent), parent.name, str(parent).replace("/", ".")}
    return {n for n in out if n and n != "."}


def _names_one(word: str, names: set[str]) -> bool:
    while word.startswith("./"):
        word = word[2:]
    word = word.strip("/")
    if not word:
        return False
    p = PurePosixPath(word)
    return bool({word, p.name, p.with_suffix("").name if p.suffix else p.name} & names)


def lists_only(added, removed, new_files, gone_files) -> bool:
    """True when a change of a tooling file (its `added` and `removed` lines) only lists files of
    the patch itself -- a CMake/Makefile/meson/Bazel/package source list naming a file the patch
    adds (or a rename's new name), dropping one it deletes (or a rename's old name) --, so that
    the tooling check keeps it (a fix that adds a source file still builds). Counted by words
    (`_list_words`): every word the change adds names one of `new_files` (`file_names`: by path,
    file name or stem), every word it removes one of `gone_files`, at least one does, and the
    change adds or removes no other character than list punctuation (`LIST_MARKS`: no `=`,
    `+=`, `#`, `-p`...). `SRCS += new.c` (a word `SRCS`, a mark `+=`) is not a list entry;
    `\tnew.c \\` and `"new.cc",` are."""
    a_words, a_marks = _list_words(added)
    r_words, r_marks = _list_words(removed)
    plus, minus = a_words - r_words, r_words - a_words
    if not plus and not minus:
        return False
    if set((a_marks - r_marks) + (r_marks - a_marks)) - LIST_MARKS:
        return False
    new, gone = file_names(new_files), file_names(gone_files)
    return all(_names_one(w, new) for w in plus) and all(_names_one(w, gone) for w in minus)


# -- the reset, run inside a sandbox ----------------------------------------------------------------

def _git(root: str, *args: str) -> bytes:
    return subprocess.run(["git", *GIT_SAFE, "--literal-pathspecs", *args], cwd=root, check=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout


def command_config(root: str) -> list[str]:
    """The keys of the work tree's own git configuration (`.git/config`) that make git run a
    command (a filter's clean/smudge, a diff or merge driver, an include...; hooks and fsmonitor
    are switched off by `GIT_SAFE` instead): a repository as swemint lays it out has none, so one
    there came from a patch. Reading the configuration runs nothing."""
    out = subprocess.run(["git", *GIT_SAFE, "config", "--local", "--list"], cwd=root, check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout
    keys = [line.split("=", 1)[0].strip().lower() for line in out.decode("utf-8", "replace").splitlines()]
    return [k for k in keys if _COMMAND_CONFIG.match(k)]


def _listed(out: bytes) -> list[str]:
    return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]


def _in_dependency_dir(path: str) -> bool:
    return any(part in DEPENDENCY_DIRS for part in PurePosixPath(path).parts[:-1])


def _read(root: str, path: str) -> str:
    try:
        with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def changed_test_paths(root: str, rules: TestPathRules) -> tuple[list[str], list[str]]:
    """(tracked, untracked): the test paths of the git work tree at `root` that differ from its
    HEAD -- tracked files changed or deleted (`git diff HEAD`, by content) that are test paths or
    configuration files whose changes touch runner configuration; untracked files (ignored ones
    included, not in `DEPENDENCY_DIRS` or a rules' `deps` folder) that are test paths or such
    configuration and came after the image (newer than its `STAMP`; an image without one: every
    untracked one git does not ignore, and ignored test infrastructure by name). The stamp read is
    `outside_stamp` (beside the work tree), else `STAMP`. Raises subprocess.CalledProcessError
    when git fails, ValueError before any other git command when the repository's own
    configuration runs commands (`command_config`), and ValueError when an untracked file in a
    dependency folder is newer than the stamp: a patch wrote into the installed dependencies (a
    fake `expect` below node_modules/, an edited assertion library), which no reset can put
    back, so the tree is not graded. Git runs with `GIT_SAFE` (no hooks, no fsmonitor)."""
    if risky := command_config(root):
        raise ValueError(f"the repository's git configuration runs commands ({', '.join(risky[:5])}): "
                         "a patch wrote into .git")
    tracked = []
    for f in _listed(_git(root, "diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--name-only", "-z",
                          "HEAD", "--")):
        kind = rules.kind(f)
        if kind is None and rules.shadows_below(f, lambda d: os.path.exists(os.path.join(root, d, "__init__.py"))):
            kind = "support"
        if kind in ("test", "support"):
            tracked.append(f)
        elif kind == "config":
            old = _git(root, "show", f"HEAD:{f}").decode("utf-8", "replace")
            if rules.config_changed(f, old, _read(root, f)):
                tracked.append(f)
    stamp = outside_stamp(root)
    stamp = stamp if os.path.exists(stamp) else os.path.join(root, STAMP)
    since = os.stat(stamp).st_mtime_ns if os.path.exists(stamp) else None
    visible = None if since is not None else set(_listed(_git(root, "ls-files", "-z", "-o", "--exclude-standard")))
    untracked, wrote_deps = [], []
    for f in _listed(_git(root, "ls-files", "-z", "-o")):
        if _in_dependency_dir(f) or rules.in_dependencies(f):
            if since is not None and _installed(f, rules) and _newer(root, f, since):
                wrote_deps.append(f)
            continue
        kind = rules.kind(f)
        if kind is None and rules.shadows_below(f, lambda d: os.path.exists(os.path.join(root, d, "__init__.py"))):
            kind = "support"
        if kind is None:
            continue
        if kind == "config" and not rules.config_changed(f, "", _read(root, f)):
            continue
        try:
            mtime = os.lstat(os.path.join(root, f)).st_mtime_ns
        except OSError:
            continue
        if (mtime > since + STAMP_MARGIN_NS) if since is not None else (f in visible or kind == "support"):
            untracked.append(f)
    if wrote_deps:
        raise ValueError(f"a patch wrote into the installed dependencies ({', '.join(sorted(wrote_deps)[:5])}"
                         f"{f' (+{len(wrote_deps) - 5} more)' if len(wrote_deps) > 5 else ''}): the test framework "
                         "lives there, so the tree is not graded")
    return tracked, untracked


BUILD_DIRS = ("target", ".gradle", "__pycache__", ".git")
"""Folders of `DEPENDENCY_DIRS` that hold build output a run writes (or git's own), not installed
dependencies: a file there newer than the stamp does not stop the reset."""


def _installed(path: str, rules: TestPathRules) -> bool:
    """True when `path` lies in a folder of installed dependencies (`DEPENDENCY_DIRS` less
    `BUILD_DIRS`, or a rules' `deps` folder)."""
    return rules.in_dependencies(path) or any(part in DEPENDENCY_DIRS and part not in BUILD_DIRS
                                              for part in PurePosixPath(path).parts[:-1])


def _newer(root: str, path: str, since: int) -> bool:
    """True when `path` (under `root`) was written after the image's stamp time `since` (ns) past
    `STAMP_MARGIN_NS`."""
    try:
        return os.lstat(os.path.join(root, path)).st_mtime_ns > since + STAMP_MARGIN_NS
    except OSError:
        return False


def reset_tree(root: str, rules: TestPathRules, keep=()) -> list[str]:
    """Put every changed test path of the work tree at `root` back as HEAD has it
    (`changed_test_paths`: tracked ones checked out, untracked ones removed), except the paths in
    `keep`; the paths reset, sorted."""
    tracked, untracked = changed_test_paths(root, rules)
    keep = set(keep)
    tracked = [f for f in tracked if f not in keep]
    untracked = [f for f in untracked if f not in keep]
    for i in range(0, len(tracked), 200):
        _git(root, "checkout", "-q", "HEAD", "--", *tracked[i:i + 200])
    for f in untracked:
        full = os.path.join(root, f)
        if os.path.islink(full) or not os.path.isdir(full):
            os.unlink(full)
    return sorted(tracked + untracked)


RESET_MARK = "swemint: test paths reset to the base tree:"
"""How the reset's output line starts (it names the paths, a JSON list)."""

RULES_JSON = "testpaths.json"
"""The rule set as JSON inside the status tool's zipapp (`envpool.testrun.statuslines`), which
cannot read YAML: the package resource `envpool/testpaths.json`."""


def tool_rules() -> dict:
    """The rule set where this module runs: the zipapp's `RULES_JSON` when it is there, else the
    packaged YAML (`packaged_rules`)."""
    import pkgutil

    try:
        raw = pkgutil.get_data("envpool", RULES_JSON)
    except OSError:
        raw = None
    return json.loads(raw) if raw else packaged_rules()


def reset_main(language: str | None, keep=(), root: str = "/testbed", data: dict | None = None) -> int:
    """`reset_tree(root)` with the rules of `language` (`groups_for`; `data`: the rule set,
    default `tool_rules()`), keeping `keep`; prints one line naming what it reset. Returns 0, or
    1 (the reason on stderr) when git fails or the rules cannot be read: the caller must not
    grade then. The status tool's `reset-tests` mode."""
    try:
        data = data if data is not None else tool_rules()
        done = reset_tree(root, TestPathRules(data, groups_for(language, data)), keep)
    except (subprocess.CalledProcessError, OSError, ValueError, KeyError) as e:
        print(f"swemint: the test-path reset failed: {type(e).__name__}: {e}", file=sys.stderr)
        return 1
    if done:
        print(RESET_MARK, json.dumps(done[:50]) + (f" (+{len(done) - 50} more)" if len(done) > 50 else ""))
    sys.stdout.flush()
    return 0

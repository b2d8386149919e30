"""The test runner (vitest, jest, mocha, ava, Node's own ``node --test``) a project's scripts name, where it runs, the touched
test files it gets, and the options and environment taken from the project's test script."""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath


from agents.ecosystems.node.builtin_runner import runs_node_test
from agents.ecosystems.node.manifest import package_deps, package_scripts, recipe
from envpool.testpaths import role

TEST_EXTS = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts", ".coffee")
_CONFIG = {
    "vitest": ("vitest.config", "vitest.workspace", "vite.config", "vitest.projects"),
    "jest": ("jest.config",),
    "mocha": (".mocharc",),
    "ava": ("ava.config",),
}
NODE_TEST = "node-test"
"""The runner name of Node's built-in test runner (``node --test``)."""
_RUNNER_IN_SCRIPT = re.compile(r"(?<![\w@:.-])(vitest|jest|mocha|_mocha|ava|react-scripts test|craco test|"
                               r"react-app-rewired test)(?![\w-])")


# -- runner -------------------------------------------------------------------------------------

def _script_commands(scripts: dict[str, str], name: str, depth: int = 0) -> list[str]:
    """The text of script `name` and of the scripts it runs (``npm run x``, ``yarn x``,
    ``pnpm x``, ``run-s``/``run-p``/``npm-run-all`` names), two levels deep."""
    text = scripts.get(name)
    if text is None:
        return []
    out = [text]
    if depth >= 2:
        return out
    for m in re.finditer(r"(?:npm run|pnpm(?: run)?|yarn(?: run)?)\s+([\w:.-]+)", text):
        if m.group(1) in scripts and m.group(1) != name:
            out += _script_commands(scripts, m.group(1), depth + 1)
    for m in re.finditer(r"(?:run-s|run-p|npm-run-all)((?:\s+(?:\"[^\"]+\"|'[^']+'|[\w:.*-]+))+)", text):
        for n in shlex.split(m.group(1)):
            if n.startswith("-"):
                continue
            pat = re.compile("^" + re.escape(n).replace(r"\*", ".*") + "$")
            for s in scripts:
                if pat.match(s) and s != name:
                    out += _script_commands(scripts, s, depth + 1)
    return out


def _test_scripts(scripts: dict[str, str]) -> list[str]:
    names = ["test"] + [s for s in scripts if s != "test" and re.match(r"^(test|unit|spec)([:_-]|$)", s)]
    out: list[str] = []
    for n in names:
        out += _script_commands(scripts, n)
    return out


def runner_of(pkg: dict, tree, pkg_dir: str) -> tuple[str | None, str | None, str | None]:
    """(runner, the script text naming it or None, react-scripts-like wrapper) for the package
    at `pkg_dir` ("" = root)."""
    scripts = package_scripts(pkg)
    deps = package_deps(pkg)
    for text in _test_scripts(scripts):
        builtin = runs_node_test(text)
        for m in _RUNNER_IN_SCRIPT.finditer(text):
            if builtin is not None and builtin < m.start():
                break
            word = m.group(1)
            if word.endswith(" test"):
                return "jest", text, word.split()[0]
            return ("mocha" if word == "_mocha" else word), text, None
        if builtin is not None:  # Node's own runner (`agents.ecosystems.node.builtin_runner`)
            return NODE_TEST, text, None
    for r in recipe()["runners"]:
        if r in deps:
            return r, None, None
    if "react-scripts" in deps:
        return "jest", None, "react-scripts"
    prefix = f"{pkg_dir}/" if pkg_dir else ""
    for r, names in _CONFIG.items():
        if any(tree.exists(f"{prefix}{n}{ext}") for n in names
               for ext in (".js", ".ts", ".mjs", ".cjs", ".mts", ".cts", ".json", ".yml", ".yaml", "")):
            return r, None, None
    if isinstance(pkg.get("jest"), dict):
        return "jest", None, None
    return None, None, None


def has_config(tree, pkg: dict, pkg_dir: str, runner: str) -> bool:
    prefix = f"{pkg_dir}/" if pkg_dir else ""
    if runner == "jest" and isinstance(pkg.get("jest"), dict):
        return True
    if runner in ("mocha", "ava") and isinstance(pkg.get(runner), dict):
        return True
    return any(p.startswith(prefix) and "/" not in p[len(prefix):] and
               p[len(prefix):].startswith(_CONFIG.get(runner, ())) for p in tree.files) if _CONFIG.get(runner) else False


_VITEST_PROJECTS = re.compile(r"\b(?:projects|workspace)\s*:")


def root_vitest_projects(tree) -> str | None:
    """The root file that makes vitest a workspace of projects -- a ``vitest.workspace.*`` or
    ``vitest.projects.*`` file, or a root ``vitest.config.*`` / ``vite.config.*`` declaring
    ``projects:`` (``workspace:`` before vitest 3.2) -- or None. Its project paths are relative
    to the root, and workspace packages whose config merges the root's inherit them, so such
    a repository's tests run from the root (colinhacks/zod: from packages/zod, vitest stopped
    with "Projects definition references a non-existing file")."""
    for p in sorted(tree.files):
        if "/" in p:
            continue
        if p.startswith(("vitest.workspace.", "vitest.projects.")):
            return p
        if p.startswith(("vitest.config.", "vite.config.")) and _VITEST_PROJECTS.search(tree.read(p) or ""):
            return p
    return None


def select_test_files(touched: list[str]) -> list[str]:
    """The touched paths that are JS/TS test files: sources (`TEST_EXTS`) in the JS/TS group's
    `run` role of the one test-path rule set (`envpool.testpaths`: named like a test file,
    ``*.test.*``/``*-spec.*``..., or under a test directory; never declarations, snapshots,
    fixtures, mocks, dependencies or build output), in touched order."""
    run = role("js", "run")
    return [p for p in touched if p.endswith(TEST_EXTS) and run.matches(p)]


def _fixture_suite(path: str) -> str | None:
    """The test folder whose fixture folder holds `path` (the JS/TS group's `fixture_folder`
    role: ``<dir>/test/fixtures/...``; the deepest such pair), or None."""
    parts = path.split("/")
    folder = role("js", "fixture_folder")
    for k in range(len(parts) - 1, 1, -1):
        if folder.matches("/".join(parts[:k])):
            return "/".join(parts[:k - 1])
    return None


def fixture_test_files(tree, touched: list[str]) -> list[str]:
    """The test files that run touched fixtures: for ``<dir>/test/fixtures/...`` (also
    ``tests``, ``__tests__``, ``spec(s)``; ``fixture``, ``__fixtures__``: `_fixture_suite`), the
    JS/TS files directly in ``<dir>/test/`` -- fixture-driven suites (babel's ``test/index.js``
    runs every ``test/fixtures/*/*`` case)."""
    out: list[str] = []
    suites = [s for p in touched if (s := _fixture_suite(p)) is not None]
    for d in dict.fromkeys(suites):
        out += [f for f in tree.files if f.startswith(d + "/") and "/" not in f[len(d) + 1:]
                and f.endswith(TEST_EXTS) and not f.endswith(".d.ts")]
    return list(dict.fromkeys(out))


_SNAPSHOT = re.compile(r"^(?P<dir>(?:.*/)?)__snapshots__/(?P<test>[^/]+)\.snap$")
MENTION_READS = 400
"""At most this many test files are read when looking for those that name a touched data file."""


def snapshot_test_files(tree, touched: list[str]) -> list[str]:
    """The test files whose snapshots the test_patch changes: Jest's and Vitest's
    ``<dir>/__snapshots__/<test file>.snap`` is written and read by ``<dir>/<test file>`` (the
    snapshot's name says which), kept when that file is in the tree or the test_patch adds it."""
    out: list[str] = []
    for p in touched:
        m = _SNAPSHOT.match(p)
        if m and (owner := m.group("dir") + m.group("test")) not in out and \
                (tree.exists(owner) or owner in touched) and owner.endswith(TEST_EXTS):
            out.append(owner)
    return out


def data_test_files(tree, touched: list[str]) -> list[tuple[str, str]]:
    """(test file, data file) for each touched data file -- a fixture, an approval baseline, a
    golden output: not code -- and each test file of its package (the nearest package.json)
    whose text names the data file's file name; at most `MENTION_READS` test files read."""
    data = [p for p in touched if not p.endswith(TEST_EXTS) and not _SNAPSHOT.match(p)
            and PurePosixPath(p).name != "package.json"]
    if not data:
        return []
    out: list[tuple[str, str]] = []
    reads = 0
    by_pkg: dict[str, list[str]] = {}
    for p in data:
        by_pkg.setdefault(package_dir(tree, p), []).append(p)
    for pkg, paths in by_pkg.items():
        prefix = f"{pkg}/" if pkg else ""
        tests = select_test_files([f for f in tree.files if f.startswith(prefix)])
        for t in tests:
            if reads >= MENTION_READS:
                return out
            reads += 1
            text = tree.read(t, limit=400_000) or ""
            for p in paths:
                if re.search(rf"(?<![\w.-]){re.escape(PurePosixPath(p).name)}(?![\w-])", text) and \
                        all(t != o for o, _ in out):
                    out.append((t, p))
    return out


def package_dir(tree, path: str) -> str:
    """The directory of the nearest package.json above `path` ("" = root)."""
    parts = PurePosixPath(path).parts[:-1]
    for i in range(len(parts), 0, -1):
        d = "/".join(parts[:i])
        if tree.exists(f"{d}/package.json"):
            return d
    return ""


_OPT_SPLIT = re.compile(r"\s*(?:&&|\|\||;|\|)\s*")


def glob_regex(pattern: str) -> re.Pattern:
    """A shell glob with ``**`` (any directories), ``*``, ``?`` and ``{a,b}`` as a regex over
    repository-relative paths (a leading ``./`` is ignored)."""
    pat = pattern[2:] if pattern.startswith("./") else pattern
    out, i = "", 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
            continue
        if pat.startswith("**", i):
            out, i = out + ".*", i + 2
            continue
        if c == "{" and "}" in pat[i:]:
            j = pat.index("}", i)
            out += "(?:" + "|".join(re.escape(x) for x in pat[i + 1:j].split(",")) + ")"
            i = j + 1
            continue
        out += {"*": "[^/]*", "?": "[^/]"}.get(c, re.escape(c))
        i += 1
    return re.compile(out + "$")


def mocha_spec_globs(script: str | None) -> list[str]:
    """The positional spec paths/globs of a script's mocha invocation (``test/unit/**/*.js``)."""
    if not script:
        return []
    keep = recipe()["mocha_keep_options"]
    skip_value = {"--reporter", "-R", "--reporter-option", "--reporter-options", "-O", "--grep", "-g",
                  "--fgrep", "-f", "--spec", "--ignore", "--exclude", "--jobs", "-j"}
    for part in _OPT_SPLIT.split(script):
        try:
            toks = shlex.split(part)
        except ValueError:
            toks = part.split()
        idx = next((i for i, t in enumerate(toks) if PurePosixPath(t).name in ("mocha", "_mocha")), None)
        if idx is None:
            continue
        out, rest, i = [], toks[idx + 1:], 0
        while i < len(rest):
            t = rest[i]
            if t.startswith("-"):
                name, eq, _ = t.partition("=")
                if not eq and (keep.get(name) or name in skip_value):
                    i += 1
                if name == "--spec" and not eq and i < len(rest):
                    out.append(rest[i])
            else:
                out.append(t)
            i += 1
        return out
    return []


_RUNNER_BINS = {"mocha": ("mocha", "_mocha"), "jest": ("jest", "jest.js"),
                "vitest": ("vitest", "vitest.mjs"), "ava": ("ava", "cli.mjs")}


def runner_launcher(script: str | None, runner: str) -> list[str]:
    """The words that start `runner` in a script that runs it through Node with flags of its own
    (``node --experimental-vm-modules node_modules/jest/bin/jest.js``: Jest on ES modules), so the
    test command starts it the same way instead of calling it bare; [] when the script calls the
    runner without ``node`` flags. The runner's path is kept only when it is a plain relative
    path (no ``..``, no variables)."""
    if not script or runner not in _RUNNER_BINS:
        return []
    for part in _OPT_SPLIT.split(script):
        try:
            toks = shlex.split(part)
        except ValueError:
            toks = part.split()
        idx = next((i for i, t in enumerate(toks) if PurePosixPath(t).name in _RUNNER_BINS[runner]), None)
        if idx is None:
            continue
        before = [t for t in toks[:idx] if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", t)]
        if not before or PurePosixPath(before[0]).name != "node" or len(before) < 2:
            return []
        flags = before[1:]
        path = toks[idx]
        if not all(re.fullmatch(r"--?[A-Za-z][\w.-]*(?:=[\w.,:/@+-]*)?", f) for f in flags) or \
                not re.fullmatch(r"[\w@.+-]+(?:/[\w@.+-]+)*", path) or ".." in path.split("/") or \
                PurePosixPath(path).name == path:
            return []
        return ["node", *flags, path]
    return []


def mocha_options(script: str | None) -> tuple[list[str], list[str]]:
    """(mocha options to keep, VAR=value assignments) from a script's mocha invocation."""
    return runner_options(script, "mocha")


def runner_options(script: str | None, runner: str) -> tuple[list[str], list[str]]:
    """(options to keep, ``VAR=value`` assignments before it) from a script's invocation of
    `runner` (mocha, jest, vitest; kept options: `recipes/node.yaml` ``<runner>_keep_options``).
    ``NODE_OPTIONS=--experimental-vm-modules jest -c jest.unit.js`` ->
    (["-c", "jest.unit.js"], ["NODE_OPTIONS=--experimental-vm-modules"])."""
    if not script:
        return [], []
    keep = recipe().get(f"{runner}_keep_options") or {}
    for part in _OPT_SPLIT.split(script):
        try:
            toks = shlex.split(part)
        except ValueError:
            toks = part.split()
        idx = next((i for i, t in enumerate(toks) if PurePosixPath(t).name in _RUNNER_BINS[runner]), None)
        if idx is None:
            continue
        env = [t for t in toks[:idx] if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=\S*", t)]
        opts: list[str] = []
        rest = toks[idx + 1:]
        i = 0
        while i < len(rest):
            t = rest[i]
            name, eq, _val = t.partition("=")
            if name in keep:
                opts.append(t)
                if keep[name] and not eq and i + 1 < len(rest):
                    opts.append(rest[i + 1])
                    i += 1
            i += 1
        return opts, env
    return [], []



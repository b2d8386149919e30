"""The test configuration of a Go instance: the packages the touched files belong to
(`select_packages`), the test functions the test_patch adds or changes (`touched_tests`,
`run_pattern`) and the build tags gated tests need (`gated_tags`)."""

from __future__ import annotations

import posixpath
import re
from agents.gitrepo import GitTree
from envpool.patches import sections_by_path
from envpool.testrun.polyglot.golang import go_run_regex, quote_meta, split_go_id
from agents.ecosystems.golang.go_modules import _RULES, GoProject, SKIP_PARTS, _skipped



REPORT_PATH = "/tmp/swemint-go-test.json"


BUILD_FAILED_TO_JSON = (
    r"""sed -u -E 's/^FAIL\t([^ ]+) \[(build|setup) failed\]$/{"Action":"output","Package":"\1","""
    r""""Output":"FAIL\\t\1 [\2 failed]\\n"}\n{"Action":"fail","Package":"\1"}/'""")
"""Filter turning Go < 1.24's plain ``FAIL <pkg> [build failed]`` line into JSON events."""


def _package_dir(proj: GoProject, path: str) -> str | None:
    """The package folder a touched `path` belongs to (module doc), or None."""
    parts = path.split("/")
    if parts[0] == "vendor":
        return None
    cut = next((i for i, p in enumerate(parts[:-1]) if p in SKIP_PARTS or p.startswith((".", "_"))), None)
    if path.endswith(".go") and cut is None:
        return posixpath.dirname(path)
    d = "/".join(parts[:cut]) if cut is not None else posixpath.dirname(path)
    mod = proj.module_of(d)
    floor = mod.dir if mod else ""
    while True:
        if d in proj.test_dirs:
            return d
        if d == floor or d == "":
            return None
        d = posixpath.dirname(d)


def select_packages(proj: GoProject, touched: list[str]) -> dict[str, list[str]]:
    """Module folder -> package folders relative to it ("." for the module's own folder), for
    the `touched` paths, in first-touched order. GOPATH-era projects use the key ""."""
    out: dict[str, list[str]] = {}
    for path in touched:
        d = _package_dir(proj, path)
        if d is None:
            continue
        mod = proj.module_of(d)
        key = mod.dir if mod else ""
        rel = d[len(key):].lstrip("/") if key else d
        pkg = f"./{rel}" if rel else "."
        if pkg not in out.setdefault(key, []):
            out[key].append(pkg)
    return out


_TEST_FUNC = re.compile(r"^func\s+((?:Test|Example|Fuzz)\w*)\s*\(")


def _header(lines: list[str], i: int) -> int:
    """Index of the declaration line owning line `i` (0-based): itself when it starts at column
    0, else the nearest column-0 line above it that is not a closing brace, paren or comment;
    -1 when there is none."""
    for j in range(min(i, len(lines) - 1), -1, -1):
        t = lines[j]
        if t and not t[0].isspace() and not t.startswith(("}", ")", "//")):
            return j
    return -1


def changed_tests(section: str, old_text: str | None) -> tuple[set[str], bool]:
    """(test functions a test file's diff `section` adds or changes, whether it also changes
    shared code). A changed line belongs to the declaration above it (`_header`, in the new file
    for added lines, in the old file for removed ones). Test/Example/Fuzz functions: their name;
    import blocks, blank and comment lines: nothing; lines under a declaration the diff adds
    (a new helper or type): nothing; anything else (an existing helper, a shared table):
    shared code, so the whole package must run (also when unidiff cannot read the section)."""
    from unidiff import PatchSet

    old = (old_text or "").splitlines()
    new: list[str] = []
    added: list[int] = []      # indexes into `new`
    removed: list[int] = []    # indexes into `old`
    o = 0
    try:
        files = list(PatchSet(section))
    except Exception:  # noqa: BLE001 - unreadable: the whole package runs
        return set(), True
    for hunk in (h for pf in files for h in pf):
        start = hunk.source_start if hunk.source_length == 0 else hunk.source_start - 1  # 0-based first old line
        new.extend(old[o:start])
        o = start
        for line in hunk:
            if line.is_added:
                added.append(len(new))
                new.append(line.value.rstrip("\r\n"))
            elif line.is_removed:
                removed.append(o)
                o += 1
            elif line.is_context:
                new.append(line.value.rstrip("\r\n"))
                o += 1
    new.extend(old[o:])
    added_set = set(added)
    names: set[str] = set()
    shared = False

    def judge(text: str, header: str, header_is_new: bool) -> None:
        nonlocal shared
        body = text.strip()
        if not body or body.startswith("//"):
            return
        m = _TEST_FUNC.match(header)
        if m:
            names.add(m.group(1))
        elif header.startswith("import") or header.startswith("package ") or header_is_new:
            return
        else:
            shared = True

    for i in added:
        h = _header(new, i)
        judge(new[i], new[h] if h >= 0 else "", h in added_set)
    for i in removed:
        h = _header(old, i)
        judge(old[i], old[h] if h >= 0 else "", False)
    return names, shared


def added_tests(test_patch: str) -> list[str]:
    """The test functions (``TestX``, ``ExampleX``, ``FuzzX``) a line the test_patch adds to a
    ``_test.go`` file declares, not those a removed line declared (a test edited in place)."""
    from envpool.patches import added_lines, changed_lines

    changed = changed_lines(test_patch)
    names: list[str] = []
    for path, lines in added_lines(test_patch).items():
        if not path.endswith("_test.go"):
            continue
        old = {m.group(1) for x in changed.get(path, []) if x not in lines and (m := _TEST_FUNC.match(x))}
        names += [m.group(1) for x in lines if (m := _TEST_FUNC.match(x)) and m.group(1) not in old
                  and m.group(1) not in names]
    return names


def touched_tests(test_patch: str, tree: GitTree, proj: GoProject) -> dict[str, set[str] | None]:
    """Package folder -> the test functions the test_patch adds or changes there, or None when
    the whole package must run (a non-Go file of it is touched, or shared test code changes)."""
    out: dict[str, set[str] | None] = {}
    for path, block in sections_by_path(test_patch).items():
        d = _package_dir(proj, path)
        if d is None:
            continue
        if not _RULES.is_test_file(path) or _skipped(path):
            out[d] = None
            continue
        names, shared = changed_tests(block, tree.read(path))
        if shared:
            out[d] = None
        elif out.get(d, set()) is not None:
            out[d] = out.get(d, set()) | names
    return out


def run_pattern(test_ids: list[str]) -> str:
    """A ``go test -run`` pattern selecting `test_ids` (``pkg::TestX/sub`` or bare ``TestX/sub``).

    One id: exactly it (`go_run_regex`, each level anchored and QuoteMeta'd, so names with
    ``(``, ``.``, ``_`` for spaces match literally). Several subtests of one parent at the same
    depth: ``^Parent$/^(a|b)$``. Otherwise the top-level tests, ``^(TestA|TestB)$`` (their
    subtests all run). Go splits a pattern at ``/`` outside brackets and parentheses only.
    """
    names = list(dict.fromkeys(split_go_id(i)[1] for i in test_ids))
    if not names:
        return "^$"
    if len(names) == 1:
        return go_run_regex(names[0])
    levels = [n.split("/") for n in names]
    if len({len(lv) for lv in levels}) == 1 and len({tuple(lv[:-1]) for lv in levels}) == 1 and len(levels[0]) > 1:
        parent = "/".join(f"^{quote_meta(p)}$" for p in levels[0][:-1])
        return f"{parent}/^({'|'.join(quote_meta(lv[-1]) for lv in levels)})$"
    tops = dict.fromkeys(lv[0] for lv in levels)
    return f"^({'|'.join(quote_meta(t) for t in tops)})$"


def _patch_blocks(text: str, keep) -> str:
    """The file sections of a unified git diff whose path satisfies `keep(path)`."""
    return "".join(section for path, section in sections_by_path(text).items() if keep(path))


TAG_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,63}")
"""A Go build tag as `-tags` takes it (anything else from a repository is not used)."""


_NOT_TAGS = re.compile(r"^(go1\.\d+|cgo|ignore|gc|gccgo|unix|linux|darwin|windows|freebsd|openbsd|netbsd|"
                       r"solaris|plan9|js|wasm|wasip1|android|ios|aix|dragonfly|illumos|amd64|arm64|386|arm|"
                       r"ppc64le?|s390x|riscv64|mips\w*|loong64)$")


def constraint_tags(text: str) -> list[str]:
    """Tags a Go file's ``//go:build`` (or ``// +build``) lines ask for, outside ``!``: not the
    GOOS/GOARCH/release/cgo terms the toolchain sets itself. Never raises."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("package "):
            break
        m = re.match(r"//\s*(?:go:build|\+build)\s+(.*)", line)
        if not m:
            continue
        for neg, tag in re.findall(r"(!?)\s*([A-Za-z0-9_.]+)", m.group(1)):
            if not neg and TAG_NAME.fullmatch(tag) and not _NOT_TAGS.match(tag) and tag not in out:
                out.append(tag)
    return out


def ci_go_tags(tree: GitTree) -> list[str]:
    """Build tags the project's CI passes to ``go test`` (``-tags a,b``, ``--tags=a``), from its
    GitHub workflows (`agents.ecosystems.ci`) and its top-level Makefile."""
    from agents.ecosystems.ci import ci_steps, command_lines, flag_values, split_words

    texts = [st.run for st in ci_steps(tree)] + [tree.read(p) or "" for p in ("Makefile", "GNUmakefile")
                                                  if tree.exists(p)]
    tags: list[str] = []
    for text in texts:
        for line in command_lines(text):
            words = split_words(line)
            if not any(w == "test" and i and words[i - 1].endswith("go") for i, w in enumerate(words)):
                continue
            for value in flag_values(words, "-tags", "--tags"):
                for tag in re.split(r"[,\s]+", value):
                    if TAG_NAME.fullmatch(tag) and tag not in tags:
                        tags.append(tag)
    return tags


def gated_tags(tree: GitTree, test_patch: str, touched: list[str]) -> tuple[list[str], list[str]]:
    """(tags, reasons): the build tags of touched ``_test.go`` files (their text after the
    test_patch: the base file, or the lines a new file adds) that the CI also passes to
    ``go test`` -- so a test file gated by ``//go:build integration`` compiles, as on CI."""
    from envpool.patches import changed_lines

    wanted: dict[str, list[str]] = {}
    added = None
    for path in touched:
        if not _RULES.is_test_file(path):
            continue
        text = tree.read(path)
        if text is None:
            added = changed_lines(test_patch) if added is None else added
            text = "\n".join(added.get(path, []))
        for tag in constraint_tags(text):
            wanted.setdefault(tag, []).append(path)
    if not wanted:
        return [], []
    ci = ci_go_tags(tree)
    tags = [t for t in wanted if t in ci]
    return tags, [f"build tag {t} (CI: go test -tags; gates {', '.join(wanted[t][:3])})" for t in tags]



# -- packages no file of which builds here (rule S17) ------------------------------------------

HERE = frozenset({"linux", "amd64", "unix", "gc", "cgo"})
"""Build constraint terms true on this host's target (GOOS linux, GOARCH amd64, gc with cgo),
besides the release tags ``go1.N`` (all true) and the tags the plan passes with ``-tags``."""
_GOOS = ("aix", "android", "darwin", "dragonfly", "freebsd", "hurd", "illumos", "ios", "js", "linux", "nacl",
         "netbsd", "openbsd", "plan9", "solaris", "wasip1", "windows", "zos")
_GOARCH = ("386", "amd64", "arm", "arm64", "loong64", "mips", "mipsle", "mips64", "mips64le", "ppc64", "ppc64le",
           "riscv64", "s390x", "wasm")
_EXPR_TOKEN = re.compile(r"\s*(\(|\)|!|&&|\|\||[A-Za-z0-9_.]+)")


def _name_builds(name: str) -> bool:
    """Go's file-name constraint (``*_GOOS``, ``*_GOARCH``, ``*_GOOS_GOARCH``, before ``_test``):
    whether a file so named builds for linux/amd64."""
    stem = name[:-3]
    if stem.endswith("_test"):
        stem = stem[:-5]
    parts = stem.split("_")
    if len(parts) >= 3 and parts[-2] in _GOOS and parts[-1] in _GOARCH:
        return parts[-2] == "linux" and parts[-1] == "amd64"
    if len(parts) >= 2 and parts[-1] in _GOOS:
        return parts[-1] == "linux"
    if len(parts) >= 2 and parts[-1] in _GOARCH:
        return parts[-1] == "amd64"
    return True


def _eval_build(expr: str, true: frozenset[str]) -> bool:
    """A ``//go:build`` expression over `true` (``go1.N`` always true); an expression that does
    not parse counts as true (the file is kept: Go's own error then says why)."""
    toks = _EXPR_TOKEN.findall(expr)
    if "".join(toks) != re.sub(r"\s+", "", expr):
        return True
    pos = 0

    def atom() -> bool:
        nonlocal pos
        t = toks[pos] if pos < len(toks) else ""
        pos += 1
        if t == "!":
            return not atom()
        if t == "(":
            v = orexpr()
            pos += 1
            return v
        return t in true or re.fullmatch(r"go1\.\d+", t) is not None

    def andexpr() -> bool:
        nonlocal pos
        v = atom()
        while pos < len(toks) and toks[pos] == "&&":
            pos += 1
            v = atom() and v
        return v

    def orexpr() -> bool:
        nonlocal pos
        v = andexpr()
        while pos < len(toks) and toks[pos] == "||":
            pos += 1
            v = andexpr() or v
        return v

    try:
        return orexpr()
    except IndexError:
        return True


def legacy_constraint(expr: str, true: frozenset[str]) -> bool:
    """A legacy build constraint over `true` -- a ``// +build`` line's, or a ``#cgo`` directive's
    (``linux,amd64 !windows``): its space-separated options OR'd, each option's comma-separated
    terms AND'd, a term read as `_eval_build` reads it (``!tag``; ``go1.N`` true). No option:
    False (a caller with an empty constraint decides before)."""
    return any(all(_eval_build(t, true) for t in opt.split(",")) for opt in expr.split())


def file_builds(name: str, text: str, tags: list[str]) -> bool:
    """Whether a Go file named `name` with content `text` is built for linux/amd64 with `tags`
    (its name, then its ``//go:build`` line; a legacy ``// +build`` line: spaces OR, commas AND,
    several lines AND). Files Go ignores (``_x.go``, ``.x.go``) never build."""
    if name.startswith(("_", ".")) or not _name_builds(name):
        return False
    true = HERE | frozenset(tags)
    plus: list[bool] = []
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("package ") or (s and not s.startswith("//")):
            break
        if m := re.match(r"//go:build\s+(.*)$", s):
            return _eval_build(m.group(1), true)
        if m := re.match(r"//\s*\+build\s+(.*)$", s):
            plus.append(legacy_constraint(m.group(1), true))
    return all(plus)


def builds_here(tree: GitTree, folder: str, added: dict[str, list[str]], tags: list[str]) -> bool:
    """Whether some Go file directly in `folder` (the tree's, or one the patches add: `added`,
    path -> its added lines) builds for linux/amd64 with `tags`: a package none of whose files
    does (``app_darwin.go`` with ``app_darwin_test.go``; ``//go:build windows``) cannot be
    listed, built or tested here ("build constraints exclude all Go files")."""
    prefix = f"{folder}/" if folder else ""
    names = {p for p in tree.files if p.startswith(prefix) and "/" not in p[len(prefix):] and p.endswith(".go")}
    names |= {p for p in added if p.startswith(prefix) and "/" not in p[len(prefix):] and p.endswith(".go")}
    if not names:
        return True  # no Go file known: not ours to judge
    for p in sorted(names):
        text = tree.read(p) if p not in added else "\n".join(added[p])  # whole: a long file must not pass as unconstrained
        if file_builds(posixpath.basename(p), text or "", tags):
            return True
    return False


def _buildable(tree: GitTree, instance, sel: dict[str, list[str]],
               tags: list[str]) -> tuple[dict[str, list[str]], list[str]]:
    """(`sel` without the packages that do not build here, those packages' folders): a package
    is dropped when no Go file of it (at base, or added by the patches) builds for linux/amd64
    with `tags` (`builds_here`)."""
    from envpool.patches import changed_lines

    added = {p: lines for p, lines in changed_lines(instance.test_patch + "\n" + instance.patch).items()
             if not tree.exists(p)}
    kept: dict[str, list[str]] = {}
    dropped: list[str] = []
    for mdir, pkgs in sel.items():
        for p in pkgs:
            folder = posixpath.normpath(posixpath.join(mdir, p)) if p != "./..." else mdir
            folder = "" if folder == "." else folder
            if p == "./..." or builds_here(tree, folder, added, tags):
                kept.setdefault(mdir, []).append(p)
            else:
                dropped.append(folder or ".")
    return kept, dropped

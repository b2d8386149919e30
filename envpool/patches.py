"""Applying `patch` / `test_patch` in a sandbox, with pure normalisation helpers.

`apply_patch` tries, in order (the same ladder SWE-bench's harness uses, plus normalisation):

1. ``git apply -v``                                              -> method "git_apply"
2. ``git apply -v --recount --ignore-whitespace`` on the normalised patch
   (line endings matched to the target files, blank context lines given their leading space,
   a final newline added)                                          -> "git_apply_normalised"
3. ``patch -p1 --batch --forward --fuzz=2`` on the normalised patch, after a dry run so a
   failure leaves the tree untouched                               -> "patch_fuzz"

Pure helpers (`files_in_patch`, `file_sections`, `sections_by_path`, `changed_lines`,
`added_lines`, `changed_line_count`, `split_test_files`, `split_by_rules`, `grading_paths`, `split_patch`,
`test_files_to_run`, `normalise_patch` and its parts) use unidiff where it parses and plain text
otherwise; they are the only diff readers of the code base (the agents, ecosystems and sources call
them). Which paths are tests is the one rule set of `envpool.testpaths`.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import uuid
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from envpool.errors import PatchApplyError
from envpool.sandbox import Sandbox
from envpool.testpaths import MODULE_BUILD_FILES, TestPathRules, lists_only, module_entries, role, rules_for

PATCH_DIR = "/tmp/swemint/patches"
"""Where patch files are written in the sandbox (outside the repository)."""

_DIFF_GIT = re.compile(r"^diff --git a/(.*?) b/(.*)$")
_DIFF_GIT_QUOTED = re.compile(r'^diff --git ("(?:[^"\\]|\\.)*"|\S+) ("(?:[^"\\]|\\.)*"|\S+)$')
_RENAME = re.compile(r"^(?:rename|copy) (?:from|to) (.*)$")
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


# -- which files ------------------------------------------------------------------------------

_C_ESCAPES = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}


def unquote_git_path(path: str) -> str:
    """A path as git writes it in a diff header, decoded: git puts a path holding a byte outside
    printable ASCII, a quote or a backslash between double quotes with C escapes (`\\t`, `\\"`,
    `\\\\`, octal bytes such as `\\145` for `e`, UTF-8 as octal bytes; core.quotePath).
    `"b/t\\145sts/x.py"` -> `b/tests/x.py`. A path not in that form comes back as it is; a
    malformed escape is kept literally (bytes that are not UTF-8 decode to U+FFFD). Git, `git
    apply` and `patch` decode these names, so every reader of a diff's paths must too: an encoded
    `tests/` or `../` read literally escapes the test-path and path-safety checks."""
    if len(path) < 2 or not (path.startswith('"') and path.endswith('"')):
        return path
    body, out, i = path[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _C_ESCAPES:
                out.append(_C_ESCAPES[nxt])
                i += 2
                continue
            if re.fullmatch(r"[0-3][0-7]{2}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
        out += c.encode("utf-8")
        i += 1
    return out.decode("utf-8", errors="replace")


def _strip_prefix(path: str) -> str:
    path = unquote_git_path(path.strip().split("\t")[0] if not path.strip().startswith('"') else path.strip())
    return path[2:] if path.startswith(("a/", "b/")) else path


def files_in_patch(patch: str) -> list[str]:
    """Paths (relative to the repository root) a unified diff touches, in order, unique.

    A modified or added file gives its path, a deleted file its old path, a rename both.
    Parsed with unidiff; a patch unidiff rejects (miscounted hunks) is read from its
    `diff --git` / `+++` / `---` header lines instead. Never raises.
    """
    out: list[str] = []

    def add(p: str | None) -> None:
        if p and p != "/dev/null" and p not in out:
            out.append(p)

    try:
        from unidiff import PatchSet

        for pf in PatchSet(patch):
            src, tgt = _strip_prefix(pf.source_file or ""), _strip_prefix(pf.target_file or "")
            if pf.is_removed_file:
                add(src)
            elif pf.is_added_file:
                add(tgt)
            else:
                add(src if src != tgt else None)
                add(tgt)
        if out:
            return out
    except Exception:
        out.clear()
    for line in patch.splitlines():
        q = _DIFF_GIT_QUOTED.match(line.rstrip("\r")) if '"' in line else None
        m = None if q else _DIFF_GIT.match(line.rstrip("\r"))
        if q:
            add(_strip_prefix(q.group(1)))
            add(_strip_prefix(q.group(2)))
        elif m:
            add(m.group(1))
            add(m.group(2))
        elif line.startswith(("+++ ", "--- ")) and not line.startswith(("+++ /dev/null", "--- /dev/null")):
            add(_strip_prefix(line[4:].rstrip("\r")))
    return out


def paths_after(patch: str) -> list[str]:
    """The paths of `files_in_patch` that exist once the diff is applied, in order: added and
    modified files and the new name of a rename; not a deleted file, not a rename's old name.
    These are what a runner can be given on a side that has the diff (passing a renamed test
    file's old name makes pytest stop with "file not found", redis' `runtest --single` with
    "couldn't read file"). Never raises."""
    gone: set[str] = set()
    try:
        from unidiff import PatchSet

        for pf in PatchSet(patch):
            src, tgt = _strip_prefix(pf.source_file or ""), _strip_prefix(pf.target_file or "")
            if pf.is_removed_file:
                gone.add(src)
            elif not pf.is_added_file and src != tgt:
                gone.add(src)
    except Exception:
        for section in file_sections(patch):
            m = _DIFF_GIT.match(section.splitlines()[0].rstrip("\r")) if section else None
            if m and (m.group(1) != m.group(2) or re.search(r"^\+\+\+ /dev/null", section, flags=re.M)):
                gone.add(m.group(1))
    return [f for f in files_in_patch(patch) if f not in gone]


_SYMLINK_MODE = re.compile(r"^(?:new file mode|new mode|index [0-9a-f]+\.\.[0-9a-f]+) 120000\s*$", re.M)


def symlinks_in_patch(patch: str) -> dict[str, str]:
    """Link path -> target of every symbolic link `patch` creates or changes (a git diff section
    whose new mode is 120000: its target is the added line). Never raises."""
    out: dict[str, str] = {}
    for section in file_sections(patch):
        if not _SYMLINK_MODE.search(section):
            continue
        paths = paths_after(section)
        added = [line[1:] for line in section.splitlines() if line.startswith("+") and not line.startswith("+++")]
        if paths:
            out[paths[-1]] = added[0] if added else ""
    return out


def unsafe_paths(patch: str) -> list[str]:
    """Paths of `patch` (`files_in_patch`, and the `rename`/`copy` header lines) that would leave
    the repository or reach its git folder when applied: absolute, with a `..` or `.git`
    component, or holding a control character; a symbolic link the patch creates whose target
    leaves the repository or points into its git folder (absolute, climbing above the root, a
    `.git` component; shown as `link -> target`); a path below a link the patch creates
    (`patch -p1` writes through it: `lnk -> .git/hooks` then `lnk/post-checkout` put a hook in
    .git that the reset's own `git checkout` runs). `git apply` refuses such paths; `patch -p1`
    (the ladder's last step), the eval script's reset loop and host-side readers would not. Never
    raises."""
    paths = list(files_in_patch(patch))
    for line in patch.splitlines():
        m = _RENAME.match(line)
        if m and unquote_git_path(m.group(1)) not in paths:
            paths.append(unquote_git_path(m.group(1)))
    bad = []
    for p in paths:
        parts = PurePosixPath(p).parts
        if (p.startswith("/") or any(c == ".." or c.lower() == ".git" for c in parts) or any(ord(c) < 0x20 or ord(c) == 0x7f for c in p)
                or not parts):
            bad.append(p)
    links = symlinks_in_patch(patch)
    for link, target in links.items():
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(link), target)) if target else ""
        if (not target or target.startswith("/") or resolved == ".." or resolved.startswith("../")
                or any(c.lower() == ".git" for c in PurePosixPath(resolved).parts)):
            bad.append(f"{link} -> {target}")
    for p in paths:
        if any(p.startswith(link.rstrip("/") + "/") for link in links) and p not in bad:
            bad.append(p)
    return bad


def unsafe_paths_problem(patch: str, field: str = "patch") -> str | None:
    """One line naming the `unsafe_paths` of `patch` (the row's `field`), or None."""
    from envpool.quoting import shown

    bad = unsafe_paths(patch)
    if not bad:
        return None
    listed = ", ".join(shown(b, 80) for b in bad[:3]) + (f" (+{len(bad) - 3} more)" if len(bad) > 3 else "")
    return f"{field} touches a path outside the repository or in its .git folder: {listed}"


def shared_files(patch: str, test_patch: str) -> list[str]:
    """Paths both `patch` and `test_patch` touch (`files_in_patch` of each), sorted; [] for a
    well-formed SWE-bench row. SWE-bench resets the test_patch's files and applies the test_patch
    after the (model or gold) patch, so a `patch` editing one of them changes the tests it is
    graded by -- or no longer applies once they are reset. Never raises."""
    return sorted(set(files_in_patch(patch)) & set(files_in_patch(test_patch)))


def shared_files_problem(patch: str, test_patch: str) -> str | None:
    """Why a row whose `patch` touches files its `test_patch` adds or changes cannot be graded
    (`shared_files`), or None. SWE-bench resets those files and applies the test_patch after the
    patch, so a gold patch never touches them."""
    shared = shared_files(patch, test_patch)
    if not shared:
        return None
    shown = ", ".join(shared[:5]) + (f" (+{len(shared) - 5} more)" if len(shared) > 5 else "")
    return (f"patch and test_patch both touch {shown}: the test files are reset and the test_patch applied after "
            "the patch, so the patch must not change them")


def changed_lines(patch: str) -> dict[str, list[str]]:
    """Path -> the lines the patch adds or removes in it (without the `+`/`-`), by unidiff; {}
    when unidiff cannot read the patch. Never raises."""
    try:
        from unidiff import PatchSet

        out: dict[str, list[str]] = {}
        for pf in PatchSet(patch):
            path = _strip_prefix((pf.source_file if pf.is_removed_file else pf.target_file) or "")
            out.setdefault(path, []).extend(line.value.rstrip("\n") for hunk in pf for line in hunk
                                            if line.is_added or line.is_removed)
        return out
    except Exception:
        return {}


def added_lines(patch: str) -> dict[str, list[str]]:
    """Path -> the lines the patch adds to it (without the `+`), by unidiff; a patch unidiff
    cannot read (miscounted hunks) is read section by section (`sections_by_path`: its `+`
    lines outside the `+++` header). Never raises."""
    try:
        from unidiff import PatchSet

        out: dict[str, list[str]] = {}
        for pf in PatchSet(patch):
            path = _strip_prefix((pf.source_file if pf.is_removed_file else pf.target_file) or "")
            out.setdefault(path, []).extend(line.value.rstrip("\n") for hunk in pf for line in hunk if line.is_added)
        return out
    except Exception:
        return {path: [line[1:] for line in section.splitlines() if line.startswith("+") and not line.startswith("+++ ")]
                for path, section in sections_by_path(patch).items()}


def file_after(patch: str, path: str, before: str) -> str | None:
    """The text of `path` once `patch` is applied to `before` (its text at the base), by ``git
    apply`` in a scratch folder (only that file's section is applied); `before` unchanged when
    the patch does not touch `path`; None when that section does not apply. Never raises."""
    import subprocess
    import tempfile

    if path not in files_in_patch(patch):
        return before
    if path.startswith("/") or ".." in PurePosixPath(path).parts:  # never a file outside the scratch folder
        return None
    with tempfile.TemporaryDirectory(prefix="swemint-after-") as d:
        target = Path(d) / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(before, encoding="utf-8")
        try:
            r = subprocess.run(["git", "apply", "--include", path, "-"], cwd=d, input=ensure_final_newline(patch),
                               text=True, capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return target.read_text(encoding="utf-8") if r.returncode == 0 else None


def texts_after(patch: str, paths: list[str], base) -> dict[str, str]:
    """Path -> its text once `patch` is applied to the files it touches as `base(path)` gives them
    (`git apply` of the whole patch in a scratch folder, so a rename or copy brings its source's
    text), for each of `paths` the patch leaves in place ("" for one it deletes); {} when the
    patch does not apply there or touches a path outside the folder. Never raises."""
    import subprocess
    import tempfile

    touched = files_in_patch(patch)
    if unsafe_paths(patch):
        return {}
    with tempfile.TemporaryDirectory(prefix="swemint-after-") as d:
        for q in touched:
            text = _base_text(base, q)
            if text is not None:
                target = Path(d) / q
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")
        try:
            r = subprocess.run(["git", "apply", "-"], cwd=d, input=ensure_final_newline(patch), text=True,
                               capture_output=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return {}
        if r.returncode != 0:
            return {}
        out = {}
        for p in paths:
            f = Path(d) / p
            out[p] = f.read_text(encoding="utf-8", errors="replace") if f.is_file() and not f.is_symlink() else ""
        return out


def touched_words(patch: str) -> set[str]:
    """The identifiers (``[A-Za-z_][A-Za-z0-9_]*``) of the lines `patch` adds or removes and of
    its hunks' section headers (git's enclosing-function context: ``@@ -3236,9 +3236,16 @@ func
    TestX(t *testing.T) {`` names TestX, whose body the hunk changes -- git's heuristic, so it may
    also name the function just before an added one); set() when unidiff cannot read the patch.
    Never raises."""
    try:
        from unidiff import PatchSet

        text = []
        for pf in PatchSet(patch):
            for hunk in pf:
                text.append(hunk.section_header or "")
                text.extend(line.value for line in hunk if line.is_added or line.is_removed)
        return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(text)))
    except Exception:
        return set()


def is_test_path(path: str, language: str | None = None) -> bool:
    """True when `path` is test code, test data or test infrastructure by its path alone, under
    the one rule set (`envpool.testpaths`, the groups of `language`; None: every group): a test
    folder (tests/, __tests__/, spec/, testdata/, src/test/...), a test module's name
    (`test_*.py`, `*_test.go`, `FooTest.java`, `*.spec.ts`...), a runner's file (conftest.py,
    pytest.ini, jest.config.js...)."""
    return rules_for(language).is_test(path)


def split_test_files(paths: list[str], language: str | None = None) -> tuple[list[str], list[str]]:
    """Split paths into (test files, other files) with `is_test_path`, keeping order."""
    tests = [p for p in paths if is_test_path(p, language)]
    return tests, [p for p in paths if not is_test_path(p, language)]


def file_sections(diff: str) -> list[str]:
    """The per-file sections of a git diff, as exact text (each starts with `diff --git`; a diff
    without such a line is one section). The one place a diff is cut into files: every other
    reader asks this module (`sections_by_path`, `files_in_patch`, ...)."""
    starts = [m.start() for m in re.finditer(r"^diff --git ", diff, flags=re.M)]
    if not starts:
        return [diff] if diff.strip() else []
    return [diff[a:b] for a, b in zip(starts, starts[1:] + [len(diff)], strict=True)]


def sections_by_path(diff: str) -> dict[str, str]:
    """Path -> that file's section of a git diff (exact text, `file_sections`), in order: the
    path the file has once the diff is applied, a deleted file's old path (by `paths_after` /
    `files_in_patch`, so unidiff reads the headers); a section naming no path is left out.
    Never raises."""
    out: dict[str, str] = {}
    for section in file_sections(diff):
        paths = paths_after(section) or files_in_patch(section)
        if paths:
            out[paths[-1]] = out.get(paths[-1], "") + section
    return out


def changed_line_count(diff: str) -> int:
    """Added plus removed lines of a unified diff (headers not counted), by unidiff; a diff
    unidiff cannot read is counted from its `+`/`-` lines outside the `+++`/`---` headers.
    Never raises."""
    try:
        from unidiff import PatchSet

        return sum(pf.added + pf.removed for pf in PatchSet(diff))
    except Exception:
        return sum(1 for line in diff.splitlines() if line[:1] in "+-" and not line.startswith(("+++ ", "--- ")))


def file_changes(patch: str, base=None) -> dict[str, list[tuple[list[str], list[str]]]]:
    """Path -> its changes as `TestPathRules.config_hit` reads them: (the lines above the change,
    nearest last; the changed lines), by unidiff; {} when unidiff cannot read the patch. Never
    raises. `base(path) -> str | None`: the file's text before the patch; where it gives one, the
    lines above a change are the base text's down to the hunk and the hunk's own lines, so a
    section header more lines above than the hunk's context still counts (the hunk's `@@ ... @@`
    header text, which `git apply` ignores and anyone may write, is then not read); otherwise
    the hunk's section header and its old-side lines above the change."""
    try:
        from unidiff import PatchSet

        out: dict[str, list[tuple[list[str], list[str]]]] = {}
        texts: dict[str, list[str] | None] = {}
        for pf in PatchSet(patch):
            path = _strip_prefix((pf.source_file if pf.is_removed_file else pf.target_file) or "")
            old_path = _strip_prefix(pf.source_file or "") if not pf.is_added_file else ""
            if base is not None and old_path and old_path not in texts:
                text = _base_text(base, old_path)
                texts[old_path] = text.splitlines() if text is not None else None
            known = texts.get(old_path) if old_path else None
            changes = out.setdefault(path, [])
            for hunk in pf:
                if known is not None:
                    start = hunk.source_start - 1 if hunk.source_length else hunk.source_start
                    above = known[:max(start, 0)]
                else:
                    above = [hunk.section_header] if hunk.section_header else []
                run: list[str] = []
                for line in hunk:
                    text = line.value.rstrip("\n")
                    if line.is_added or line.is_removed:
                        if not run:
                            changes.append((list(above), run))
                        run.append(text)
                        if line.is_removed:
                            above.append(text)
                    else:
                        run = []
                        above.append(text)
        return out
    except Exception:
        return {}


def _base_text(base, path: str) -> str | None:
    """`base(path)`, None when it raises."""
    try:
        return base(path)
    except Exception:
        return None


def grading_paths(patch: str, rules: TestPathRules | None = None, base=None) -> list[str]:
    """The paths of `patch` (`files_in_patch`) that are test code or test infrastructure under
    `rules` (default: every group of `envpool.testpaths`): test paths (`TestPathRules.is_test`)
    and shared configuration files whose changes touch runner configuration (a `[tool:pytest]`
    section, a package.json `"jest"` key, a CMake `add_test`, a Makefile `test:` target). A patch
    unidiff cannot read counts every such configuration file it names. Never raises.

    `base(path) -> str | None`: a file's text before the patch (the repository at base_commit;
    None: not there). With it a configuration file is judged from its two texts
    (`TestPathRules.config_changed`: the base text and the one `file_after` gives), so what the
    hunks alone cannot show counts: a change far below its `[tool:pytest]` header (a hunk's
    three context lines do not reach it, and its `@@` header text is the author's), a key added
    deep inside package.json's `"jest"`. Without it (a PR diff from an API) the hunks decide."""
    rules = rules or rules_for(None)
    changes = None
    out = []
    paths = files_in_patch(patch)
    configs = [p for p in paths if rules.kind(p) == "config"]
    after = texts_after(patch, configs, base) if base is not None and configs else {}
    links = symlinks_in_patch(patch) if configs else {}
    for p in paths:
        kind = rules.kind(p)
        if kind == "config" and p not in links:  # a configuration file made a link: whatever it reads counts
            old = _base_text(base, p) if base is not None else None
            new = after.get(p)
            if new is not None:  # a file the patch adds (by a rename or a copy too) has no base text: ""
                if not rules.config_changed(p, old or "", new):
                    continue
            else:
                if changes is None:
                    changes = file_changes(patch, base)
                if p in changes and not rules.config_hit(p, changes[p]):
                    continue
        if kind is None and base is not None and rules.shadows_below(p, lambda d: _is_package(d, paths, base)):
            kind = "support"
        if kind is not None:
            out.append(p)
    return out


def _is_package(folder: str, paths, base) -> bool:
    """True when `folder` holds an `__init__.py` the patch adds (`paths`: its files) or the base
    tree has (`base(path)`: its text or None)."""
    init = f"{folder}/__init__.py"
    return init in paths or _base_text(base, init) is not None


def grading_paths_problem(patch: str, language: str | None = None, base=None) -> str | None:
    """Why a row whose `patch` (the fix) changes test code or test infrastructure is no valid
    task (`grading_paths` under the rules of `language`, `base` as there), naming the paths;
    None when it does not. SWE-bench's collection puts every such file in the test_patch: a fix
    that edits what grades it proves nothing, and rewards any model patch making the same edit."""
    paths = grading_paths(patch, rules_for(language), base)
    if not paths:
        return None
    shown = ", ".join(paths[:8]) + (f" (+{len(paths) - 8} more)" if len(paths) > 8 else "")
    return f"the patch changes test code or test infrastructure: {shown}"


class Split(NamedTuple):
    """A PR diff split by the rule set: `patch` (the fix), `test_patch` (test code and test
    infrastructure) and `moved`: the test_patch's paths that are not tests themselves but test
    infrastructure or runner configuration (conftest.py, pytest.ini, a package.json whose
    `"jest"` key changed) -- what a split by test folders and names alone would have left in
    the fix."""

    patch: str
    test_patch: str
    moved: list[str]


def split_by_rules(diff: str, rules: TestPathRules | None = None, base=None) -> Split:
    """Split a PR's git diff into `Split(patch, test_patch, moved)` by `grading_paths` (`base`:
    the files' texts before the diff, as there), file sections kept verbatim and in order: a
    section any of whose paths (old or new name) is test code or test infrastructure goes to the
    test_patch, whole (a file cannot be in both: the test files are reset before the test_patch
    is applied)."""
    rules = rules or rules_for(None)
    code: list[str] = []
    tests: list[str] = []
    moved: list[str] = []
    for section in file_sections(diff):
        hits = grading_paths(section, rules, base)
        if hits:
            tests.append(section)
            moved += [p for p in hits if rules.kind(p) in ("support", "config") and p not in moved]
        else:
            code.append(section)
    return Split("".join(code), "".join(tests), moved)


def split_patch(diff: str, rules: TestPathRules | None = None) -> tuple[str, str]:
    """Split a PR's git diff into (patch, test_patch) by path, file sections kept verbatim
    (`split_by_rules`)."""
    split = split_by_rules(diff, rules)
    return split.patch, split.test_patch


class ToolingSplit(NamedTuple):
    """A fix split by the rule set's `tooling` (`tooling_split`): `paths`, the tooling files whose
    hunks (all or some) are left out; `core`, the patch without those hunks (file sections and the
    hunks kept verbatim, in order); `kept`, tooling files whose every hunk only lists the patch's
    own files and stays in `core`."""

    paths: list[str]
    core: str
    kept: list[str]


_HUNK_START = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)")


def _own_files(patch: str) -> tuple[list[str], list[str]]:
    """(files the patch adds or renames to, files it deletes or renames from), by unidiff; ([], [])
    when it cannot read the patch."""
    new: list[str] = []
    gone: list[str] = []
    try:
        from unidiff import PatchSet

        for pf in PatchSet(patch):
            src, tgt = _strip_prefix(pf.source_file or ""), _strip_prefix(pf.target_file or "")
            if pf.is_added_file:
                new.append(tgt)
            elif pf.is_removed_file:
                gone.append(src)
            elif src != tgt:
                new.append(tgt)
                gone.append(src)
    except Exception:
        return [], []
    return new, gone


def _kept_hunks(section: str, new: list[str], gone: list[str]) -> tuple[str, bool]:
    """(the section with only its hunks that list the patch's own files (`TestPathRules`'
    `lists_only`), whether every hunk is such a one). A section unidiff cannot read, without
    hunks (a mode change, a binary file, a pure rename) or whose `@@` lines do not match unidiff's
    hunks keeps none. The kept hunks' text is the section's; a hunk after a dropped one has its
    new-side start moved by what the dropped ones added or removed."""
    try:
        from unidiff import PatchSet

        files = list(PatchSet(section))
    except Exception:
        return "", False
    if len(files) != 1 or files[0].is_binary_file or not len(files[0]):
        return "", False
    lines = section.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if _HUNK_START.match(line)]
    hunks = list(files[0])
    if len(starts) != len(hunks):
        return "", False
    keep = [lists_only([x.value.rstrip("\n") for x in h if x.is_added],
                       [x.value.rstrip("\n") for x in h if x.is_removed], new, gone) for h in hunks]
    if not any(keep):
        return "", False
    out, shift = lines[:starts[0]], 0
    for i, (h, kept) in enumerate(zip(hunks, keep, strict=True)):
        chunk = lines[starts[i]:starts[i + 1] if i + 1 < len(starts) else len(lines)]
        if not kept:
            shift += h.added - h.removed
            continue
        if shift:
            m = _HUNK_START.match(chunk[0])
            if m is not None:
                start = max(int(m.group(1)) - shift, 0)
                chunk = [chunk[0][:m.start(1)] + str(start) + chunk[0][m.end(1):], *chunk[1:]]
        out += chunk
    return "".join(out), all(keep)


def new_modules(patch: str) -> list[str]:
    """The folders `patch` creates as modules of its build, sorted: a folder D such that the patch
    adds a file named as a module's build file (`envpool.testpaths.MODULE_BUILD_FILES`: D/pom.xml,
    D/CMakeLists.txt, ...) as a new file AND an added line (`added_lines`) of a parent build file
    of the matching kind registers D anywhere in the line (`module_entries`: pom.xml `<module>`,
    CMakeLists.txt `add_subdirectory`, meson.build `subdir`, settings.gradle `include`, go.work
    `use`; relative to that file, never out of the repository). The tooling check excuses a FAIL_TO_PASS test of such a module that
    could not run without the fix's build files (`agents.verification`). Never raises."""
    added, _ = _own_files(patch)
    made = {posixpath.dirname(p) for p in added if PurePosixPath(p).name in MODULE_BUILD_FILES}
    out: set[str] = set()
    for build_file, lines in added_lines(patch).items():
        here = posixpath.dirname(build_file)
        for line in lines:
            for entry in module_entries(line, build_file, whole=False) or []:
                folder = posixpath.normpath(posixpath.join(here, entry))
                if folder in made and not folder.startswith(("..", "/")) and folder != ".":
                    out.add(folder)
    return sorted(out)


def names_test_file(test_id: str, files: list[str]) -> bool:
    """Whether runner id `test_id` names a test in one of `files` (repository paths): a path id
    (`pkg/test_x.py::Class::test`, `extra/x.test.js > title`) starting with the file's path, or a
    JVM-style class id (`com.acme.ExtraTest#twice`, `com.acme.ExtraTest.twice`) whose dotted
    class is the tail of the file's path less its extension (`.../com/acme/ExtraTest.java`)."""
    head = re.split(r"::| > |#|\s|\[|\(", test_id, maxsplit=1)[0]
    for f in files:
        if head == f or test_id.startswith(f + "::") or test_id.startswith(f + " "):
            return True
        if "/" in head:
            continue  # a path id names its file by path only
        stem = posixpath.splitext(f)[0]
        parts = head.split(".")
        for cut in (len(parts), len(parts) - 1):  # Class or Class.method
            dotted = "/".join(parts[:cut])
            if dotted and (stem == dotted or stem.endswith("/" + dotted)):
                return True
    return False


def tooling_split(patch: str, language: str | None = None, rules: TestPathRules | None = None) -> ToolingSplit:
    """The fix `patch` without its build and test-tooling hunks (`ToolingSplit`), by the rule set's
    `tooling` of `language` (`TestPathRules.is_tooling`; `rules` overrides): the file sections
    (`file_sections`) of files that configure how the project is built or its tests run -- a
    dotfile or dot-folder, `*.config.*`, a Makefile, CMakeLists.txt, pom.xml, package.json,
    pyproject.toml, ... (either name of a rename) -- lose every hunk except those that only list
    the patch's own added, renamed or deleted files (`envpool.testpaths.lists_only`: a source
    file added to a CMake/Makefile/meson/Bazel list stays, so the fix still builds); a section
    left without hunks goes whole. The verification's `core` side applies `core`: a FAIL_TO_PASS
    that does not hold there depends on the fix's tooling changes (unless it belongs to a module
    the fix creates, `new_modules`). Never raises."""
    rules = rules or rules_for(language)
    sections = file_sections(patch)
    marked = [(s, [p for p in files_in_patch(s) if rules.is_tooling(p)]) for s in sections]
    if not any(t for _, t in marked):
        return ToolingSplit([], patch, [])
    new, gone = _own_files(patch)
    new = [p for p in new if not rules.is_tooling(p)]
    gone = [p for p in gone if not rules.is_tooling(p)]
    out: list[str] = []
    paths: list[str] = []
    kept: list[str] = []
    for section, tooling in marked:
        if not tooling:
            out.append(section)
            continue
        text, whole = _kept_hunks(section, new, gone)
        if whole:
            kept += [p for p in tooling if p not in kept]
        else:
            paths += [p for p in tooling if p not in paths]
        if text:
            out.append(text)
    return ToolingSplit(paths, "".join(out), kept)


def test_files_to_run(test_patch: str) -> list[str]:
    """Python test modules to hand to pytest from a test_patch, in order: the files the patch
    leaves in the tree (`paths_after`) in the Python group's `run` role of the one rule set
    (`envpool.testpaths.role`): `.py` files named like tests (`test*.py`, `*_test.py`,
    `*_tests.py`) or in a test folder (`tests/unittest_x.py`) outside its data/fixture/helper
    folders; never conftest.py, __init__.py or setup.py."""
    return role("python", "run").select(paths_after(test_patch))  # not a deleted file, not a rename's old name


test_files_to_run.__test__ = False  # type: ignore[attr-defined]  # not a pytest test


# -- normalisation (pure) ---------------------------------------------------------------------

def ensure_final_newline(patch: str) -> str:
    """The patch with a final newline (a patch cut without one is "corrupt" to git apply)."""
    return patch if not patch or patch.endswith("\n") else patch + "\n"


def _walk(lines: list[str]):
    """Classify diff lines: yields (line without its `\\r`, kind, path, new_file) with kind in
    "header" (outside hunks), "hunk" (an `@@` line), "body" (hunk content or a `\\ No newline`
    marker) and "blank_context" (an empty line inside a hunk: a context line that lost its
    space). Hunk extents come from the `@@ -a,b +c,d @@` counts."""
    path, new_file = "", False
    old_left = new_left = 0
    for line in lines:
        body = line[:-1] if line.endswith("\r") else line
        if old_left > 0 or new_left > 0:
            tag = body[:1]
            if body == "" and old_left > 0 and new_left > 0:
                old_left, new_left = old_left - 1, new_left - 1
                yield body, "blank_context", path, new_file
                continue
            if tag in (" ", "-", "+", "\\"):
                old_left -= tag in (" ", "-")
                new_left -= tag in (" ", "+")
                yield body, "body", path, new_file
                continue
            old_left = new_left = 0  # malformed hunk: treat the rest as headers
        m = _HUNK.match(body)
        if m:
            old_left = int(m.group(1)) if m.group(1) is not None else 1
            new_left = int(m.group(2)) if m.group(2) is not None else 1
            yield body, "hunk", path, new_file
            continue
        if body.startswith("\\"):
            yield body, "body", path, new_file
            continue
        g = _DIFF_GIT.match(body)
        if g:
            path, new_file = g.group(2), False
        elif body.startswith("new file mode"):
            new_file = True
        elif body.startswith("--- "):
            new_file = body.startswith("--- /dev/null")
        elif body.startswith("+++ ") and not body.startswith("+++ /dev/null"):
            path = _strip_prefix(body[4:])
        yield body, "header", path, new_file


def fix_blank_context_lines(patch: str) -> str:
    """Give blank context lines back their leading space inside hunks.

    Editors and web forms strip the single space of an empty context line, leaving an empty
    line inside a hunk; git apply then reports a corrupt patch. Hunk extents come from the
    `@@ -a,b +c,d @@` headers: an empty line (or a lone `\\r`) while both sides still expect
    lines becomes " " (its `\\r` kept). Everything else is unchanged.
    """
    lines = patch.split("\n")
    out = []
    for line, (_body, kind, _p, _n) in zip(lines, _walk(lines), strict=True):
        out.append(" " + line if kind == "blank_context" else line)
    return "\n".join(out)


def _is_crlf_patch(patch: str) -> bool:
    lines = patch.split("\n")[:-1] if patch.endswith("\n") else patch.split("\n")
    return bool(lines) and sum(1 for x in lines if x.endswith("\r")) * 2 > len(lines)


def match_line_endings(patch: str, crlf_files: set[str] | frozenset[str] = frozenset()) -> str:
    """Make each file's hunk lines use its target file's line endings.

    `crlf_files`: paths whose file in the repository uses CRLF. Their hunk lines end in
    `\\r\\n` (except a last line followed by `\\ No newline at end of file`); every other
    existing file's hunk lines end in `\\n` (fixes a CRLF patch for LF files, the usual
    breakage). New files keep the patch's endings, except in a patch that is CRLF throughout
    (saved on Windows), where they become LF. Header lines always become LF.
    """
    crlf_patch = _is_crlf_patch(patch)
    lines = patch.split("\n")
    walked = list(_walk(lines))
    out = []
    for i, (line, (body, kind, path, new_file)) in enumerate(zip(lines, walked, strict=True)):
        if kind not in ("body", "blank_context") or body.startswith("\\"):
            out.append(body)
        elif new_file:
            out.append(body if crlf_patch else line)
        elif path in crlf_files:
            nxt = walked[i + 1][0] if i + 1 < len(walked) else ""
            out.append(body if nxt.startswith("\\") else body + "\r")
        else:
            out.append(body)
    return "\n".join(out)


def normalise_patch(patch: str, crlf_files: set[str] | frozenset[str] = frozenset()) -> str:
    """All normalisations in order: line endings, blank context lines, final newline."""
    return ensure_final_newline(fix_blank_context_lines(match_line_endings(patch, crlf_files)))


# -- applying in a sandbox --------------------------------------------------------------------

def crlf_files_in_sandbox(sandbox: Sandbox, paths: list[str], workdir: str = "/testbed") -> set[str]:
    """Which of `paths` (relative to `workdir`) exist and use CRLF for most of their lines."""
    if not paths:
        return set()
    quoted = " ".join(shlex.quote(p) for p in paths)
    script = (f"for f in {quoted}; do [ -f \"$f\" ] || continue; "
              "t=$(wc -l < \"$f\"); c=$(grep -c $'\\r$' \"$f\" || true); "
              "[ $((2*c)) -gt \"$t\" ] && printf '%s\\n' \"$f\"; done; true")
    r = sandbox.exec(script, timeout=60, workdir=workdir, log_label="patch-crlf")
    found = {line.strip() for line in r.output.splitlines() if line.strip()}
    return {p for p in paths if p in found}


def inside_tree_check(paths: list[str]) -> str:
    """Shell, run in the work tree: exit 0 when the folder of every one of `paths` resolves (links
    followed, `realpath -m`) inside the work tree and outside its .git, else print the first
    that does not and exit 1. `git apply` refuses to write beyond a link; `patch -p1` follows
    one the tree already has (`hooks -> .git/hooks`, then `hooks/post-checkout`)."""
    quoted = " ".join(shlex.quote(p) for p in paths) or "''"
    return ('top=$(pwd -P); for f in ' + quoted + '; do [ -n "$f" ] || continue; '
            'd=$(realpath -m -- "$(dirname -- "$f")"); case "$d/" in "$top/.git/"*) ;; "$top/"*) continue ;; esac; '
            'echo "swemint: $f resolves to $d, outside the work tree or in its .git"; exit 1; done; true')


def apply_patch(sandbox: Sandbox, patch: str, *, workdir: str = "/testbed", label: str = "patch",
                instance_id: str | None = None) -> str:
    """Apply unified diff `patch` to the git repository at `workdir` inside `sandbox`.

    Returns the method that worked: "git_apply", "git_apply_normalised" or "patch_fuzz"
    ("empty" for a blank patch, nothing done). Raises `PatchApplyError` (with `instance_id`)
    naming every failed attempt with the tail of its output; the tree is left as it was,
    except for what a successful method changed. `label` names the files and log lines.
    A patch with `unsafe_paths` (out of the tree, into .git, through a link it makes) is refused
    before anything runs, whoever wrote it (a row's or a model's patch); `patch -p1` runs only
    when every folder it would write resolves inside the tree and outside .git
    (`inside_tree_check`): a hook it put in .git would run at the reset's `git checkout`.
    """
    if not patch.strip():
        return "empty"
    if unsafe := unsafe_paths_problem(patch, label):  # every patch, a model's too: never into .git or out
        raise PatchApplyError(unsafe, instance_id=instance_id)
    name = f"{re.sub(r'[^A-Za-z0-9_.-]', '_', label)}-{uuid.uuid4().hex[:8]}"
    raw_path, norm_path = f"{PATCH_DIR}/{name}.diff", f"{PATCH_DIR}/{name}.normalised.diff"
    sandbox.put_file(raw_path, patch.encode("utf-8", errors="surrogateescape"))
    failures: list[str] = []

    def attempt(method: str, command: str) -> bool:
        r = sandbox.exec(command, timeout=300, workdir=workdir, log_label=f"{label}:{method}")
        if r.ok:
            return True
        failures.append(f"{method} (exit {r.exit_code}): {r.output.strip()[-800:]}")
        return False

    if attempt("git_apply", f"git apply -v {raw_path}"):
        return "git_apply"
    normalised = normalise_patch(patch, crlf_files_in_sandbox(sandbox, files_in_patch(patch), workdir))
    sandbox.put_file(norm_path, normalised.encode("utf-8", errors="surrogateescape"))
    if attempt("git_apply_normalised", f"git apply -v --recount --ignore-whitespace {norm_path}"):
        return "git_apply_normalised"
    opts = f"-p1 --batch --forward --fuzz=2 --no-backup-if-mismatch -r - -i {norm_path}"
    if attempt("patch_fuzz_paths", inside_tree_check(files_in_patch(patch))) and \
            attempt("patch_fuzz_dry_run", f"patch --dry-run {opts}") and \
            attempt("patch_fuzz", f"patch {opts}"):
        return "patch_fuzz"
    raise PatchApplyError(f"{label} does not apply: " + " | ".join(failures), instance_id=instance_id)

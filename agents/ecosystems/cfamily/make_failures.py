"""Class S37 (a build that fails only in its documentation): which failures of a GNU make run
are its own and where they happened, read from make's console output.

Standard library only: the setup of the S37 ``make -k`` route installs this file into the build
container (`c_docs.keep_going`), where it decides whether a failed ``make -k`` may be tolerated;
the loop (`c_docs.docs_failure`) reads the setup step's output with the same code.

GNU make prints ``make[N]: Entering directory 'D'`` / ``Leaving directory 'D'`` around a sub-make
(level N) and ``make[N]: *** [Makefile:L: target] Error C`` for a failed target (``make: ***``
at the top level; ``make[N]: *** No rule to make target 'x'...`` for a missing rule). A sub-make
that failed makes its parent's recipe fail: the parent prints one error of its own for it (an
automake ``all-recursive``), which says nothing new. `failures` drops exactly those: each
failed sub-make's ``Leaving directory`` (an error was printed at its level since it entered)
explains one error of its parent's level (its ``Error N (ignored)`` line when the parent ignores it;
never an error making compiled code: `object_target`); what remains are the failures that happened in that
folder (a compile, a man page whose tool is missing). An error of a sub-make whose ``Entering``
line is not in the output (a tail of it) gets the folder of the ``Leaving`` line that follows,
unless another sub-make of its level enters first (then it stays `UNKNOWN`).

Run as a script (``python3 make_failures.py --root /testbed --dirs doc,docs,...`` with make's
output on stdin): exit 0 when make's output holds failures and every one is documentation
(a docs folder at any depth below the root, or a documentation target: `docs_target`), 1 when
one is not (each printed), 2 when the output names no failure (nothing to tolerate)."""

from __future__ import annotations

import argparse
import posixpath
import re
import sys
from typing import NamedTuple

_MAKE = r"^(?:\S*/)?g?make(?:\[(\d+)\])?: "
_DIRECTORY = re.compile(_MAKE + r"(Entering|Leaving) directory [`'\u2018\"](.*)['\u2019\"]\s*$")
_ERROR = re.compile(_MAKE + r"\*\*\* (?:\[(?:(?:[^\]]*?):\d+: )?([^\]]+)\] Error \d+|(.*?))\s*$")
_NO_RULE = re.compile(r"No rule to make target [`'\u2018\"]([^'\u2019\"]+)")
_IGNORED = re.compile(_MAKE + r"\[[^\]]*\] Error \d+ \(ignored\)\s*$")

UNKNOWN = "?"
"""The folder of an error whose folder cannot be told (two sub-makes of one level open at once,
a sub-make that never said where it runs): never a documentation folder."""

DOC_SUFFIXES = re.compile(r"\.(?:[1-9][a-z]*|man|html?|xhtml|info|pdf|ps|dvi|epub|chm|texi|txi|docbook)$", re.I)
"""File suffixes of documentation outputs: man pages (``.1`` .. ``.9``, ``.3pm``), HTML, Info,
PDF / PostScript / DVI, EPUB, CHM, Texinfo, DocBook."""

DOC_TARGETS = re.compile(r"^(?:docs?|man|mans|manpages|html|info|pdf|doxygen|doxygen-docs?|doxygen-run|apidocs?|"
                         r"(?:install-)?(?:man|html|info|pdf|dvi|ps)(?:-am|-local|-recursive)?|"
                         r"(?:html|sgml|xml|setup|scan|tmpl|pdf)-build\.stamp|docs?-build\.stamp)$", re.I)
"""Target names of documentation rules: ``doc``/``docs``/``man``/``html``/``doxygen`` ... and
automake's ``html-am`` / ``install-man`` ..., gtk-doc's ``*-build.stamp`` stamps."""


class MakeFailure(NamedTuple):
    """One failure make reported: its make `level` (0: the top make), the `folder` it ran in
    (relative to the root: ``""`` the root itself, ``doc/man``; `UNKNOWN` when not known), the
    failed `target` ("" when the message names none) and make's `line`."""

    level: int
    folder: str
    target: str
    line: str


def _relative(path: str, root: str) -> str:
    path = posixpath.normpath(path)
    root = posixpath.normpath(root)
    if path == root:
        return ""
    if path.startswith(root.rstrip("/") + "/"):
        return path[len(root.rstrip("/")) + 1:]
    return path.lstrip("/") if not root or root == "/" else UNKNOWN


def failures(output: str, root: str = "/testbed") -> list[MakeFailure]:
    """The failures of make's `output` that happened where they are reported (module doc: a
    parent's error for a failed sub-make is dropped), in order. `root`: the folder the top make
    ran in (its own errors are in ``""``; a folder outside it is `UNKNOWN`). Lines that are no
    make message (recipe output, interleaved with -j) are skipped."""
    open_: dict[int, list[str]] = {}
    failed_since: dict[tuple[int, str], bool] = {}
    pending: dict[int, int] = {}
    awaiting: dict[int, list[int]] = {}  # errors of a sub-make whose Entering line was not seen (a tail)
    out: list[MakeFailure] = []
    for line in output.splitlines():
        line = line.rstrip("\r")
        if m := _DIRECTORY.match(line):
            level, folder = int(m.group(1) or 0), _relative(m.group(3), root)
            if m.group(2) == "Entering":
                # errors of this level still awaiting their folder ran in another sub-make (one
                # that never said where, --no-print-directory): they stay UNKNOWN
                awaiting.pop(level, None)
                open_.setdefault(level, []).append(folder)
                failed_since[(level, folder)] = False
            else:
                if folder in open_.get(level, []):
                    open_[level].remove(folder)
                failed = failed_since.pop((level, folder), False)
                if level in awaiting:  # the folder those errors ran in, told by its Leaving line
                    failed = True
                    for i in awaiting.pop(level):
                        if i >= 0:
                            out[i] = out[i]._replace(folder=folder)
                if failed and level > 0:
                    pending[level - 1] = pending.get(level - 1, 0) + 1
            continue
        if m := _IGNORED.match(line):  # a failed sub-make whose error its parent ignores (-$(MAKE)): its report
            level = int(m.group(1) or 0)
            if pending.get(level, 0) > 0:
                pending[level] -= 1
            continue
        m = _ERROR.match(line)
        if not m:
            continue
        level = int(m.group(1) or 0)
        here = open_.get(level, [])
        folder = here[0] if len(here) == 1 else ("" if level == 0 and not here else UNKNOWN)
        if (level, folder) in failed_since:
            failed_since[(level, folder)] = True
        late = level > 0 and not here
        if pending.get(level, 0) > 0 and m.group(2) is not None and not object_target(m.group(2)):
            # a failed sub-make's report in its parent (never a compile or a link of code: that is no report)
            pending[level] -= 1
            if late:
                awaiting.setdefault(level, []).append(-1)
            continue
        target = m.group(2) or ""
        if not target and (nr := _NO_RULE.search(m.group(3) or "")):
            target = nr.group(1)
        if late:
            awaiting.setdefault(level, []).append(len(out))
        out.append(MakeFailure(level, folder, target.strip(), line.strip()))
    return out


OBJECT = re.compile(r"\.(?:o|lo|obj|a|la|so|dylib|dll|exe|gch|pch)$|\.so\.[\d.]+$", re.I)
"""Suffixes of compiled code (objects, libraries, programs with a suffix): a failure to make one
is a compile or a link, never the documentation's and never a failed sub-make's report."""


def object_target(target: str) -> bool:
    """Whether `target` is compiled code (`OBJECT`: ``calc.o``, ``libcalc.la``, ``libcalc.so.1``)."""
    return bool(OBJECT.search(target.strip()))


def docs_folder(folder: str, names: set[str]) -> bool:
    """Whether `folder` (relative, `failures`) lies in a documentation folder: one of its parts
    is one of `names` (lower case, e.g. ``doc``, ``docs``, ``man``) at any depth."""
    if folder in ("", UNKNOWN):
        return False
    return any(part.lower() in names for part in folder.split("/"))


def docs_target(target: str) -> bool:
    """Whether `target` is a documentation output: a man page, HTML, Info, PDF ... file
    (`DOC_SUFFIXES`; a shared library's ``libx.so.1`` is not one), a path through an ``html/``,
    ``man/`` or Doxygen output folder, or a documentation rule's name (`DOC_TARGETS`)."""
    name = posixpath.basename(target.strip())
    if not name:
        return False
    if DOC_TARGETS.match(name):
        return True
    if ".so." in name or name.endswith(".so"):
        return False
    if DOC_SUFFIXES.search(name):
        return True
    parts = target.strip().lower().split("/")[:-1]
    return any(p in ("html", "man", "latex", "doxygen", "xml-docs") or re.fullmatch(r"man[1-9]", p) for p in parts)


def is_docs(f: MakeFailure, names: set[str]) -> bool:
    """Whether failure `f` is the documentation's (`docs_folder` or `docs_target`), never when
    its target is compiled code (`object_target`: a compile in ``lib/man/`` or ``doc/examples/``
    builds code the tests may need)."""
    return not object_target(f.target) and (docs_folder(f.folder, names) or docs_target(f.target))


def main(argv: list[str] | None = None) -> int:
    """The script (module doc): reads make's output from stdin, prints its verdict."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--root", default="/testbed")
    ap.add_argument("--dirs", default="doc,docs,man,manual,documentation")
    args = ap.parse_args(argv)
    names = {n.strip().lower() for n in args.dirs.split(",") if n.strip()}
    found = failures(sys.stdin.read(), args.root)
    if not found:
        print("swemint-docs: make failed but named no failure: not tolerated")
        return 2
    other = [f for f in found if not is_docs(f, names)]
    if other:
        for f in other:
            print(f"swemint-docs: a failure outside the documentation ({f.folder or 'the root'}): {f.line}")
        return 1
    where = sorted({f.folder or f.target for f in found})
    print(f"swemint-docs: only the documentation failed ({', '.join(where)}): tolerated (class S37)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

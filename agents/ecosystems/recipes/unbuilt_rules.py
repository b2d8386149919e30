"""What ``cmake_tests.py`` and ``meson_tests.py`` share (inside the container) to tell whether a
touched compiled source is one no target of the build compiles (class S38): which files are
compiled sources and headers, the ``#include`` lines of the listed sources, the absolute paths a
test's command names, and whether a rule of the native build names a source or its folder.

Installed beside both helpers (``agents/ecosystems/cfamily/c_setup.py``'s ``HELPER_FILES``,
``c_meson.py``'s ``MESON_FILES``). Standard library only (python3 >= 3.5).
"""

import os
import re

COMPILED_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".c++", ".cu", ".m", ".mm")
"""Compiled sources (lower-cased name endings): C, C++, CUDA, Objective-C/C++; not headers."""
HEADER_SUFFIXES = (".h", ".hh", ".hpp", ".hxx", ".h++", ".cuh", ".inl", ".inc", ".ipp", ".tpp")
UNBUILT_SOURCE = "[compiled by no target]"
"""The collector naming a touched source no target compiles (S38): ``<path> [compiled by no target]``."""
_SCRIPT_SUFFIXES = (".sh", ".bash", ".py", ".pl", ".rb", ".tcl", ".mk", "makefile")
"""Scripts (lower-cased name endings) a test may run beside the sources that build them."""
_INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"\n]+)[>"]', re.M)
_ABS_PATH = re.compile(r"""(?:^|(?<=[\s"'=:;,(]))(/[^\s"';,:()]+)""")
BUILD_RULE_LIMIT = 64 * 1024 * 1024
"""Bytes of native build rules `build_rules_name` reads at most (all its files together)."""


def included_names(paths, src):
    """The base names of the files that the ``#include`` lines of the files `paths` (relative to
    `src`, or absolute) name; unreadable files are skipped."""
    names = set()
    for p in paths:
        try:
            with open(os.path.join(src, p), encoding="utf-8", errors="replace") as f:
                text = f.read(4 * 1024 * 1024)
        except (IOError, OSError):
            continue
        names.update(os.path.basename(m.strip()) for m in _INCLUDE.findall(text))
    return names


def abs_paths(arg):
    """The absolute paths an argument of a test's command names: the argument itself, else those
    inside it (``sh -c "make -C /x/tests"``, ``-DDIR=/x/tests``)."""
    if not isinstance(arg, str):
        return []
    if os.path.isabs(arg):
        return [arg]
    return _ABS_PATH.findall(arg)


def command_paths(commands):
    """[(whether it is the program, path)] of the absolute paths the arguments of the tests'
    `commands` (lists; None: none) name (`abs_paths`)."""
    return [(i == 0, p) for cmd in commands for i, arg in enumerate(cmd or []) for p in abs_paths(arg)]


def run_files(named, real_build):
    """The real paths of the files `named` (`command_paths`) a test runs outside the build tree
    `real_build` (a real path): its program, an executable or a script (`_SCRIPT_SUFFIXES`)."""
    for program, path in named:
        real = os.path.realpath(path)
        if not os.path.isfile(real) or real.startswith(real_build + os.sep) or \
                not (program or os.access(real, os.X_OK) or real.lower().endswith(_SCRIPT_SUFFIXES)):
            continue
        yield real


def build_rules_name(build, files, src, rule_files, relative=False, ignore=None):
    """Whether one of the native build's rule files `rule_files` (paths, read in that order, at
    most `BUILD_RULE_LIMIT` bytes in all; an unreadable one is skipped) names one of `files`
    (absolute paths) or a folder holding one below `src` -- also relative to `build` when
    `relative` -- as a word (a custom command's input or command: a Makefile it calls, ``make -C
    <folder>``); not an include flag (``-I<folder>``). A match on a line containing `ignore` (a
    string; None: none) does not count."""
    words = set()
    for f in files:
        words.add(f)
        d = os.path.dirname(f)
        while d.startswith(src + os.sep):
            words.add(d)
            d = os.path.dirname(d)
    if relative:
        words |= set(os.path.relpath(w, build) for w in list(words))
    if not words:
        return False
    pattern = re.compile(r"""(?:^|(?<=[\s"'=:;,(]))(?:%s)(?=$|[\s"';,:)])"""
                         % "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True)), re.M)
    left = BUILD_RULE_LIMIT
    for path in rule_files:
        if left <= 0:
            break
        try:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read(left)
        except (IOError, OSError):
            continue
        left -= len(text)
        for m in pattern.finditer(text):
            start = text.rfind("\n", 0, m.start()) + 1
            end = text.find("\n", m.end())
            if ignore is None or ignore not in text[start:end if end >= 0 else len(text)]:
                return True
    return False

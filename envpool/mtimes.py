"""A tree made ready for a snapshot before its build (issue 26, compile once): whole-second
modification times and a fresh git index.

``docker commit`` stores a container's changed files as a tar layer whose headers keep the
modification time in whole seconds (moby's archive package truncates it): a file written at
``12:00:07.817`` reads ``12:00:07.000`` in every container of the committed image. Build tools
that compare modification times (make, ninja, Maven's stale-source scan, cargo's dep-info) see
the same order after the truncation, but a tool that records a time and later compares it for
equality does not: cargo fingerprints a build script without ``rerun-if-changed`` lines by the
newest modification time of the package's files, written with nanoseconds
(``"1796462023.817046017s (src/lib.rs)"``); read back from the snapshot it is
``"1796462023.000000000s"``, the fingerprint differs, the build script reruns and the package
recompiles in every run started from the snapshot.

`snapshot_ready` is the bash command that first truncates, before the build, every modification
time under a folder that has a fractional second (in a container of a committed image only the
files written in that container have one: those from image layers are whole already, and are
not copied up), so the build records exactly the times the snapshot keeps. Files the build
writes itself are truncated by the commit; truncation never reverses two times' order, which is
all the comparing tools need.

A build that asks git (a version macro such as the git-version crate, vergen, ``git describe
--dirty`` in a build script or a CMake/autotools version step) makes git refresh its index, and
in a container of an image every index entry's stat data (ctime, inode) differ from those the
index recorded: the refresh rewrites ``.git/index`` in the middle of the build, later than the
start of the compile that depends on it (git-version's expansion includes the index), and every
run from the snapshot compiles that crate again. So the command then refreshes the index itself
(``git update-index -q --refresh``) before the build, in a later second than every truncated
time (an entry as new as its index is "racily clean": git would re-check and rewrite it again).
"""

from __future__ import annotations

from envpool.quoting import ansi_c_quote, shell_word

_SCRIPT = (
    "import os, sys\n"
    "root, n = sys.argv[1], 0\n"
    "for d, dirs, files in os.walk(root):\n"
    "    for name in [None] + dirs + files:\n"
    "        p = d if name is None else os.path.join(d, name)\n"
    "        try:\n"
    "            s = os.lstat(p)\n"
    "            frac = s.st_mtime_ns % 1000000000\n"
    "            if frac:\n"
    "                os.utime(p, ns=(s.st_atime_ns, s.st_mtime_ns - frac), follow_symlinks=False)\n"
    "                n += 1\n"
    "        except (OSError, NotImplementedError):\n"
    "            pass\n"
    "print('swemint: %d modification time(s) under %s truncated to whole seconds' % (n, root))\n"
    "if os.path.exists(os.path.join(root, '.git')):\n"
    "    import time\n"
    "    time.sleep(1.05 - time.time() % 1.0)  # the index is written in a later second\n"
)


def snapshot_ready(root: str = "/testbed") -> str:
    """Bash that truncates the modification time of every file, folder and symbolic link under
    `root` (itself included) to whole seconds when it has a fractional part, prints how many it
    changed, and when `root` is a git work tree waits for the next second and refreshes its
    index. Needs python3 (the grading tools' interpreter, in every environment image); without
    it, it prints a note and only refreshes the index. Never fails (exit 0)."""
    r = shell_word(root)
    return (f"if command -v python3 >/dev/null 2>&1; then python3 -I -S -c {ansi_c_quote(_SCRIPT)} {r}; "
            f"else echo 'swemint: no python3: modification times left as they are'; fi; "
            f"if git -C {r} rev-parse --is-inside-work-tree >/dev/null 2>&1; then "
            f"git -C {r} update-index -q --refresh >/dev/null 2>&1; echo 'swemint: git index refreshed'; fi; true")

"""A JavaScript/TypeScript project below the root of a repository that is not one (rule S18,
issue 25 "the wrong project", across ecosystems): a Go or Python repository whose web UI is a
Node project in ``web/`` or ``app/ui/app/`` with its own package.json, lockfile and runner,
and a test_patch touching only its tests. Before S18 the node ecosystem needed a root
package.json; the rows ended `tests_not_run` after the root's Go/CMake builds ran nothing.

- `nested_project(tree, touched)`: the folder of the nearest package.json of the touched JS/TS
  test files when the root has no package.json (the folder most of them share), else None.
- `SubTree(tree, folder)`: the tree seen from that folder (what `analyze` reads), so the
  project is analysed as the root it is.
- `in_folder(plan, folder)`: the plan with every setup command and the test command run in the
  folder (``cd <folder> && ...``), test files repository-relative again, ``state["folder"]``.
"""

from __future__ import annotations

import shlex
from collections import Counter

from agents.ecosystems.base import PolyPlan
from agents.ecosystems.node.runner import package_dir, select_test_files
from envpool.testrun.polyglot.node_tap import MARKER

__all__ = ["SubTree", "in_folder", "nested_project", "strip_folder"]


class SubTree:
    """The part of an `agents.gitrepo.GitTree` below `folder`, with paths relative to it (files,
    exists, read, read_bytes, commit_time, commit)."""

    def __init__(self, tree, folder: str):
        self._tree, self._prefix = tree, folder.rstrip("/") + "/"
        self.files = [f[len(self._prefix):] for f in tree.files if f.startswith(self._prefix)]
        self.file_set = frozenset(self.files)
        self.commit = getattr(tree, "commit", "")

    @property
    def commit_time(self):
        return self._tree.commit_time

    def exists(self, path: str) -> bool:
        return self._tree.exists(self._prefix + path)

    def read(self, path: str, limit: int = 2_000_000) -> str | None:
        return self._tree.read(self._prefix + path, limit=limit)

    def read_bytes(self, path: str, limit: int = 16_000_000) -> bytes | None:
        return self._tree.read_bytes(self._prefix + path, limit=limit)


def nested_project(tree, touched: list[str]) -> str | None:
    """The folder of the Node project that owns the touched JS/TS test files when the root is
    not one (module docstring), or None."""
    if tree.exists("package.json"):
        return None
    dirs = Counter(d for f in select_test_files(touched) if (d := package_dir(tree, f)))
    return dirs.most_common(1)[0][0] if dirs else None


def in_folder(plan: PolyPlan, folder: str) -> PolyPlan:
    """`plan` (made for `SubTree(tree, folder)`) run in `folder` of the checkout."""
    cd = f"cd {shlex.quote(folder)} && "
    test = plan.test_command
    for f in plan.test_files:  # node --test's markers name files from the root (`node_tap` ids)
        test = test.replace(f"echo {shlex.quote(MARKER + f)};", f"echo {shlex.quote(MARKER + folder + '/' + f)};")
    return plan.model_copy(update={
        "setup_commands": [cd + c for c in plan.setup_commands],
        "test_command": cd + test,
        "test_files": [f"{folder}/{f}" for f in plan.test_files],
        "state": {**plan.state, "folder": folder},
        "notes": [*plan.notes, f"the Node project in {folder} (its package.json; the root has none)"]})


def strip_folder(plan: PolyPlan, command: str) -> tuple[str, str]:
    """(the folder prefix of `plan`'s commands or "", `command` without it)."""
    folder = plan.state.get("folder") or ""
    cd = f"cd {shlex.quote(folder)} && " if folder else ""
    return cd, command[len(cd):] if cd and command.startswith(cd) else command

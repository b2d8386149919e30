"""The `test_command` a dataset row publishes, for grading a model's patch later.

A harness runs, in the row's image, `cd /testbed && git apply <model patch> && <test_command>`.
The command starts with `reset_and_apply(test_patch, keep)`:

1. every file the row's `test_patch` touches is put back as the image has it (`git checkout HEAD`;
   a file the base tree lacks is removed), so a patch cannot change the tests;
2. every test path of the one rule set (`envpool.testpaths`: test files, everything in test
   folders, test infrastructure by name, runner sections of shared configuration files) that the
   patch added, changed or removed is reset the same way (`envpool.evalscript.reset_test_paths`: the image's status tool;
   untracked ones that came after the image are deleted, not those in the folders of installed
   dependencies) -- except the files in `keep`: those the row's own fix touches;
3. the row's test_patch is applied (embedded in base64, so the command is one line that needs no
   other file).

So a model patch cannot win by editing a test helper, adding a `conftest.py` that rewrites
outcomes, a `sitecustomize.py`, a jest setup file or a changed `pytest.ini`; it can still change the code the
tests import (that is its job), and code that fights the runner from there is what
`envpool.testrun.trust` and the authenticated report channel are for.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Iterable

from envpool.patches import files_in_patch, normalise_patch
from envpool.evalscript import reset_test_paths
from envpool.testrun.statuslines import TOOL_PATH


def reset_and_apply(test_patch: str, keep: Iterable[str] = (), language: str | None = None,
                    tool: str = TOOL_PATH) -> str:
    """Bash (cwd /testbed, the row's image) that resets test files and test infrastructure to
    the base tree and applies `test_patch` (see the module docstring); `keep`: repository paths
    left as the model's patch made them; `language`: the row's (which groups of the rule set);
    `tool`: the status tool that resets (the image's).
    Fails (nonzero) when the reset or the test_patch does not apply."""
    steps = []
    for f in files_in_patch(test_patch):
        q = shlex.quote(f)
        steps.append(f"if git cat-file -e HEAD:{q} 2>/dev/null; then "  # no hook a patch put in .git runs
                     f"git -c core.hooksPath=/dev/null -c core.fsmonitor=false checkout -q HEAD -- {q}; else rm -rf -- {q}; fi")
    steps.append(reset_test_paths(language, keep, tool=tool, root="."))
    b64 = base64.b64encode(normalise_patch(test_patch).encode()).decode()
    steps.append(f"echo {b64} | base64 -d | git apply --recount --whitespace=nowarn -")
    return " && ".join(f"{{ {s}; }}" for s in steps)


def published_command(test_patch: str, patch: str, body: str, language: str | None = None) -> str:
    """A row's `test_command`: `cd /testbed`, `reset_and_apply(test_patch, keep=<files the
    row's patch touches>, language)`, then `body` (the runner's command)."""
    return f"cd /testbed && {reset_and_apply(test_patch, files_in_patch(patch), language)} && {body}"

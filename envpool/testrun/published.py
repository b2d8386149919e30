"""The `test_command` a dataset row publishes, for grading a model's patch later.

A harness runs, in the row's image, `cd /testbed && git apply <model patch> && <test_command>`.
The command starts with `reset_and_apply(test_patch, keep)`:

1. every file the row's `test_patch` touches is put back as the image has it (`git checkout HEAD`;
   a file the base tree lacks is removed), so a patch cannot change the tests;
2. test infrastructure anywhere in the tree (`trust.INFRA_NAMES` / `INFRA_PATHS` and the shared
   runner configuration files) that the patch added, changed or removed is reset the same way
   (untracked ones, ignored paths included, are deleted; not those in the folders of installed
   dependencies, `DEPENDENCY_DIRS`) -- except the files in `keep`: those the row's own fix
   touches, which are part of the fix;
3. the row's test_patch is applied (embedded in base64, so the command is one line that needs no
   other file).

So a model patch cannot win by adding a `conftest.py` that rewrites outcomes, a
`sitecustomize.py`, a jest setup file or a changed `pytest.ini`; it can still change the code the
tests import (that is its job), and code that fights the runner from there is what
`envpool.testrun.trust` and the authenticated report channel are for.
"""

from __future__ import annotations

import base64
import shlex
from collections.abc import Iterable

from envpool.patches import files_in_patch, normalise_patch
from envpool.testrun.trust import INFRA_CONFIG_FILES, INFRA_NAMES, INFRA_PATHS


DEPENDENCY_DIRS = ("node_modules", "vendor", "bower_components", ".bundle", "target", ".gradle", ".venv",
                   "venv", "__pycache__")
"""Folders of installed dependencies and build output: untracked files there came with the
environment image (a package's own `bootstrap.php` or `jest.config.js`), not from a patch, and
the runner does not load test infrastructure from them; they are left alone."""


def _case_patterns() -> str:
    names = "|".join(INFRA_NAMES + tuple(INFRA_CONFIG_FILES))
    return names


def reset_and_apply(test_patch: str, keep: Iterable[str] = ()) -> str:
    """Bash (cwd /testbed, the row's image) that resets test files and test infrastructure to
    the base tree and applies `test_patch` (see the module docstring); `keep`: repository paths
    left as the model's patch made them. Fails (nonzero) when the test_patch does not apply."""
    keep = sorted(set(keep))
    steps = []
    for f in files_in_patch(test_patch):
        q = shlex.quote(f)
        steps.append(f"if git cat-file -e HEAD:{q} 2>/dev/null; then git checkout -q HEAD -- {q}; "
                     f"else rm -rf -- {q}; fi")
    keep_case = "|".join(shlex.quote(k) for k in keep) or "''"
    paths = "|".join(INFRA_PATHS)
    deps = "|".join(f"{d}/*|*/{d}/*" for d in DEPENDENCY_DIRS)
    match = (f"case \"$f\" in {keep_case}) continue;; esac; "
             f"case \"${{f##*/}}\" in {_case_patterns()}) ;; *) case \"$f\" in {paths}) ;; *) continue;; esac;; esac; ")
    steps.append(  # tracked files the patch changed or removed
        "git ls-files -z -m -d | while IFS= read -r -d '' f; do " + match +
        "git checkout -q HEAD -- \"$f\"; done")
    steps.append(  # files the patch added (ignored paths too); not the installed dependencies
        "git ls-files -z -o | while IFS= read -r -d '' f; do " + match +
        f"case \"$f\" in {deps}) continue;; esac; rm -rf -- \"$f\"; done")
    b64 = base64.b64encode(normalise_patch(test_patch).encode()).decode()
    steps.append(f"echo {b64} | base64 -d | git apply --recount --whitespace=nowarn -")
    return " && ".join(f"{{ {s}; }}" for s in steps)


def published_command(test_patch: str, patch: str, body: str) -> str:
    """A row's `test_command`: `cd /testbed`, `reset_and_apply(test_patch, keep=<files the
    row's patch touches>)`, then `body` (the runner's command)."""
    return f"cd /testbed && {reset_and_apply(test_patch, files_in_patch(patch))} && {body}"

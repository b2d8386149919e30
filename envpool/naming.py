"""Names derived from instance ids: one folder per id, injectively.

`folder_name(instance_id)` is the folder under `WORKDIR/instances/` that holds an instance's
logs and state (written by the minter and the pipeline's store). The mapping is an escaping, so
two different ids never share a folder (the old rule turned `a/b` and `a_b` into one) and no id
escapes the instances folder (`..` used to write into the work directory's root):

- `[A-Za-z0-9_-]` and `.` are kept, every other character (by its UTF-8 bytes) and `%` itself
  become `%XX`, so the result is a single path component;
- `.` and `..` are escaped (`%2E`, `%2E%2E`);
- a name longer than `MAX_NAME_BYTES` keeps its first part and ends in `~` and 16 hex digits of
  the SHA-256 of the id (file systems allow 255 bytes; `~` never occurs in an escaped name, so a
  shortened name cannot equal an unshortened one). Shortened names are distinct unless two
  ids collide in 64 bits of SHA-256; `pipeline.instances` refuses such rows anyway.

SWE-bench ids (`owner__name-1234`) map to themselves.

Since issue 24 (instance fields are data) this module also holds what the fields that name
things may hold, checked when a row is made (`agents.models.Instance`): `check_instance_id`,
`check_repo`, `check_version`, `check_language`, `check_timestamp`, each raising ValueError with
a one-line reason that shows the value inert. `folder_name` stays injective for any string: it
is the second line of defence for ids that never passed the check (an older work directory).
"""

from __future__ import annotations

import hashlib
import re

MAX_NAME_BYTES = 200
_KEEP = re.compile(r"[A-Za-z0-9_.-]")


def folder_name(instance_id: str) -> str:
    """The folder name of `instance_id` (see module docstring); raises ValueError for an empty id."""
    if not instance_id:
        raise ValueError("an empty instance_id has no folder")
    if instance_id in (".", ".."):
        name = "%2E" * len(instance_id)
    else:
        name = "".join(c if _KEEP.fullmatch(c) else "".join(f"%{b:02X}" for b in c.encode("utf-8", "surrogatepass"))
                       for c in instance_id)
    if len(name) > MAX_NAME_BYTES:
        digest = hashlib.sha256(instance_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        name = name[:MAX_NAME_BYTES - 17] + "~" + digest
    return name


# -- what an instance's fields may hold (checked at load: agents.models.Instance) ---------------

MAX_ID_CHARS = 128
INSTANCE_ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")
"""An `instance_id`: SWE-bench's `owner__name-N` and SWE-smith's `owner__name.hash.kind__x` fit
(letters, digits, `_ . -`; first a letter or digit; no `..`; at most `MAX_ID_CHARS`)."""
REPO_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}/[A-Za-z0-9_.-]{1,100}")
"""A `repo`: `owner/name` as GitHub spells it (letters, digits, `_ . -`; no `..`; the name not `.`)."""
VERSION_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
"""A `version`: `3.0`, `0.12`, `1.2.3-rc1+b2`, or SWE-bench Multilingual's PR number."""
LANGUAGE_RE = re.compile(r"[a-z0-9](?:[a-z0-9_+#.-]| (?! )){0,31}")
"""A `language` once lower-cased and mapped to swemint's vocabulary (`python`, `cpp`, `c#`, or
GitHub's `jupyter notebook`: single spaces inside)."""
MAX_CREATED_AT_CHARS = 64


def _shown(value: object) -> str:
    """`value` for a one-line message: `repr` (newline, ESC, NUL, lone surrogates as escapes: every
    non-printable character), cut to 60 characters."""
    if not isinstance(value, str):
        return type(value).__name__
    r = repr(value)
    return r if len(r) <= 60 else f"{r[:60]}...({len(value)} chars)"


def check_instance_id(value: object) -> str:
    """`value` when it is a valid `instance_id` (`INSTANCE_ID_RE`, no `..`), else ValueError with
    a one-line reason showing the value inert (control characters escaped, cut to 60)."""
    if not isinstance(value, str) or not INSTANCE_ID_RE.fullmatch(value) or ".." in value:
        raise ValueError(f"instance_id {_shown(value)} is not an id like owner__name-N (letters, digits, '_', '.', "
                         f"'-', a letter or digit first, no '..', at most {MAX_ID_CHARS} characters)")
    return value


def check_repo(value: object) -> str:
    """`value` when it is a valid `repo` (`REPO_RE`, no `..`, the name not `.`), else ValueError."""
    if not isinstance(value, str) or not REPO_RE.fullmatch(value) or ".." in value or value.endswith("/."):
        raise ValueError(f"repo {_shown(value)} is not 'owner/name' (letters, digits, '_', '.', '-'; no '..')")
    return value


def check_version(value: object) -> str:
    """`value` when it is a valid `version` (`VERSION_RE`), else ValueError."""
    if not isinstance(value, str) or not VERSION_RE.fullmatch(value):
        raise ValueError(f"version {_shown(value)} is not a version (letters, digits, '_', '.', '+', '-'; "
                         "a letter or digit first; at most 64 characters)")
    return value


def check_language(value: object) -> str:
    """`value` when it is a valid `language` (`LANGUAGE_RE`, lower case), else ValueError."""
    if not isinstance(value, str) or not LANGUAGE_RE.fullmatch(value):
        raise ValueError(f"language {_shown(value)} is not a language name (lower-case letters, digits, "
                         "'_', '+', '#', '.', '-', single spaces; at most 32 characters)")
    return value


def check_timestamp(field: str, value: object) -> str:
    """`value` when it is an ISO 8601 time (`datetime.fromisoformat` after `Z` -> `+00:00`; a
    date alone or `YYYY-MM-DD HH:MM:SS` too) of at most 64 characters, else ValueError naming
    `field` (`created_at`, `crawled_at`)."""
    from datetime import datetime

    ok = isinstance(value, str) and len(value) <= MAX_CREATED_AT_CHARS and value.strip() == value
    if ok:
        try:
            datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            ok = False
    if not ok:
        raise ValueError(f"{field} {_shown(value)} is not an ISO 8601 time (e.g. 2024-03-01T12:00:00Z)")
    return value

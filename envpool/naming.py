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

"""Requirement files as pip reads them: the one parser of their lines and includes, shared by the
instance tier's reader (`agents.ecosystems.python.builder.requirement_file_lines`, lenient: what
it cannot install as written it skips) and the dependency tier's (`agents.ecosystems.python.pinned`,
strict: a file qualifies only when every line is a pin). Syntax: pip's requirements-file format
(https://pip.pypa.io/en/stable/reference/requirements-file-format/).
"""

from __future__ import annotations

import re

__all__ = ["include_of", "logical_lines"]

_INCLUDES = (("--requirement", "r"), ("--constraint", "c"), ("-r", "r"), ("-c", "c"))


def logical_lines(text: str) -> list[str]:
    """The lines pip reads: continuation lines (a trailing backslash) joined, comments (``#`` at the
    start or after whitespace) removed, blank lines dropped, whitespace collapsed."""
    out: list[str] = []
    buf = ""
    for raw in text.splitlines():
        if raw.endswith("\\") and not raw.lstrip().startswith("#"):
            buf += raw[:-1] + " "
            continue
        line = re.sub(r"(^|\s)#.*$", "", buf + raw)
        buf = ""
        line = " ".join(line.split())
        if line:
            out.append(line)
    if buf.strip():
        out.append(" ".join(re.sub(r"(^|\s)#.*$", "", buf).split()))
    return [line for line in out if line]


def include_of(line: str) -> tuple[str, str | None] | None:
    """(``r`` or ``c``, the path; None when malformed) for an include line, else None."""
    for flag, kind in _INCLUDES:
        if not line.startswith(flag):
            continue
        rest = line[len(flag):]
        if rest.startswith("="):
            rest = rest[1:]
        elif flag.startswith("--") and rest and not rest[0].isspace():
            return None  # another long option (--requirements-foo): not an include
        rest = rest.strip()
        return kind, rest if rest and " " not in rest else None
    return None

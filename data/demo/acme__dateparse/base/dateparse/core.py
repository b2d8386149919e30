"""Date parsing."""

import datetime
import re

_ISO = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$")
_SLASHED = re.compile(r"^(\d{1,2})/(\d{1,2})/(\d{4})$")
_DOTTED = re.compile(r"^(\d{1,2})\.(\d{1,2})\.(\d{4})$")
_COMPACT = re.compile(r"^(\d{4})(\d{2})(\d{2})$")


def parse_date(text, dayfirst=False):
    """Parse `text` into a datetime.date.

    Accepted: `YYYY-MM-DD`, `YYYYMMDD`, `DD.MM.YYYY` and `A/B/YYYY`, which is month first
    unless `dayfirst` is true. Raises ValueError for anything else or an impossible date.
    """
    text = text.strip()
    m = _ISO.match(text) or _COMPACT.match(text)
    if m:
        year, month, day = (int(g) for g in m.groups())
        return datetime.date(year, month, day)
    m = _DOTTED.match(text)
    if m:
        day, month, year = (int(g) for g in m.groups())
        return datetime.date(year, month, day)
    m = _SLASHED.match(text)
    if m:
        month, day, year = (int(g) for g in m.groups())
        return datetime.date(year, month, day)
    raise ValueError(f"unrecognised date: {text!r}")

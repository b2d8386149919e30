"""Reading a JUnit-style XML report larger than the report limit as a stream: every test's
status kept, captured output dropped past a bound.

A repository with thousands of tests writes Surefire reports whose captured output (each
class's `<system-out>`, `<system-err>`, `<properties>`, stack traces in `<failure>` / `<error>`)
can exceed `limits.report_bytes`; such a run used to count as "reported no test". `slim_xml`
reads the report in chunks (memory: about `body_bytes` plus one chunk) and copies it through,
except that the body of each element named in `BOUNDED` that is longer than `body_bytes` is
replaced by a short marker (``[swemint: N bytes dropped]``); the element itself, its
attributes (a failure's `message`, a test's `name`, `classname`, `time`) and every `<testcase>`
stay. CDATA sections are skipped whole, so a ``</system-out>`` inside one ends nothing. The
result is the same concatenation of documents the parsers read (`java_junit` and its kin); the
report limit then applies to what was kept. Formats whose statuses live in captured output
(CTest's JUnit holds TAP streams in `<system-out>`) are not slimmed (`SLIMMABLE` names the
parsers that are).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

SLIMMABLE = frozenset({"java_junit", "ant_junit", "phpunit_junit", "nextest_junit"})
"""Parsers whose XML reports keep statuses in elements and attributes only (never in the bodies
`slim_xml` drops)."""

BOUNDED = ("system-out", "system-err", "properties", "failure", "error", "skipped", "flakyFailure",
           "flakyError", "rerunFailure", "rerunError")
"""Elements whose bodies are bounded (each: captured output, a stack trace, system properties)."""

BODY_BYTES = 4096
"""Bytes of one bounded element's body kept as they are; a longer body is dropped whole."""

_OPEN = re.compile(rb"<(" + b"|".join(re.escape(n.encode()) for n in BOUNDED) + rb")(?=[\s/>])")
_CDATA_OPEN, _CDATA_CLOSE = b"<![CDATA[", b"]]>"
_TAIL = 64
"""Bytes held back at a chunk's end: a tag or marker may straddle two chunks."""


class SlimStats:
    """What `slim_xml` did: `read` bytes in, `kept` bytes out, `dropped` bodies replaced."""

    def __init__(self) -> None:
        self.read = self.kept = self.dropped = 0


class TooLarge(Exception):
    """More than `max_read` bytes came in."""


class _Reader:
    """A byte buffer refilled from an iterator of chunks (at most `max_read` bytes in all)."""

    def __init__(self, chunks: Iterable[bytes], stats: SlimStats, max_read: int | None):
        self.it: Iterator[bytes] = iter(chunks)
        self.buf = b""
        self.done = False
        self.stats = stats
        self.max_read = max_read

    def more(self) -> bool:
        """Append the next chunk; False at the end. Raises TooLarge past `max_read`."""
        if self.done:
            return False
        for c in self.it:
            if c:
                self.stats.read += len(c)
                if self.max_read is not None and self.stats.read > self.max_read:
                    raise TooLarge(self.stats.read)
                self.buf += c
                return True
        self.done = True
        return False


def slim_xml(chunks: Iterable[bytes], body_bytes: int = BODY_BYTES, limit: int | None = None,
             stats: SlimStats | None = None, max_read: int | None = None) -> bytes | None:
    """The report of `chunks` with every `BOUNDED` element's body longer than `body_bytes`
    replaced by a marker (module docstring); None when what is kept exceeds `limit` bytes or
    more than `max_read` bytes come in. Never raises on malformed input: what it cannot match
    is copied as it is."""
    st = stats or SlimStats()
    try:
        return _slim(_Reader(chunks, st, max_read), st, body_bytes, limit)
    except TooLarge:
        return None


def _slim(r: _Reader, st: SlimStats, body_bytes: int, limit: int | None) -> bytes | None:
    out = bytearray()

    def emit(b: bytes) -> bool:
        out.extend(b)
        return limit is None or len(out) <= limit

    while True:
        m = _OPEN.search(r.buf)
        if m is None:
            keep = max(0, len(r.buf) - _TAIL)
            if not emit(r.buf[:keep]):
                return None
            r.buf = r.buf[keep:]
            if not r.more():
                break
            continue
        if not emit(r.buf[:m.start()]):
            return None
        r.buf = r.buf[m.start():]
        while b">" not in r.buf and r.more():
            pass
        end = r.buf.find(b">")
        if end < 0:  # a tag never closed: the rest as it is
            break
        tag, r.buf = r.buf[:end + 1], r.buf[end + 1:]
        if not emit(tag):
            return None
        if tag.endswith(b"/>"):
            continue
        body, n, closed = _body(r, b"</" + m.group(1) + b">", body_bytes)
        if n > body_bytes:
            st.dropped += 1
            body = f"[swemint: {n} bytes dropped]".encode() + (b"</" + m.group(1) + b">" if closed else b"")
        if not emit(body):
            return None
    if not emit(r.buf):
        return None
    st.kept = len(out)
    return bytes(out)


def _body(r: _Reader, close: bytes, body_bytes: int) -> tuple[bytes, int, bool]:
    """(the body and its closing tag while it is at most `body_bytes` long, else what was kept
    so far; the body's length; whether the closing tag was found) of the element whose opening
    tag was just read from `r`, which is left after the closing tag."""
    kept = bytearray()
    n = 0
    in_cdata = False

    def take(k: int) -> None:
        nonlocal n
        n += k
        if n <= body_bytes:
            kept.extend(r.buf[:k])
        r.buf = r.buf[k:]

    while True:
        if in_cdata:
            i = r.buf.find(_CDATA_CLOSE)
            if i >= 0:
                take(i + len(_CDATA_CLOSE))
                in_cdata = False
                continue
        else:
            i, j = r.buf.find(close), r.buf.find(_CDATA_OPEN)
            if j >= 0 and (i < 0 or j < i):
                take(j + len(_CDATA_OPEN))
                in_cdata = True
                continue
            if i >= 0:
                take(i)
                r.buf = r.buf[len(close):]
                if n <= body_bytes:
                    kept.extend(close)
                return bytes(kept), n, True
        take(max(0, len(r.buf) - _TAIL))
        if not r.more():
            take(len(r.buf))
            return bytes(kept), n, False

"""The report channel: how the pytest plugin's records reach the host, authenticated.

Why: the plugin used to append its records to a file inside the container, at a path the code
under test could read from `/proc/self/environ`, the plugin module or a glob of `/tmp/swemint`,
and rewrite (e.g. from an `atexit` handler) after pytest finished; a patch doing so ended
`verified`. Now:

- **Transport.** The plugin writes to an inherited file descriptor (the exec's stderr, kept apart
  from the console by `DockerSandbox.exec(channel=True)`; `pytest_runner.pytest_script` points
  fd 3 at it and the console at stdout). The host reads it as the run happens; nothing is read
  from a file afterwards, so there is nothing to rewrite at exit.
- **Authentication.** The host draws a fresh 256-bit key per run (`new_key`) and hands it to the
  plugin on stdin; it is never in the container's environment, command line or file system. The
  plugin reads it when pytest imports it (before conftest files, the test modules and the code
  under test are imported), then points stdin at /dev/null. Each record is one frame
  `PREFIX <seq> <mac> <base64 JSON>\\n`, `mac = HMAC-SHA256(key, seq || previous mac || JSON)`:
  a chain, so a record cannot be dropped, reordered, replayed or altered without `read_channel`
  seeing it. The last record (`session_finish` with `"seal": true`) seals the chain and the
  plugin then forgets the key: whatever arrives later (an `atexit` handler, a daemon) is forged.
- **Detection, not only refusal.** Every frame that does not verify, any other byte on a
  dedicated channel, a gap, a record after the seal or from another process is a *tamper*
  finding (`ChannelReport.tampered`): the run is not graded and the finding goes into the row.
- **The plugin's own findings.** A `tamper` record (the plugin's tripwire saw pytest's or
  pluggy's report path, or the plugin itself, replaced in-process: `what` names them as
  module.qualname) is a tamper finding too.

What it cannot do (and why it is not the only check): the plugin runs inside the pytest process,
in the same interpreter as the tests and the code under test, as the same user. Code there can
read the key from the plugin's memory, or change what pytest reports before the plugin sees it
(a `conftest.py` hook rewriting outcomes, a `sitecustomize`/`*.pth` loaded at start-up, a patch
monkeypatching pytest). No channel from inside that process can be unforgeable against such
code; see `envpool.testrun.trust` for the cross-checks that a forger must also satisfy and the
flag on patches that touch test infrastructure.

With `key=None` (a published `test_command` run without a key on stdin) frames carry `-` for
the MAC and are read as unauthenticated (`ChannelReport.authenticated` False).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass, field

PREFIX = b"\x1eSWR1 "
"""Start of every frame (ASCII record separator, then the protocol name and version)."""
KEY_BYTES = 32
UNSIGNED = b"-"


def new_key() -> bytes:
    """A fresh random key for one run (`KEY_BYTES` bytes)."""
    return secrets.token_bytes(KEY_BYTES)


def key_line(key: bytes) -> bytes:
    """What the host writes on the command's stdin: the key in hex and a newline."""
    return key.hex().encode() + b"\n"


def record_mac(key: bytes, seq: int, previous: bytes, payload: bytes) -> bytes:
    """HMAC-SHA256 (hex, as bytes) of frame `seq` chained to the `previous` frame's MAC."""
    return hmac.new(key, b"%d\x00" % seq + previous + b"\x00" + payload, hashlib.sha256).hexdigest().encode()


def encode_frames(records: list[dict], key: bytes | None) -> bytes:
    """Frames for `records`, as the plugin writes them (tests and fakes use this to play the
    plugin's part)."""
    out, prev = [], b""
    for seq, rec in enumerate(records):
        payload = json.dumps(rec, ensure_ascii=True, sort_keys=True).encode()
        mac = record_mac(key, seq, prev, payload) if key else UNSIGNED
        out.append(PREFIX + b"%d %s %s\n" % (seq, mac, base64.b64encode(payload)))
        prev = mac
    return b"".join(out)


@dataclass
class ChannelReport:
    """What `read_channel` found.

    `records`: the verified records, in order. `sealed`: the chain ended with the sealing
    `session_finish`. `authenticated`: frames carried MACs checked with the key. `tampered`:
    findings that only tampering explains (each in words). `truncated`: the stream was cut at the
    host's report cap. `frames`: frames seen, verified or not. A dataclass: this module is stdlib
    only, so the in-image status tool (`envpool.testrun.statuslines`) reads frames with it.
    """

    records: list[dict] = field(default_factory=list)
    sealed: bool = False
    authenticated: bool = False
    tampered: list[str] = field(default_factory=list)
    truncated: bool = False
    frames: int = 0


def _frames(raw: bytes) -> tuple[list[bytes], int]:
    """(frame bodies after PREFIX, count of non-blank bytes outside frames)."""
    bodies, junk, pos = [], 0, 0
    while True:
        i = raw.find(PREFIX, pos)
        junk += len(raw[pos:len(raw) if i < 0 else i].strip())
        if i < 0:
            return bodies, junk
        end = raw.find(b"\n", i)
        if end < 0:
            bodies.append(raw[i + len(PREFIX):])  # the last frame, cut (a kill, or the cap)
            return bodies, junk
        bodies.append(raw[i + len(PREFIX):end])
        pos = end + 1


def read_channel(raw: bytes, key: bytes | None, *, exclusive: bool = True, truncated: bool = False) -> ChannelReport:
    """Verify the frames in `raw` (see the module docstring); never raises.

    `key`: the run's key, None for unauthenticated frames. `exclusive`: `raw` is a dedicated
    channel, so any other byte on it is tampering (False for a console stream the frames are
    mixed into). `truncated`: the host cut the stream at its cap (the cut frame is not a finding).
    """
    rep = ChannelReport(truncated=truncated, authenticated=key is not None)
    bodies, junk = _frames(raw)
    if junk and exclusive:
        rep.tampered.append(f"{junk} byte(s) on the report channel that are not records")
    prev, expect, pid = b"", 0, None
    for n, body in enumerate(bodies):
        rep.frames += 1
        last = n == len(bodies) - 1
        parts = body.split(b" ")
        try:
            seq, mac, payload = int(parts[0]), parts[1], base64.b64decode(parts[2], validate=True)
            if len(parts) != 3:
                raise ValueError("extra fields")
        except (ValueError, IndexError, binascii.Error):
            if not (last and truncated):
                rep.tampered.append(f"frame {n}: malformed")
            continue
        if key is not None:
            if not hmac.compare_digest(mac, record_mac(key, seq, prev, payload)):
                rep.tampered.append(f"frame {n} (seq {seq}): forged (its MAC does not verify)")
                continue
        elif mac != UNSIGNED:
            rep.tampered.append(f"frame {n}: signed, but no key was given to check it")
            continue
        if rep.sealed:
            rep.tampered.append(f"frame {n} (seq {seq}): a record after the session was sealed")
            continue
        if seq != expect:
            rep.tampered.append(f"frame {n}: sequence {seq} where {expect} was due (records missing or replayed)")
            continue
        try:
            rec = json.loads(payload)
        except ValueError:
            rec = None
        if not isinstance(rec, dict):
            rep.tampered.append(f"frame {n}: not a JSON object")
            continue
        if pid is None:
            pid = rec.get("pid")
            if rec.get("kind") != "session_start":
                rep.tampered.append("the first record is not the session's start")
        elif rec.get("pid") != pid:
            rep.tampered.append(f"frame {n}: a record from another process (pid {rec.get('pid')}, session {pid})")
            continue
        rep.records.append(rec)
        prev, expect = mac, expect + 1
        if rec.get("kind") == "tamper":
            what = rec.get("what")
            names = ", ".join(str(w) for w in what[:8]) if isinstance(what, list) else str(what)
            rep.tampered.append(f"the code under test rewired pytest in-process (seen at {rec.get('at')}): "
                                f"{names} replaced")
        if rec.get("kind") == "session_finish" and rec.get("seal") is True:
            rep.sealed = True
    return rep

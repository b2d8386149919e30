"""One encoder per output format for text swemint does not choose (issue 24, item 1).

Instance fields (`instance_id`, `repo`, `version`, `base_commit`, `patch`, ...), test ids and
paths that come from a repository or its output are data. Wherever one reaches a format with a
syntax of its own, it goes through that format's helper here (never through an f-string alone),
so it stays data whatever it holds (newlines, NUL, `..`, `/`, shell metacharacters, ANSI escapes,
10 kB):

=====================================  =====================  ==========================================
format                                 helper                 guarantee
=====================================  =====================  ==========================================
bash word                              `shell_word`           one word, literal (`shlex.quote`); NUL refused
bash word holding a multi-line script  `ansi_c_quote`         one `$'...'` word on one line, literal
bash heredoc body                      `heredoc`              quoted delimiter no line of the body equals
shell or Dockerfile `#` comment        `comment`              one line, control characters escaped
environment variable name              `env_name`             a POSIX name, else ValueError
Dockerfile `ENV` value                 `docker_env_value`     JSON-quoted, `$` escaped (ENV expands it)
Docker image tag                       `image_tag`            valid tag, injective (hash when altered)
Docker label value                     `label_value`          printable one line, else ValueError
YAML document                          `yaml_text`            `yaml.safe_dump`: every scalar quoted as needed
HTML text / attribute                  `html_text`            `html.escape`, control characters escaped
Markdown table cell                    `markdown_cell`        one line, `|` ` < > escaped
matplotlib label (report figures)      `plot_label`           one line, `$` escaped (no mathtext)
terminal / log / error line            `one_line`             control characters escaped, bounded length
terminal text (several lines)          `terminal_text`        control characters but newline and tab escaped
log line (stdout, driver.log)          `LogFormatter`         `terminal_text` of the formatted record
path component                         `path_component`       `envpool.naming.folder_name` (injective)
path below a root                      `path_under`           resolved, refused outside the root
=====================================  =====================  ==========================================

`path_under` resolves symbolic links, so a folder that an earlier export or another user left as
a link out of the destination is refused too. JSON goes through `json.dumps` and Parquet through
Arrow (both encode any string). Load-time validation of the instance fields themselves is
`agents.models.Instance` (a conservative pattern per field); these helpers do not rely on it.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
import re
import shlex
from pathlib import Path

from envpool.naming import folder_name

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


class UnsafePath(ValueError):
    """A path to write that resolves outside the folder it must stay in (or cannot be resolved)."""


def _escape_control(text: str) -> str:
    def one(m: re.Match) -> str:
        c = m.group()
        return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100
                                                                   else f"\\u{ord(c):04x}")
    return _CONTROL.sub(one, text)


def one_line(text: object, limit: int = 200) -> str:
    """`text` for a terminal, a log line or a one-line error: control characters (newline, CR,
    ESC of an ANSI sequence, NUL, C1, line separators) as `\\n`, `\\x1b`, ...; lone surrogates as
    `\\udXXX`; cut to `limit` characters with `...(N chars)` after the cut."""
    s = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    s = _escape_control(s)
    if len(s) > limit:
        s = f"{s[:limit]}...({len(str(text))} chars)"
    return s


def terminal_text(text: object) -> str:
    """`text` for a terminal, whole: newlines and tabs kept, every other control character
    (ESC of an ANSI/OSC sequence, CR, BEL, NUL, C1, line separators) escaped as `\\x1b`, ...,
    lone surrogates as `\\udXXX`; so output of a repository (a build error in a row's `reason`)
    or a field cannot drive the terminal. Rich's markup escape is separate (`pipeline.cli`)."""
    s = str(text).encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub(lambda m: m.group() if m.group() in "\n\t" else _escape_control(m.group()), s)


class LogFormatter(logging.Formatter):
    """A `logging.Formatter` whose lines are `terminal_text`: a log line that quotes a field or a
    repository's output (a build error, a quarantined file's parse error) cannot carry an ANSI
    or OSC sequence to whoever reads the log on a terminal."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as `logging.Formatter` formats it, control characters escaped."""
        return terminal_text(super().format(record))


def shown(value: object, limit: int = 60) -> str:
    """`value` quoted for a message (`repr`: newline, ESC, NUL as escapes) on one line, cut to
    `limit` characters: e.g. `'a\\nb'`."""
    return one_line(repr(value), limit)


def shell_word(value: str) -> str:
    """`value` as one bash word taken literally (`shlex.quote`). Raises ValueError for a NUL
    (bash cannot hold one in a word; it would cut the value silently)."""
    if "\0" in value:
        raise ValueError(f"a NUL cannot be passed to the shell: {one_line(value, 80)}")
    return shlex.quote(value)


def shell_words(values) -> str:
    """Each of `values` as a `shell_word`, joined by spaces."""
    return " ".join(shell_word(v) for v in values)


def ansi_c_quote(text: str) -> str:
    """`text` as one bash word `$'...'` on one line: backslash, quote and every control character
    escaped (newline as `\\n`), so a multi-line script fits on one Dockerfile line and runs
    exactly as written. Raises ValueError for a NUL (bash ends a `$'...'` string there)."""
    if "\0" in text:
        raise ValueError("a NUL cannot be passed to the shell")
    body = text.replace("\\", "\\\\").replace("'", "\\'")
    body = re.sub(r"[\x00-\x1f\x7f]", lambda m: _C_ESCAPES.get(m.group()) or f"\\x{ord(m.group()):02x}", body)
    return f"$'{body}'"


def heredoc(path: str, text: str, tag: str) -> str:
    """Bash writing `text` to `path`: `cat > path <<'DELIM'` ... `DELIM`, the delimiter quoted
    (no expansion in the body) and proven absent from the body's lines (a line equal to it
    would end the heredoc and run what follows). Raises ValueError for a NUL (bash drops it)."""
    if "\0" in text:
        raise ValueError("a NUL cannot be written by a heredoc")
    digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:12]
    delim = f"EOF_SWEMINT_{re.sub(r'[^A-Z0-9_]', '_', tag.upper())}_{digest}"
    lines = set(text.split("\n")) | set(text.splitlines())
    while delim in lines:
        delim += "_"
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"cat > {shell_word(path)} <<'{delim}'\n{body}{delim}"


def comment(text: str) -> str:
    """`text` on one line, safe after `# ` in a shell script or a Dockerfile: a newline (which
    would end the comment and start a command or an instruction) and every other control
    character escaped."""
    return _escape_control(str(text))


def env_name(name: str) -> str:
    """`name` when it is a POSIX environment variable name (`[A-Za-z_][A-Za-z0-9_]*`), for
    `export NAME=...` and `ENV NAME=...`; raises ValueError otherwise (it would be shell or
    Dockerfile syntax)."""
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        raise ValueError(f"not an environment variable name: {one_line(name, 80)!s}")
    return name


def env_assignment(name: str, value: str) -> str:
    """`NAME=value` for `export` in bash: the name checked (`env_name`), the value a `shell_word`."""
    return f"{env_name(name)}={shell_word(value)}"


def docker_env_value(value: str) -> str:
    """`value` as a Dockerfile ENV value that Docker takes literally (JSON-quoted: newlines and
    control characters escaped; `$` escaped, since ENV substitutes variables), as the sandbox's
    exec API passes it."""
    return json.dumps(value).replace("$", "\\$")


def image_tag(name: str, limit: int = 128) -> str:
    """A Docker tag for `name` (a tag is `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`): lower-cased, every
    other character `_`; when that changed anything but the case of a lower-case name, or the
    name is too long, it ends in `-` and 12 hex digits of the SHA-256 of `name`, so two names
    never share a tag. Raises ValueError for an empty name."""
    if not name:
        raise ValueError("an empty name has no image tag")
    base = re.sub(r"[^a-z0-9_.-]", "_", name.lower())
    if base[0] in ".-":
        base = "_" + base[1:]
    if base == name and len(base) <= limit:
        return base
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{base[:limit - 13]}-{digest}"


def label_value(value: str, limit: int = 1024) -> str:
    """`value` for a Docker label: returned unchanged when it is one printable line of at most
    `limit` characters (labels are matched exactly, e.g. `swemint.instance`); ValueError otherwise."""
    if _CONTROL.search(value) or len(value) > limit:
        raise ValueError(f"not a label value: {one_line(value, 80)}")
    return value


def yaml_text(data, **kw) -> str:
    """`data` as a YAML document (`yaml.safe_dump`, keys sorted, unicode kept): any string is a
    quoted scalar when it needs one (newlines, `: `, `#`, a leading `-` or `!`), control
    characters escaped, so no field becomes a key, a tag or a document of its own."""
    import yaml

    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True, **kw)


def html_text(value: object) -> str:
    """`value` as HTML text or a quoted attribute value: `& < > " '` as entities and control
    characters escaped (`one_line` without the cut)."""
    return html.escape(_escape_control(str(value)), quote=True)


def markdown_cell(value: object) -> str:
    """`value` as one Markdown table cell: one line (control characters escaped), `|` and
    backticks escaped, `<` `>` as entities (no raw HTML)."""
    s = _escape_control(str(value))
    return s.replace("\\|", "|").replace("|", "\\|").replace("`", "\\`").replace("<", "&lt;").replace(">", "&gt;")


def plot_label(value: object, limit: int = 120) -> str:
    """`value` as a matplotlib text (a tick label of the report's figures): one line, cut to
    `limit`, every `$` escaped, so text from a reason (a build's output) is never parsed as
    mathtext (an unbalanced `$\\frac{$` would stop the whole report)."""
    return one_line(value, limit).replace("$", "\\$")


def path_component(name: str) -> str:
    """`name` as one file or folder name: `envpool.naming.folder_name` (injective; never `.`,
    `..`, a `/` or a NUL; at most 200 bytes). SWE-bench ids map to themselves."""
    return folder_name(name)


def path_under(root: Path | str, *parts: str) -> Path:
    """`root / parts...` resolved (symbolic links followed), refused with UnsafePath unless it is
    `root` itself or below it. Each part may hold `/` (a relative path inside the root); an
    absolute part, a `..` that leaves the root, or a link out of it is refused."""
    base = Path(root).resolve()
    target = base
    for part in parts:
        if "\0" in str(part):
            raise UnsafePath(f"a NUL in a path below {base}: {one_line(part, 80)}")
        target = target / part
    try:
        resolved = target.resolve()
    except (OSError, RuntimeError) as e:  # a link loop
        raise UnsafePath(f"{one_line(target, 300)} cannot be resolved: {e}") from None
    if resolved != base and not resolved.is_relative_to(base):
        raise UnsafePath(f"{one_line(target, 300)} resolves to {one_line(resolved, 300)}, outside {base}")
    return resolved

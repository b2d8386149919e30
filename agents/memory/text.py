"""Error text handling shared by retrieval and learning: cleaning, tokens, key lines, signatures.

Pure functions, no state. A *signature* is a regex derived from the most informative line of an
error (the same idea as log-template mining, e.g. Drain, He et al. ICWS 2017): literal words are
kept, variable parts (paths, versions, numbers, long hex ids, quote styles, whitespace) become
wildcards, so the same failure in another repository or release still matches.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_WORD = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")
_STOP = frozenset("""a an and are as at be been but by can did do does for from had has have if in into is it
its of on or so than that the then there these this to was we were when which while will with you your
not no use used using please try see""".split())
_KEY = re.compile(r"error|exception|failed|failure|fatal|cannot|can't|could not|couldn't|unable|not found|"
                  r"no such|missing|denied|unsupported|not supported|invalid|requires?|incompatible|undefined|"
                  r"no matching|no wheels|no usable|not satisfy|unsatisfiable|is required|removed|ERR!|panic|"
                  r"refused|timed out|no attribute|no module|not declared|does not name|unknown|out of sync|"
                  r"can only", re.I)
_CODE = re.compile(r"\bE[A-Z]{4,}\b|\bERR_[A-Z_]+\b|\berror\[E\d{4}\]")
_EXC = re.compile(r"^\s*(?:E\s+)?(?:[A-Za-z_][\w.]*)?(?:Error|Exception)\b|error(?:\[E\d+\])?:|\bTS\d{4}:")
_WARN = re.compile(r"^\s*(?:[A-Za-z_][\w.]*)?Warning\b")
_GENERIC = re.compile(
    r"Traceback \(most recent call last\)|No solution found when resolving|A complete log of this run|"
    r"For a full report see|subprocess-exited-with-error|Command errored out|exit(?:ed)? (?:with )?(?:code|status)|"
    r"^\s*npm (?:ERR!|error)\s*(?:code \w+)?\s*$|compilation terminated|errors? occurred|Build failed|"
    r"BUILD FAILED|CMake (?:Error|Warning) at|Build failures usually indicate|make(?:\[\d+\])?: \*\*\*|"
    r"Configuring incomplete|"
    r"This error originates from a subprocess|Failed building wheel|Failed to build installable wheels|"
    r"did not run successfully|metadata-generation-failed|build backend returned an error|"
    r"^\s*[\^~|+]+\s*$|^\s*\d+ \|", re.I)
_DECOR = re.compile(r"^(?:\s|[│╰─▶×┃•]|npm (?:ERR!|error|WARN)|gyp ERR! (?:stack)?|cause:|hint:|E\s{2,}|"
                    r"\[(?:stderr|stdout)\])+", re.I)
_CUT = re.compile(r",\s|\s\(|;\s|\s-\s")
_VAR = re.compile(
    r"(?P<loc>(?<![\w/.-])[\w./-]+\.\w+:\d+(?::\d+)?(?=:|\s|$))|"
    r"(?P<path>(?:[A-Za-z]:)?(?:\.{0,2}/[^\s'\"`‘’:()]+){2,}/?)|"
    r"(?P<hexid>\b(?=[0-9a-f]*\d)[0-9a-f]{10,}\b)|"
    r"(?P<ver>\bv?\d+(?:\.\d+)+(?:[-+.]?[A-Za-z0-9]+)*)|"
    r"(?P<num>\b\d+\b)|(?P<ws>\s+)|(?P<quote>['\"`‘’“”])")
_REPL = {"loc": r"\S+?:\d+(?::\d+)?", "path": r"\S+", "hexid": r"[0-9a-f]+", "ver": r"v?\d[\w.+-]*",
         "num": r"\d+", "ws": r"\s+", "quote": "['\"`‘’“”]"}


def clean(text: str) -> str:
    """`text` without ANSI colour codes and carriage-return progress redraws (keeps the last one)."""
    text = _ANSI.sub("", text or "")
    return "\n".join(line.rsplit("\r", 1)[-1].rstrip() for line in text.split("\n"))


def _stem(word: str) -> str:
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _keep(word: str) -> bool:
    return len(word) >= 2 and not word.isdigit() and word not in _STOP


def tokenize(text: str) -> list[str]:
    """BM25 tokens of `text`: lowercased words; a compound (`ERR_OSSL_EVP_UNSUPPORTED`,
    `site-packages`, `3.10`) yields itself and its parts; stopwords, bare numbers, versions with
    more than two components and long hex ids are dropped; a crude plural stemmer."""
    out: list[str] = []
    for w in _WORD.findall((text or "").lower()):
        parts = re.split(r"[._-]", w)
        if len(parts) == 1:
            if _keep(w) and not re.fullmatch(r"(?=[0-9a-f]*\d)[0-9a-f]{10,}", w):
                out.append(_stem(w))
            continue
        numeric = all(p.isdigit() for p in parts)
        if not numeric or len(parts) == 2:
            out.append(w)
        out += [_stem(p) for p in parts if _keep(p)]
    return out


def line_score(line: str) -> int:
    """How much a line looks like the statement of an error (higher is better; < 1: not one)."""
    if len(line.strip()) < 8:
        return -9
    score = min(len(_KEY.findall(line)), 3)
    if _EXC.search(line):
        score += 2
    elif _WARN.search(line):
        score += 1
    if _CODE.search(line):
        score += 1
    if _GENERIC.search(line):
        score -= 4
    return score


def key_lines(text: str, n: int = 4) -> list[str]:
    """The `n` most error-like lines of `text` (later lines win ties), in their original order."""
    lines = [ln for ln in clean(text).split("\n") if ln.strip()]
    ranked = sorted(range(len(lines)), key=lambda i: (line_score(lines[i]), i), reverse=True)
    chosen = sorted(i for i in ranked[:n] if line_score(lines[i]) > 0)
    if not chosen:
        chosen = list(range(max(0, len(lines) - min(n, 3)), len(lines)))
    seen: set[str] = set()
    out = []
    for i in chosen:
        s = lines[i].strip()
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


def error_excerpt(text: str, max_chars: int = 600) -> str:
    """A short, normalised excerpt of an error output: its key lines, each at most 240 chars."""
    lines = [ln[:240] for ln in key_lines(text)]
    out = "\n".join(lines)
    return out[:max_chars]


def _statement(line: str) -> str:
    """The core of an error line: decorations stripped, cut after the first clause, <= 150 chars."""
    s = _DECOR.sub("", line).strip()
    m = _KEY.search(s)
    start = m.end() if m else 0
    for cut in _CUT.finditer(s):
        if cut.start() >= max(start, 25):
            s = s[:cut.start()]
            break
    if len(s) > 150:
        s = s[:150].rsplit(" ", 1)[0]
    return s.strip()


ARG_CHARS = r"[A-Za-z0-9_.+/-]"
"""Characters a value captured from an error may have to be bound into a shell command (no space,
quote or shell syntax); see `signature_with_captures` and `agents.memory.actions.bind_actions`."""
ARG_RE = re.compile(ARG_CHARS + "{1,200}")


def _statement_of(text: str) -> tuple[str, str] | None:
    """(best line, its statement) of `text`, None when it has no line."""
    lines = [ln for ln in clean(text).split("\n") if ln.strip()]
    if not lines:
        return None
    best = max(range(len(lines)), key=lambda i: (line_score(lines[i]), i))
    return lines[best], _statement(lines[best]) or lines[best].strip()


def error_line(text: str) -> str:
    """The most error-like line of `text` (the one `signature_for` is built from), "" for none."""
    found = _statement_of(text)
    return found[0].strip() if found else ""


def _generalise(stmt: str) -> str:
    parts: list[str] = []
    pos = 0
    for m in _VAR.finditer(stmt):
        parts.append(re.escape(stmt[pos:m.start()]))
        parts.append(_REPL[m.lastgroup or "ws"])
        pos = m.end()
    parts.append(re.escape(stmt[pos:]))
    return "".join(parts)


def signature_for(text: str) -> str:
    """A regex that recognises this error: built from the most error-like line of `text`.

    Guaranteed to compile and to match `clean(text)` case-insensitively (falls back to the
    escaped first 80 characters of that line). Empty text gives `\\S` (matches anything).
    """
    found = _statement_of(text)
    if found is None:
        return r"\S"
    line, stmt = found
    sig = _generalise(stmt)
    try:
        if re.search(sig, clean(text), re.IGNORECASE):
            return sig
    except re.error:
        pass
    return re.escape(line.strip()[:80])


def same_error(before: str, after: str) -> bool:
    """True when output `after` still shows the error of output `before`: their signatures
    (`signature_for`) are equal. A repair's retry that shows another error (or none) got past the
    error the repair was for: learning's attempt chains (`agents.memory.learn.candidates`) and
    Execution's score of a rule's repair (`agents.execution.run_setup`) both judge a repair so."""
    return signature_for(before) == signature_for(after)


def signature_with_captures(text: str, captures: dict[str, str]) -> str | None:
    """`signature_for(text)` with each value of `captures` (name -> a token of the error's key
    statement) replaced by a named group `(?P<name>ARG_CHARS+)`, so that the same error in another
    repository binds `${name}` to its own value. None when a value is not a whole token of the
    statement, has characters outside `ARG_CHARS`, or the groups would not capture it back."""
    found = _statement_of(text)
    if found is None or not captures:
        return None
    _, stmt = found
    spans: list[tuple[int, int, str]] = []
    for name, value in captures.items():
        if not ARG_RE.fullmatch(value):
            return None
        m = re.search(rf"(?<!{ARG_CHARS}){re.escape(value)}(?!{ARG_CHARS})", stmt)
        if not m or any(a < m.end() and m.start() < b for a, b, _ in spans):
            return None
        spans.append((m.start(), m.end(), name))
    parts, pos = [], 0
    for start, end, name in sorted(spans):
        parts += [_generalise(stmt[pos:start]), f"(?P<{name}>{ARG_CHARS}+)"]
        pos = end
    parts.append(_generalise(stmt[pos:]))
    sig = "".join(parts)
    try:
        m = re.search(sig, clean(text), re.IGNORECASE)
    except re.error:
        return None
    if not m or any(m.group(name) != value for name, value in captures.items()):
        return None
    return sig

"""Write the generated parts of docs/: the configuration reference from configs/default.yaml, and
the dataset's column table from `pipeline.export.COLUMNS`.

    python scripts/gen_docs.py            # write docs/configuration.md and the table in docs/dataset.md
    python scripts/gen_docs.py --check    # exit 1 when either is out of date (tests/test_docs.py)

configs/default.yaml documents every key with a comment on its line (or on the comment lines
above it, or indented below it); this script keeps those words and the defaults, one table per
top-level section, so the reference cannot drift from the file the code reads. The column
table sits between `<!-- columns:begin -->` and `<!-- columns:end -->` in docs/dataset.md.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CONFIG = ROOT / "configs" / "default.yaml"
CONFIG_DOC = ROOT / "docs" / "configuration.md"
DATASET_DOC = ROOT / "docs" / "dataset.md"
BEGIN, END = "<!-- columns:begin -->", "<!-- columns:end -->"
NAV = ("[README](../README.md) · [concepts](concepts.md) · [dataset](dataset.md) · [evaluation](evaluation.md) · "
       "[languages](languages.md) · [cluster](cluster.md) · [security](security.md) · [operations](operations.md) · "
       "[configuration](configuration.md) · [results](results.md)")
LAYERING = """\
Every command reads `configs/default.yaml` (shown below, key by key), then layers on top of it:
`-c FILE` (a YAML file with any subset of the keys) < the environment variable `SWEMINT_SET` <
`--set key.sub=value` < explicit flags (`--workers 2`, `-w DIR`, ...), e.g. `--set
mint.verify.after_runs=5`. Every model forbids unknown keys: a typo is an error naming the closest
key (`unknown key mint.timeouts.instanse (did you mean mint.timeouts.instance?)`). `SWEMINT_SET`
holds shell-quoted overrides separated by spaces (`SWEMINT_SET='mint.limits.min_free_disk_bytes=0'`)
and reaches every command a script or a Ray job starts; the test suite uses it to switch off the
low-disk guard (10 GiB free by default), which measures the host and not the test. Environment:
`SWEMINT_CA_BUNDLE` (CA bundle propagated into build containers; default Debian's). The effective
configuration of the last `mint`/`run` is in `WORKDIR/mint_config.json` (and, host paths hidden,
in the dataset card). `swemint crawl -c FILE` reads the `sources` section of a pipeline config (or
a crawl config); `configs/nightly.yaml` shows every GitHub key, `configs/cluster.yaml` a job's."""

KEY = re.compile(r"^(\s*)([A-Za-z_][\w]*):(.*)$")
ITEM = re.compile(r"^(\s*)- (.*)$")


@dataclass
class Entry:
    """One key of the YAML file: dotted path, default as written, its words, whether it is a section."""

    path: str
    indent: int
    default: str = ""
    words: list[str] = field(default_factory=list)
    section: bool = False


def split_comment(text: str) -> tuple[str, str]:
    """(value, comment) of the part of a line after `key:` (a `#` inside quotes is not a comment)."""
    quote = None
    for i, ch in enumerate(text):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i].strip(), text[i + 1:].strip()
    return text.strip(), ""


def parse(lines: list[str]) -> list[Entry]:
    """The keys of a commented YAML file, in order, with their comments."""
    entries: list[Entry] = []
    stack: list[Entry] = []
    pending: list[str] = []  # comment lines above the next key
    for line in lines:
        if not line.strip():
            pending = [] if not entries or pending else pending
            continue
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if stripped.startswith("#"):
            text = stripped.lstrip("#").strip()
            last = entries[-1] if entries else None
            if last is not None and indent > last.indent and not pending:
                last.words.append(text)  # an indented continuation of the key above
            else:
                pending.append(text)
            continue
        item = ITEM.match(line)
        if item and entries:
            value, words = split_comment(item.group(2))
            e = entries[-1]
            e.section = False
            e.default = (e.default + ", " if e.default else "") + value
            if words:
                e.words.append(words)
            continue
        m = KEY.match(line)
        if not m:
            continue
        while stack and stack[-1].indent >= indent:
            stack.pop()
        value, words = split_comment(m.group(3))
        path = (stack[-1].path + "." + m.group(2)) if stack else m.group(2)
        e = Entry(path=path, indent=indent, default=value, words=[*pending, *([words] if words else [])],
                  section=value == "")
        pending = []
        entries.append(e)
        stack.append(e)
    for e in entries:
        if e.section and not any(x.path.startswith(e.path + ".") for x in entries):
            e.section = False  # a list written below its key
            e.default = f"[{e.default}]" if e.default else e.default
        elif not e.section and e.default and "," in e.default and not e.default.startswith(("[", "{", '"')):
            e.default = f"[{e.default}]"
    return entries


def cell(text: str) -> str:
    from envpool.quoting import markdown_cell

    return markdown_cell(text)


def configuration_page() -> str:
    """docs/configuration.md: the layering, then one table per top-level section."""
    entries = parse(CONFIG.read_text(encoding="utf-8").splitlines())
    out = ["# Configuration reference", "", NAV, "", "<!-- generated by scripts/gen_docs.py from configs/default.yaml: "
           "edit that file, then run the script -->", "", LAYERING, ""]
    top = [e for e in entries if "." not in e.path]
    plain = [e for e in top if not e.section]
    out += ["## Top level", "", "| key | default | what |", "|---|---|---|"]
    out += [f"| `{e.path}` | `{cell(e.default)}` | {cell(' '.join(e.words))} |" for e in plain]
    for sec in (e for e in top if e.section):
        out += ["", f"## `{sec.path}`", ""]
        if sec.words:
            out += [cell(" ".join(sec.words)), ""]
        out += ["| key | default | what |", "|---|---|---|"]
        for e in entries:
            if e.path.startswith(sec.path + "."):
                default = "(section)" if e.section else f"`{cell(e.default)}`"
                out.append(f"| `{e.path}` | {default} | {cell(' '.join(e.words))} |")
    return "\n".join(out) + "\n"


def columns_table() -> str:
    """The dataset's columns (`pipeline.export.COLUMNS`) as a Markdown table."""
    from pipeline.export import COLUMNS

    rows = ["| column | type | meaning |", "|---|---|---|"]
    rows += [f"| `{name}` | {cell(str(kind))} | {cell(meaning)} |" for name, kind, meaning in COLUMNS]
    return "\n".join(rows)


def dataset_page(text: str) -> str:
    """docs/dataset.md with the column table between its markers replaced."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DATASET_DOC}: no {BEGIN} ... {END} markers")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    return f"{head}{BEGIN}\n{columns_table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when a generated part is out of date")
    a = ap.parse_args(argv)
    want = {CONFIG_DOC: configuration_page(), DATASET_DOC: dataset_page(DATASET_DOC.read_text(encoding="utf-8"))}
    stale = [p for p, text in want.items() if not p.is_file() or p.read_text(encoding="utf-8") != text]
    if a.check:
        for p in stale:
            print(f"out of date: {p.relative_to(ROOT)} (run python scripts/gen_docs.py)", file=sys.stderr)
        return 1 if stale else 0
    for p in stale:
        p.write_text(want[p], encoding="utf-8")
        print(f"wrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

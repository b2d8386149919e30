"""The README is a map (issue 29): at most 200 lines, its links and the docs' links lead to files
that exist, every `swemint` command it shows exists with the options it uses, and the generated
docs (configuration, the column table) match configs/default.yaml and pipeline.export.COLUMNS."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

from typer.testing import CliRunner

from pipeline.cli import app

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_links_lead_to_files():
    broken = []
    for page in PAGES:
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert broken == []


def test_every_command_the_readme_shows_exists_with_its_options():
    text = (ROOT / "README.md").read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, re.S)
    shown = 0
    for line in (ln for b in blocks for ln in b.splitlines()):
        line = line.split("  #")[0].strip()
        m = re.search(r"(?:\.venv/bin/)?swemint (\w+)(.*)", line)
        if not m or line.startswith(("pip ", "bash ")):
            continue
        command, rest = m.group(1), m.group(2)
        help_text = CliRunner().invoke(app, [command, "-h"], terminal_width=400).stdout
        assert "Usage" in help_text, command
        for word in shlex.split(rest.replace("...", "")):
            if word.startswith("-") and not word.startswith("--set"):
                assert re.search(rf"(?<![\w-]){re.escape(word)}(?![\w-])", help_text), (command, word)
        shown += 1
    assert shown >= 6


def test_generated_docs_are_current():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_docs.py"), "--check"], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr


def _flat(name: str) -> str:
    return " ".join((ROOT / "docs" / name).read_text(encoding="utf-8").split())


def test_the_memory_docs_say_what_the_code_does():
    """Issue 30's fresh-user trial of the experience memory: what the docs left out or put in
    the wrong order."""
    concepts, ops = _flat("concepts.md"), _flat("operations.md")
    # the trajectory's order: the rules' plan first, then the memory may change it
    setup, memory = concepts.index("2. **Environment Setup**"), concepts.index("3. **Memory before the build**")
    assert setup < memory < concepts.index("4. **Execution**")
    assert "`derived`" in concepts and "only narrows retrieval and never acts before planning" in concepts
    for field in ("`queries`", "`chosen`", "`why_chosen`", "generic: the build host's network"):
        assert field in concepts, field
    assert "`mint.llm: {}`" in concepts and "openai/gpt-4o-mini" in concepts
    # the second trial: negative lessons, the context step, the report's `repo` and how to read a note
    for said in ("*Negative lessons*", "`applied` counts the instances that met the error and found no fix",
                 "They do **not** filter the ecosystems' rule repairs", "a trajectory step `memory` `context`",
                 "`repo` (the project's repository", "decode it twice -- `jq -r", "context not required",
                 "named by the project: pytest (test framework)", "`mint.llm.model is empty`"):
        assert said in concepts, said
    assert "`memory list`, `memory show`" in ops
    assert "`bench --score-only`, `memory list`, `memory show`) never" in ops

"""Issue 30 trial: the configuration reference said only "an entry scored >= min_uses times below
this reliability is dropped"; with the defaults (floor 0.34, min_uses 4) and the trust prior a
hand-written entry is first dropped at 0 worked of 5 applied, a learned one at 0 or 1 of 4. The
numbers the docs give are computed here with `Experience.reliability` / `dropped`."""

from __future__ import annotations

from pathlib import Path

from agents.memory.experience import Experience
from agents.mint_config import MemoryUseConfig

ROOT = Path(__file__).resolve().parents[3]


def first_dropped(source: str, floor: float, min_uses: int, up_to: int = 12) -> dict[int, int]:
    """applied -> the most `worked` at which an entry of `source` is dropped (applied <= up_to)."""
    out = {}
    for applied in range(up_to + 1):
        worked = [w for w in range(applied + 1)
                  if Experience(id="x-y", ecosystem="python", problem="something failed", solution="fix it",
                                error_signature="failed", provenance={"source": source}, times_applied=applied,
                                times_worked=w).dropped(floor, min_uses)]
        if worked:
            out[applied] = max(worked)
    return out


def test_the_documented_drop_points_are_the_codes():
    floor, min_uses = MemoryUseConfig().floor, MemoryUseConfig().min_uses
    assert (floor, min_uses) == (0.34, 4)
    seed = first_dropped("seed", floor, min_uses)
    learned = first_dropped("learned", floor, min_uses)
    assert min(seed) == 5 and seed[5] == 0 and seed[8] == 1 and seed[11] == 2  # 0 of 4 is 3/8 = 0.375: kept
    assert min(learned) == 4 and learned[4] == 1 and learned[7] == 2
    assert first_dropped("rule", floor, min_uses) == seed
    line = next(ln for ln in (ROOT / "configs" / "default.yaml").read_text(encoding="utf-8").splitlines()
                if ln.strip().startswith("floor:"))
    assert "hand-written entry (seed, rule) at 0 worked of 5 applied (3/9), 1 of 8, 2 of 11" in line
    assert "a learned one at 0 or 1 worked of 4 (1/6, 2/6), 2 of 7" in line
    concepts = " ".join((ROOT / "docs" / "concepts.md").read_text(encoding="utf-8").split())
    assert "a hand-written entry at 0 worked of 5 applied, 3/9; a learned one at 0 or 1 worked of 4" in concepts

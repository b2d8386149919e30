"""Golden outputs for the polyglot parsers live in tests/data/polyglot (see regenerate.sh there)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "data" / "polyglot"


@pytest.fixture
def golden() -> Callable[[str], bytes]:
    """`golden(name)` -> the bytes of tests/data/polyglot/<name>."""
    return lambda name: (DATA / name).read_bytes()

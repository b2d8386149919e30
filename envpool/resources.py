"""Data files swemint ships beside its code, found through the installed package.

In a source checkout they live at the repository root (`configs/`, `data/demo/`,
`data/experiences/`); a wheel carries copies under `envpool/_bundled/` (the build step in
`setup.py` puts them there). `resource(rel)` returns the checkout's file when there is one, else
the bundled copy, so `swemint demo` and `swemint mint` work from any directory after a plain
`pip install`.
"""

from __future__ import annotations

from pathlib import Path

BUNDLED = ("configs", "data/demo", "data/experiences")
"""Folders (relative to the repository root) a wheel carries under `envpool/_bundled/`."""

_CHECKOUT = Path(__file__).resolve().parents[1]
_PACKAGE = Path(__file__).resolve().parent / "_bundled"


def resource(rel: str) -> Path:
    """The path of shipped file or folder `rel` (e.g. `configs/default.yaml`): the source
    checkout's when present, else the wheel's bundled copy (which may not exist either: callers
    get a path that raises FileNotFoundError when read, naming where it looked)."""
    local = _CHECKOUT / rel
    if local.exists() and (_CHECKOUT / "pyproject.toml").exists():
        return local
    return _PACKAGE / rel

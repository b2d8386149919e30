"""YAML configuration helpers shared by every config loader: read a mapping, merge layers,
parse `key.sub=value` overrides (kept apart from `pipeline.pipeline_config` so that section models such as
`pipeline.sources.crawl_config` can use them without an import cycle)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


def deep_merge(base: dict, extra: dict) -> dict:
    """`extra` over `base`, recursing into dicts (lists and scalars are replaced)."""
    out = dict(base)
    for k, v in extra.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def parse_override(item: str) -> dict:
    """`"a.b.c=value"` -> {"a": {"b": {"c": value}}}; value parsed as YAML (`3`, `true`, `[x, y]`).

    Raises ValueError without `=` or with an empty key."""
    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ValueError(f"override {item!r} is not key.sub=value")
    value: Any = yaml.safe_load(raw) if raw.strip() else ""
    for part in reversed(key.strip().split(".")):
        value = {part: value}
    return value


def read_yaml(path: Path) -> dict:
    """A YAML mapping from `path` (empty file -> {}); ValueError when it is not a mapping."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping at the top level")
    return data

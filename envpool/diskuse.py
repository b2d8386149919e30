"""Bytes of images, counted by layer: what a group of images holds, what only it holds (unique:
what removing the group frees) and what it shares with images outside it.

A layer is counted once wherever it is used. On an engine a layer is identified by its chain id
(the digest of its diff id and every diff id below it: the same content on the same parent is
one stored layer) and sized from the image's history; in a registry a layer is a blob, sized by
its manifest (compressed bytes). `usage()` does the counting and is pure.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Mapping

EMPTY_LAYER = "sha256:5f70bf18a086007016e948b04aed3b82103a36bea41755b6cddfaf10ace3c6ef"
"""Diff id of an empty layer (an empty tar)."""

Layers = list[tuple[str, int]]
"""An image's layers as (layer id, bytes), bottom first."""


def chain_ids(diff_ids: list[str]) -> list[str]:
    """Chain ids of a layer stack (OCI image spec: ChainID(L0) = DiffID(L0), ChainID(Ln) =
    sha256(ChainID(Ln-1) + " " + DiffID(Ln)))."""
    out: list[str] = []
    for d in diff_ids:
        out.append(d if not out else "sha256:" + hashlib.sha256(f"{out[-1]} {d}".encode()).hexdigest())
    return out


def layers_from_history(diff_ids: list[str], history: list[dict]) -> Layers | None:
    """An engine image's layers (chain id, bytes) from its `RootFS.Layers` and its history (the
    API's, newest first). The history entries with bytes are the non-empty layers in order;
    None when they do not line up (then the caller falls back to the image's own size)."""
    sized = [int(h.get("Size") or 0) for h in reversed(history) if int(h.get("Size") or 0) > 0]
    chains = chain_ids(diff_ids)
    nonempty = [c for c, d in zip(chains, diff_ids, strict=True) if d != EMPTY_LAYER]
    if len(nonempty) != len(sized):
        return None
    sizes = dict(zip(nonempty, sized, strict=True))
    return [(c, sizes.get(c, 0)) for c in chains]


def engine_layers(client, refs: Iterable[str]) -> dict[str, Layers]:
    """Layers of each of `refs` present on `client`'s engine (absent ones left out). An image
    whose history does not line up counts as one layer of its full size, its id as layer id."""
    out: dict[str, Layers] = {}
    for ref in refs:
        try:
            img = client.images.get(ref)
            diff_ids = (img.attrs.get("RootFS") or {}).get("Layers") or []
            layers = layers_from_history(diff_ids, client.api.history(img.id))
        except Exception:  # noqa: BLE001 - ImageNotFound, or it vanished meanwhile
            continue
        out[ref] = layers if layers is not None else [(img.id, int(img.attrs.get("Size") or 0))]
    return out


def usage(images: Mapping[str, Layers], group_of: Mapping[str, str]) -> dict[str, dict[str, int]]:
    """Per group: `images` (how many), `bytes` (its distinct layers), `unique` (layers no image
    of another group uses) and `shared` (= bytes - unique); plus `"*"`, every image (its
    `unique` = every distinct byte). Images missing from `group_of` form the group "other"."""
    owners: dict[str, set[str]] = defaultdict(set)
    size: dict[str, int] = {}
    members: dict[str, set[str]] = defaultdict(set)
    count: dict[str, int] = defaultdict(int)
    for key, layers in images.items():
        group = group_of.get(key, "other")
        count[group] += 1
        for lid, n in layers:
            owners[lid].add(group)
            size[lid] = max(size.get(lid, 0), n)
            members[group].add(lid)
    out = {}
    for group, lids in members.items():
        total = sum(size[lid] for lid in lids)
        unique = sum(size[lid] for lid in lids if owners[lid] == {group})
        out[group] = {"images": count[group], "bytes": total, "unique": unique, "shared": total - unique}
    every = sum(size.values())
    out["*"] = {"images": len(images), "bytes": every, "unique": every, "shared": 0}
    return out


def freed_by(images: Mapping[str, Layers], remove: Iterable[str]) -> int:
    """Bytes freed by removing the images `remove` (keys of `images`): their layers that no
    remaining image uses."""
    gone = set(remove)
    kept = {lid for key, layers in images.items() if key not in gone for lid, _ in layers}
    sizes = {lid: n for key in gone if key in images for lid, n in images[key]}
    return sum(n for lid, n in sizes.items() if lid not in kept)

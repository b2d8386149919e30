"""The Rust a cargo project needs (`toolchain_request`): the floors its files set and, with a
Cargo.lock, the stable Rust of the commit's date; what a plan whose Rust is older than its
request (a pin past the newest installable Rust) records and changes (`above_installable`)."""

from __future__ import annotations

from datetime import date, datetime
from envpool.toolchains import version_key
from agents.ecosystems.rust.rust_recipe import RustRecipe, load_recipe
from agents.ecosystems.rust.cargo_manifest import CargoProject


RUST_1_56 = date(2021, 10, 21)
VERSION_RULES = ("rust-requires-newer", "rust-unstable-feature")
"""The diagnosis rules (`agents/ecosystems/recipes/diagnosis.yaml`) whose failure is the rustc's
own version: only these end a plan on a substitute as toolchain-bound (a -sys crate's C compiler,
`rust-sys-c-compiler-too-old`, is not the version the pin asks for)."""


def stable_rust_at(when: date | datetime) -> str:
    """The newest stable Rust released on `when` (a release every 6 weeks; 1.56 on 2021-10-21)."""
    d = when.date() if isinstance(when, datetime) else when
    return f"1.{max(0, 56 + (d - RUST_1_56).days // 42)}"


def _vmax(versions: list[tuple[str, str]]) -> tuple[str, str] | None:
    best = None
    for v, why in versions:
        if version_key(v) and (best is None or version_key(v) > version_key(best[0])):
            best = (v, why)
    return best


def toolchain_request(project: CargoProject, when: date | datetime | None,
                      recipe: RustRecipe | None = None) -> tuple[str | None, list[str]]:
    """(version request for `envpool.toolchains.rust_image.ensure_image`, reasons).

    The request is the highest floor (rust-toolchain channel, rust-version, edition, lockfile
    version, sparse index when crates come from crates.io, and with a Cargo.lock the stable Rust
    at `when` -- a preference capped at the newest Rust installable here, where the floors are
    not); None (= newest) without a Cargo.lock unless a floor demands more; a nightly or beta
    channel is passed through (the toolchain module maps it to the newest stable).
    """
    recipe = recipe or load_recipe()
    floors: list[tuple[str, str]] = []
    ch = project.toolchain_channel
    if ch and (ch.startswith("nightly") or ch.startswith("beta")):
        return ch, [f"rust-toolchain asks for {ch}"]
    if ch and version_key(ch):
        floors.append((ch, f"rust-toolchain channel {ch}"))
    floors += [(v, f"rust-version {v}") for v in project.rust_versions]
    floors += [(recipe.edition_floor.get(e, "1.0"), f"edition {e}") for e in project.editions]
    if project.lock_version in recipe.lockfile_floor:
        floors.append((recipe.lockfile_floor[project.lock_version], f"Cargo.lock version {project.lock_version}"))
    if project.registry_deps and not project.vendored:
        floors.append((recipe.sparse_index_floor, "crates.io sparse index (the git index is on GitHub)"))
    floor = _vmax(floors)
    if project.has_lock and when is not None:
        from envpool.toolchains.rust_image import DEBIAN_RUST

        era = stable_rust_at(when)
        newest = DEBIAN_RUST[-1].version
        why = f"stable Rust at the commit date ({era}), locked dependencies"
        if version_key(era) > version_key(newest):  # a preference, not a floor: the newest there is
            era, why = newest, f"stable Rust at the commit date ({era}) is not installable here; {newest}, the newest"
        best = _vmax([*([floor] if floor else []), (era, why)])
        return (best[0], [best[1]]) if best else (None, [])
    if not project.has_lock:
        # newest crates need the newest compiler; a floor only matters when it is newer still
        from envpool.toolchains.rust_image import DEBIAN_RUST, STABLE_SUITES
        newest = [d.version for d in DEBIAN_RUST if d.suite in STABLE_SUITES][-1]
        if floor and version_key(floor[0]) > version_key(newest):
            return floor[0], [floor[1]]
        return None, ["no Cargo.lock: dependencies resolve to the newest crates, newest toolchain"]
    return (floor[0], [floor[1]]) if floor else (None, [])


def above_installable(project: CargoProject, request: str | None, reasons: list[str],
                      version: str) -> tuple[str, str, list[str]]:
    """(toolchain-bound note, extra cargo flag, substitutions) of a plan whose Rust `version` is
    older than the `request` (`reasons[0]`: what asked for it), which happens only when the
    request is newer than any Rust installable here (within `rust_image.PIN_SLACK`; the class:
    a repository pinning a release past Debian's newest, astral-sh/uv's rust-toolchain.toml
    channel 1.98.0 when sid has 1.97). A rust-toolchain pin needs no override: Debian's cargo
    has no rustup and does not read the file. A workspace `rust-version` above `version` would
    make cargo refuse the build ("rustc 1.97.0 is not supported by the following package"), so
    the substituted build's cargo commands get ``--ignore-rust-version`` (which also ignores
    the dependencies': a build that really needs the newer release then fails compiling, and
    the note names the substitute). ("", "", []) otherwise."""
    if not request or not version_key(request) or not version_key(version) or \
            version_key(version)[:2] >= version_key(request)[:2]:
        return "", "", []
    why = reasons[0] if reasons else f"rust {request}"
    bound = (f"toolchain-bound: {why} asks for rust {request}, newer than any Rust installable here; "
             f"rust {version} (the newest) was substituted")
    above = sorted((v for v in project.rust_versions if version_key(v)[:2] > version_key(version)[:2]),
                   key=version_key)
    if not above:
        return bound, "", []
    return bound, " --ignore-rust-version", [
        f"cargo --ignore-rust-version (the substituted build only): the workspace's rust-version {above[-1]} is "
        f"above rust {version}, the substitute; the dependencies' rust-version is ignored too (a build that needs "
        f"rust {request} fails for its version: toolchain-bound)"]

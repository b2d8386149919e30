"""Rust toolchain images: the official `rust:X` image where a registry answers, else Debian.

Without a container registry (and with static.rust-lang.org unreachable, so no rustup), the
Rust versions come from Debian packages, one suite per image (checked with `apt-cache policy`
in swemint/debian containers):

| version | suite    | packages              |
|---------|----------|-----------------------|
| 1.48    | bullseye | rustc cargo           |
| 1.63    | bookworm | rustc cargo           |
| 1.78    | bullseye | rustc-web cargo-web   |
| 1.85    | trixie   | rustc cargo           |
| 1.96    | trixie   | rustc-web cargo-web   |
| 1.97    | sid      | rustc cargo           |

Both `-web` packages install `/usr/bin/rustc` and `/usr/bin/cargo`. Each image also gets a C
toolchain and the headers `*-sys` crates look for most often (`pkg-config`, `libssl-dev`,
`make`). The choice is the oldest available version >= `requested` (the project's floor), or
the newest stable-suite version when nothing is requested; a nightly request gets the newest
stable with a substitution note (the caller sets ``RUSTC_BOOTSTRAP=1``).

A floor newer than every version here by at most `PIN_SLACK` minor releases (a repository that
pins its toolchain a release or two past Debian's newest: astral-sh/uv's `rust-toolchain.toml`
channel 1.98.0 when sid has 1.97) gets the newest with a substitution note: a pin is usually
the project's reproducibility choice and Rust is backward compatible across minor releases, so
the newest installable Rust is the generic substitute; a build that really needs the pinned
release fails for its version (the caller names the substitute in that failure). Further ahead
(or a new major version) there is no plan.
"""

from __future__ import annotations

import logging
import re
from typing import NamedTuple

from envpool.imagestore import active_store
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig, image_exists, try_pull
from envpool.toolchains import ToolchainChoice, apt_script, layer_image, version_key

__all__ = ["DEBIAN_RUST", "EXTRA_PACKAGES", "PIN_SLACK", "DebianRust", "above_newest", "available_versions",
           "ensure_image", "pick_debian", "rust_script"]

log = logging.getLogger(__name__)


class DebianRust(NamedTuple):
    """One Rust toolchain Debian ships: `version` (major.minor), `suite`, apt `packages`."""

    version: str
    suite: str
    packages: tuple[str, ...]


DEBIAN_RUST: tuple[DebianRust, ...] = (
    DebianRust("1.48", "bullseye", ("rustc", "cargo")),
    DebianRust("1.63", "bookworm", ("rustc", "cargo")),
    DebianRust("1.78", "bullseye", ("rustc-web", "cargo-web")),
    DebianRust("1.85", "trixie", ("rustc", "cargo")),
    DebianRust("1.96", "trixie", ("rustc-web", "cargo-web")),
    DebianRust("1.97", "sid", ("rustc", "cargo")),
)
"""Debian's Rust toolchains, oldest first (measured on the frozen deb.debian.org snapshot)."""

STABLE_SUITES = ("bullseye", "bookworm", "trixie")
"""Suites preferred for "the newest": sid is used only when a project needs its version."""

EXTRA_PACKAGES = ("gcc", "libc6-dev", "make", "pkg-config", "libssl-dev", "python3")
"""Beside rustc and cargo: a C toolchain for build scripts and -sys crates, python3 for the grading
tools every environment image carries (installed once here, not at each instance's commit)."""
"""Installed beside rustc/cargo: a linker and what `*-sys` build scripts look for first."""

PIN_SLACK = 3
"""How many minor releases a requested Rust may be ahead of the newest installable one and still
get it as a substitute (three releases: about 18 weeks of Rust's six-week cycle, more than
Debian sid's usual lag behind a stable release); further ahead the request fails."""

_official_failed: set[str] = set()


def available_versions() -> list[str]:
    """The Debian-provided versions, oldest first (`"1.48"`, ...)."""
    return [d.version for d in DEBIAN_RUST]


def _norm(requested: str | None) -> tuple[str | None, bool]:
    """(`major.minor[.patch]` floor or None, nightly?) from a request such as `1.70.0`,
    `stable`, `nightly-2022-01-01`, `1.65`."""
    if not requested:
        return None, False
    r = requested.strip().lower()
    if r.startswith("nightly") or r.startswith("beta"):
        return None, True
    if r == "stable" or not version_key(r):
        return None, False
    return ".".join(str(p) for p in version_key(r)[:3]), False


def above_newest(requested: str | None) -> int:
    """How many minor releases the version floor `requested` is ahead of the newest Rust
    installable here (0 when it is not ahead, or not a version; a new major version counts as
    far ahead)."""
    floor, _ = _norm(requested)
    if floor is None:
        return 0
    have, want = version_key(DEBIAN_RUST[-1].version)[:2], version_key(floor)[:2]
    if want <= have:
        return 0
    return want[1] - have[1] if want[0] == have[0] else 10 ** 6


def pick_debian(requested: str | None) -> tuple[DebianRust, list[str]]:
    """The Debian toolchain for `requested` and the substitutions made.

    `requested`: a version floor (`"1.70"`, `"1.70.0"`), `stable`/None (the newest in a stable
    suite) or a nightly/beta channel (the newest, noted). A floor at most `PIN_SLACK` minor
    releases newer than every Debian version gets the newest, noted; raises EnvBuildError when
    it is further ahead.
    """
    floor, nightly = _norm(requested)
    subs: list[str] = []
    if floor is None:
        pick = [d for d in DEBIAN_RUST if d.suite in STABLE_SUITES][-1]
        if nightly:
            subs.append(f"rust {requested} requested (nightly/beta cannot be installed here): "
                        f"stable {pick.version} provided with RUSTC_BOOTSTRAP=1")
        return pick, subs
    fk = version_key(floor)
    for d in DEBIAN_RUST:
        if version_key(d.version) >= fk[:2]:
            if version_key(d.version) != fk[:2]:
                subs.append(f"rust {requested} requested, {d.version} provided (nearest newer in Debian {d.suite})")
            return d, subs
    newest, ahead = DEBIAN_RUST[-1], above_newest(requested)
    if ahead <= PIN_SLACK:
        subs.append(f"rust {requested} requested, newer than any Rust installable here: {newest.version} provided "
                    f"(the newest, Debian {newest.suite}; {ahead} minor release(s) behind, within {PIN_SLACK}: Rust "
                    f"is backward compatible across minor releases, a build that needs {floor} fails as "
                    "toolchain-bound)")
        return newest, subs
    raise EnvBuildError(f"rust {requested} requested, but the newest Rust installable here is "
                        f"{newest.version} (Debian {newest.suite}; rustup cannot download; more than {PIN_SLACK} "
                        "minor releases ahead, no substitute)")


def extra_packages(warm: bool = True) -> tuple[str, ...]:
    """EXTRA_PACKAGES, without python3 when not `warm` (`ImageConfig.warm`: the images before
    issue 26)."""
    return EXTRA_PACKAGES if warm else tuple(p for p in EXTRA_PACKAGES if p != "python3")


def rust_script(d: DebianRust, warm: bool = True) -> str:
    """Shell script installing toolchain `d` (apt over plain http) and printing its versions."""
    return (apt_script([*d.packages, *extra_packages(warm)])
            + "; rustc --version && cargo --version")


def _official(requested: str | None, cfg: ImageConfig, store) -> ToolchainChoice | None:
    floor, nightly = _norm(requested)
    ref = "rust:latest" if floor is None else f"rust:{floor}"
    if ref in _official_failed:
        return None
    if image_exists(store, ref) or try_pull(store, ref):
        subs = [f"rust {requested} requested: official {ref} with RUSTC_BOOTSTRAP=1"] if nightly else []
        return ToolchainChoice(language="rust", requested=requested, version=floor or "latest", image=ref,
                               route="official", substitutions=subs)
    _official_failed.add(ref)
    return None


def ensure_image(requested: str | None, cfg: ImageConfig | None = None, engine=None) -> ToolchainChoice:
    """A Rust toolchain image at least as new as `requested`.

    `requested`: the project's floor (`"1.56"`, `"1.70.0"`; see `pick_debian` for None, stable,
    nightly). Route `official` pulls `rust:<requested>` (or `rust:latest`); `debootstrap` (and
    `auto` when the pull fails) builds `swemint/rust:<version>-<hash>` from a Debian suite image
    (once; later calls reuse it). Raises EnvBuildError when no version is new enough, InfraError
    when the image build fails.
    """
    cfg = cfg or ImageConfig()
    store = active_store(engine)
    if cfg.route in ("auto", "official"):
        got = _official(requested, cfg, store)
        if got is not None:
            return got
        if cfg.route == "official":
            raise EnvBuildError(f"no registry answers for the official rust image ({requested or 'latest'})")
    d, subs = pick_debian(requested)
    tag = layer_image("rust", d.version, d.suite, rust_script(d, cfg.warm), cfg, store,
                      inputs={"packages": list(d.packages), "extra": list(extra_packages(cfg.warm))})
    if requested is None:
        subs.append(f"no rust version requested: newest stable-suite Debian rust {d.version}")
    return ToolchainChoice(language="rust", requested=requested, version=d.version, image=tag,
                           route="debootstrap", substitutions=subs)


def parse_rustc_version(text: str) -> str | None:
    """`1.78.0` from `rustc 1.78.0 (9b00956e5 2024-04-29)` (None when absent)."""
    m = re.search(r"rustc (\d+\.\d+\.\d+)", text)
    return m.group(1) if m else None

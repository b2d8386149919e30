"""C/C++ toolchain images: gcc/g++, make, cmake, autotools, bison/flex, pkg-config.

Routes: the official ``gcc:MAJOR`` image where a registry answers (cmake and autotools layered
on with apt: the official image is Debian based), else a Debian suite bootstrapped by
`envpool.images.ensure_debian_base` plus one apt layer (`layer_image`). Debian suites give:

| suite    | gcc | cmake |
|----------|-----|-------|
| bullseye | 10  | 3.18  |
| bookworm | 12  | 3.25  |
| trixie   | 14  | 3.31  |

A project whose ``cmake_minimum_required`` is newer than the suite's cmake gets the exact
cmake release series from PyPI's ``cmake`` wheel (a venv at /opt/cmake, linked into
/usr/local/bin); both choices are recorded in `ToolchainChoice.substitutions`.
"""

from __future__ import annotations

import re

from envpool.imagestore import active_store
from envpool.images import ImageConfig, _layer, _lock, image_exists, spec_hash, try_pull
from envpool.toolchains import ToolchainChoice, apt_script, layer_image, version_key

__all__ = ["DEBIAN_GCC", "OLDEST_CMAKE", "PACKAGES", "cmake_of_suite", "cmake_wheel_script", "cmake_wheel_series",
           "ensure_image", "pick_gcc"]

DEBIAN_GCC: dict[str, str] = {"10": "bullseye", "12": "bookworm", "14": "trixie"}
"""gcc major -> the Debian suite whose default gcc it is."""

DEBIAN_CMAKE: dict[str, str] = {"bullseye": "3.18", "bookworm": "3.25", "trixie": "3.31"}
"""Debian suite -> the cmake minor it ships."""

OLDEST_CMAKE = min(DEBIAN_CMAKE.values(), key=version_key)
"""The oldest cmake minor a Debian suite of these images ships (bullseye's ``3.18``)."""

PACKAGES = ["build-essential", "gcc", "g++", "make", "cmake", "autoconf", "automake", "libtool",
            "autopoint", "gettext", "bison", "flex", "pkg-config", "python3", "python3-venv",
            "file", "ca-certificates", "git"]
"""Debian packages of the toolchain layer (python3: the ctest selection helper and build
scripts; python3-venv: the PyPI cmake wheel when needed)."""


def cmake_of_suite(suite: str) -> str:
    """The cmake minor (`"3.25"`) Debian `suite` ships; KeyError for unknown suites."""
    return DEBIAN_CMAKE[suite]


def pick_gcc(requested: str | None) -> tuple[str, list[str]]:
    """(gcc major available here, substitutions) for a requested major (`"11"`, `"12.2"`, None).

    The smallest available major >= requested; None -> 12 (bookworm); newer than every
    available -> the newest, recorded as a substitution.
    """
    have = sorted(DEBIAN_GCC, key=int)
    if not requested:
        return "12", []
    want = version_key(requested)[:1] or (12,)
    for major in have:
        if int(major) >= want[0]:
            subs = [] if int(major) == want[0] else [f"gcc {requested} requested, {major} provided (nearest available)"]
            return major, subs
    return have[-1], [f"gcc {requested} requested, {have[-1]} provided (newest available)"]


def cmake_wheel_series(required: str | None, have: str) -> str | None:
    """The cmake release series (``"3.28"``: major.minor of `required`) to take from PyPI's cmake
    wheel when a project's ``cmake_minimum_required`` `required` (``"3.28"``, ``"3.28.1"``) is
    newer, by major.minor, than the cmake `have` (``"3.25"``); None when `have` serves or nothing
    is required. The one decision of the toolchain image (`ensure_image`) and of a library the
    repository builds for another ecosystem (`agents.ecosystems.cfamily.c_library`)."""
    want = version_key(required or "")[:2]
    if not want or want <= version_key(have)[:2]:
        return None
    return ".".join(str(x) for x in want)


def cmake_wheel_script(cmake: str) -> str:
    """Shell lines installing PyPI's cmake wheel of the `cmake` minor series (`"3.28"`; digits
    and dots only, else ValueError) into /opt/cmake, linked into /usr/local/bin (needs python3
    and its venv module)."""
    if not re.fullmatch(r"\d+(?:\.\d+){0,2}", cmake):
        raise ValueError(f"not a cmake version: {cmake!r}")
    spec = f"cmake=={cmake}.*" if cmake.count(".") == 1 else f"cmake=={cmake}"
    return ("python3 -m venv /opt/cmake && /opt/cmake/bin/pip install -q "
            f"--cert \"${{PIP_CERT:-/opt/swemint/ca.pem}}\" '{spec}' && "
            "for b in cmake ctest cpack; do ln -sf /opt/cmake/bin/$b /usr/local/bin/$b; done && "
            "cmake --version")


def ensure_image(requested: str | None, cfg: ImageConfig | None = None, engine=None, *,
                 cmake: str | None = None) -> ToolchainChoice:
    """The tag of a C/C++ toolchain image with gcc >= `requested` (a gcc major, None = 12).

    `cmake`: the minimum cmake version the project declares (`"3.1"`, `"3.28"`); when the
    suite's cmake is older, the PyPI wheel of that minor series is layered on top. Returns a
    `ToolchainChoice` (language "c", version like ``"gcc 12, cmake 3.25"``). Raises InfraError
    (from the image build) when apt or pip fails.
    """
    cfg = cfg or ImageConfig()
    major, subs = pick_gcc(requested)
    suite = DEBIAN_GCC[major]
    cm = cmake_of_suite(suite)
    script = apt_script(PACKAGES)
    if want := cmake_wheel_series(cmake, cm):
        script += " && " + cmake_wheel_script(want)
        subs.append(f"cmake {cmake} required, Debian {suite} has {cm}: PyPI cmake {want}.* installed")
        cm = want
    version = f"gcc {major}, cmake {cm}"
    store = active_store(engine)
    if cfg.route in ("auto", "official"):
        tag = f"swemint/cfamily:gcc{major}-official-{spec_hash({'script': script, 'gcc': major})}"
        with _lock(tag):
            if image_exists(store, tag) or try_pull(store, f"gcc:{major}"):
                if not image_exists(store, tag):
                    _layer(store, f"gcc:{major}", tag, script, route="official", mirror=cfg.mirror)
                return ToolchainChoice(language="c", requested=requested, version=version, image=tag,
                                       route="official", substitutions=subs)
    tag = layer_image("cfamily", f"gcc{major}", suite, script, cfg, store,
                      inputs={"packages": PACKAGES, "cmake": cm})
    return ToolchainChoice(language="c", requested=requested, version=version, image=tag,
                           route="debootstrap", substitutions=subs)

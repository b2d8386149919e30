"""Base images and toolchain layers, tagged by a hash of their inputs.

Two routes, recorded on every image (label `swemint.route`):
- `official`: pull an official image (e.g. `python:3.8-slim-bookworm`) where a registry answers;
- `debootstrap`: where none does, `debootstrap --variant=minbase SUITE` then `docker import`,
  with toolchains layered on top by run + commit (no buildx needed).

Image names come from a hash of their inputs (SWE-bench v4 `test_spec.py` idea): identical
specs share images; a changed spec never reuses a stale one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from envpool.aptmirror import DEBIAN_MIRROR, MirrorPolicy, MirrorRetry, layer_with_retry
from envpool.errors import InfraError
from envpool.imagestore import active_store
from envpool.image_registry import shared_image
from envpool.sandbox import ImageStore

log = logging.getLogger(__name__)

# Python version -> (Debian suite that ships it, apt package name of the interpreter)
DEBIAN_PYTHONS: dict[str, str] = {"3.9": "bullseye", "3.11": "bookworm", "3.13": "trixie", "3.14": "sid"}
"""Interpreters Debian suites provide here; others (3.6-3.8, 3.10, 3.12) are substituted. 3.14
(rule S16: a project whose requires-python excludes every older interpreter, e.g. ``>=3.14``) is
unstable's ``python3`` (also testing's; sid is the suite this project already bootstraps for JDK 8);
a suite that moves is checked to still give the version when its image is built
(`MOVING_SUITES`)."""
MOVING_SUITES = ("sid",)
"""Suites whose ``python3`` changes over time: their Python image checks the version it got."""

BASE_PACKAGES = ["ca-certificates", "git", "patch", "procps", "curl", "xz-utils", "bzip2", "unzip",
                 "locales"]
PYTHON_PACKAGES = ["python3", "python3-venv", "python3-dev", "python3-pip", "build-essential",
                   "pkg-config", "libffi-dev", "libssl-dev", "zlib1g-dev", "libxml2-dev",
                   "libxslt1-dev", "libjpeg-dev", "libyaml-dev"]
UV_VERSION = "0.13.9"

_locks: dict[str, threading.Lock] = {}
_recipes: dict[str, tuple[str, str]] = {}
"""Image tag -> (parent image, shell script that made it from the parent); see `note_layer`."""
_locks_guard = threading.Lock()


def _lock(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


class ImageConfig(BaseModel):
    """How base images are obtained.

    `route`: "auto" tries the official image first and bootstraps when no registry answers;
    "official" or "debootstrap" force one route.
    """

    model_config = ConfigDict(extra="forbid")
    route: str = Field(default="auto", pattern="^(auto|official|debootstrap)$")
    debian_mirror: str = DEBIAN_MIRROR
    uv_version: str = UV_VERSION
    registry: str | None = None
    """Registry (`host:port[/prefix]`) through which nodes share toolchain images: one node
    builds and pushes, the others pull by digest (`envpool.image_registry.shared_image`). Follows the
    pipeline's `registry` unless set; None = every engine builds its own."""
    registry_auth: tuple[str, str] | None = None
    """(username variable, password variable) of the registry's credentials; follows the
    pipeline's `registry_auth`."""
    shared_dir: Path | None = None
    """A folder every node mounts at the same path (default `WORKDIR/images`): cluster-wide
    build locks and `events.jsonl` (one line per image built, pulled or published)."""
    warm: bool = True
    """Toolchain images carry what every instance needs (issue 26): Go's compiled standard
    library, python3 for the grading tools in Go, Rust and Java images. False: the images as
    before (each cold Go instance compiles the standard library; python3 is installed at each
    instance's commit) -- a benchmark's baseline arm."""
    mirror: MirrorRetry = Field(default_factory=MirrorRetry)
    """Attempts of an image layer's build that failed because apt could not use the Debian mirror
    (`envpool.aptmirror.layer_with_retry`); still failing after them: `AptMirrorError`."""


class ImageRecipe(BaseModel):
    """How to rebuild a toolchain image without swemint: `from_image` (an official name such as
    `debian:bookworm-slim` or `python:3.11-slim-bookworm`), then `steps` (bash scripts, in order,
    run as root). `stand_in`: the local image that plays `from_image` on a host without a
    registry (our debootstrapped Debian base), else None. `complete`: False when a layer's
    script is unknown to this process (an image built elsewhere); then `from_image` is the
    nearest known image, possibly swemint's own."""

    model_config = ConfigDict(extra="forbid")
    from_image: str
    steps: list[str] = Field(default_factory=list)
    stand_in: str | None = None
    complete: bool = True


APT_CONF = ("printf '%s\\n' 'Acquire::Check-Valid-Until \"false\";' 'APT::Install-Recommends \"false\";' "
            "> /etc/apt/apt.conf.d/99swemint")
"""The apt settings of our bootstrapped bases (frozen snapshot mirrors need the first)."""


def note_layer(tag: str, parent: str, script: str) -> None:
    """Record that image `tag` is `parent` + `script` (for `recipe`). Called whenever an image
    is resolved, built or found, so a Dockerfile rendered in this process can spell it out."""
    _recipes[tag] = (parent, script)


def recipe(tag: str) -> ImageRecipe:
    """The official base and the steps that rebuild image `tag`, from the layers noted in this
    process (`note_layer`). A Debian base we bootstrapped is recorded as its official slim image
    (`debian:<suite>-slim`) with our base packages installed on top (debootstrap's `--include`
    installs the same), the bootstrapped image as its `stand_in`."""
    steps: list[str] = []
    current = tag
    seen = set()
    while current in _recipes and current not in seen:
        seen.add(current)
        parent, script = _recipes[current]
        steps.insert(0, script)
        current = parent
    if current == tag:
        return ImageRecipe(from_image=tag, complete=False)
    stand_in = _stand_ins.get(current)
    official = not current.startswith("swemint/")
    return ImageRecipe(from_image=current, steps=steps, stand_in=stand_in, complete=official)


_stand_ins: dict[str, str] = {}
"""Official image name -> the local image that stands in for it (a debootstrapped base)."""


def spec_hash(inputs: dict) -> str:
    """12 hex digits of sha256 over the canonical JSON of `inputs`."""
    return hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]


def image_exists(engine, ref: str) -> bool:
    """True when the engine (an image store, a sandbox factory or a docker client) has `ref`."""
    return active_store(engine).get(ref) is not None


def _label(store: ImageStore, ref: str, key: str) -> str | None:
    img = store.get(ref)
    return img.labels.get(key) if img is not None else None


def try_pull(engine, ref: str) -> bool:
    """Try to pull `ref` on the engine; False (never raises) when no registry answers."""
    return active_store(engine).pull(ref)


def debian_base_tag(suite: str, cfg: ImageConfig | None = None) -> str:
    """The tag of our Debian `suite` base image (built or not), its recipe noted: the official
    `debian:<suite>-slim` plus our apt settings and base packages."""
    cfg = cfg or ImageConfig()
    inputs = {"kind": "debian-base", "suite": suite, "mirror": cfg.debian_mirror,
              "include": BASE_PACKAGES, "v": 1}
    tag = f"swemint/debian:{suite}-{spec_hash(inputs)}"
    official = f"debian:{suite}-slim"
    note_layer(tag, official, APT_CONF + "; " + _apt_script(BASE_PACKAGES, suite))
    _stand_ins.setdefault(official, tag)
    return tag


def ensure_debian_base(suite: str, cfg: ImageConfig | None = None, engine=None) -> str:
    """Return the tag of a minimal Debian `suite` image, bootstrapping it when needed.

    On `engine` (an image store, a factory or a docker client; default `active_store()`):
    the official slim image plus our base packages where a registry answers, else debootstrap
    (`ImageStore.bootstrap`: 25-45 s, ~210 MB); with `cfg.registry`, once in the cluster
    (`envpool.image_registry.shared_image`: other nodes pull it by digest). Raises InfraError when
    debootstrap is missing or fails, or the registry fails.
    """
    cfg = cfg or ImageConfig()
    store = active_store(engine)
    tag = debian_base_tag(suite, cfg)
    with _lock(tag):
        return shared_image(store, tag, cfg, lambda: _make_debian_base(suite, tag, cfg, store), kind="base")


def _make_debian_base(suite: str, tag: str, cfg: ImageConfig, store: ImageStore) -> None:
    """Make `tag` in `store`: the official slim image plus our packages where a registry
    answers, else debootstrap + import."""
    if cfg.route in ("auto", "official") and store.pull(f"debian:{suite}-slim"):
        # official slim image + our base packages layered on top
        _layer(store, f"debian:{suite}-slim", tag, _apt_script(BASE_PACKAGES, suite), route="official",
               mirror=cfg.mirror)
        return
    if cfg.route == "official":
        raise InfraError(f"no registry answers for debian:{suite}-slim")
    store.bootstrap(suite, tag, cfg.debian_mirror, BASE_PACKAGES)


def _apt_script(packages: list[str], suite: str | None = None) -> str:
    return ("set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; "
            f"apt-get install -y -qq --no-install-recommends {' '.join(packages)} >/dev/null; "
            "rm -rf /var/lib/apt/lists/*")


def _layer(engine, parent: str, tag: str, script: str, route: str, timeout: float = 1800, *,
           mirror: MirrorPolicy) -> str:
    """Image `tag` = `parent` + `script` on the engine (`ImageStore.layer`), labelled with its
    route and parent; the recipe noted (`note_layer`). A build apt fails on the Debian mirror is
    tried again under `mirror` (`envpool.aptmirror.layer_with_retry`: `AptMirrorError` when it
    keeps failing so); any other failure's InfraError is raised after one attempt."""
    note_layer(tag, parent, script)
    store = active_store(engine)
    return layer_with_retry(lambda: store.layer(parent, tag, script, {"swemint.route": route, "swemint.parent": parent},
                                                timeout=timeout), tag, mirror)


def python_toolchain_script(uv_version: str, check_version: str | None = None) -> str:
    """Shell script that adds Python build tools and uv to a Debian image with python3; with
    `check_version` (``3.14``) it fails unless that ``python3`` is that version (a suite that
    moves, `MOVING_SUITES`)."""
    check = "" if check_version is None else (
        f"python3 -c 'import sys; sys.exit(sys.version_info[:2] != {tuple(int(x) for x in check_version.split('.'))})' "
        f"|| {{ echo 'swemint: this suite no longer gives python {check_version}' >&2; exit 1; }}; ")
    return (_apt_script(PYTHON_PACKAGES) + "; " + check +
            "python3 -m venv /opt/uv && "
            f"/opt/uv/bin/pip install -q --disable-pip-version-check 'uv=={uv_version}' && "
            "ln -sf /opt/uv/bin/uv /usr/local/bin/uv && uv --version && "
            "git config --system user.email swemint@localhost && git config --system user.name swemint && "
            "git config --system --add safe.directory '*'")


def available_pythons(cfg: ImageConfig | None = None) -> list[str]:
    """Python versions this image route can provide, oldest first."""
    cfg = cfg or ImageConfig()
    if cfg.route == "official":
        return ["3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "3.14"]
    return sorted(DEBIAN_PYTHONS, key=lambda v: tuple(int(x) for x in v.split(".")))


def python_image_tag(version: str, cfg: ImageConfig | None = None) -> str:
    """The tag of the Python `version` toolchain image for `cfg` (built or not)."""
    cfg = cfg or ImageConfig()
    inputs = {"kind": "python", "version": version, "uv": cfg.uv_version, "pkgs": PYTHON_PACKAGES,
              "route": cfg.route, "v": 2}
    return f"swemint/python:{version}-{spec_hash(inputs)}"


def ensure_python_image(version: str, cfg: ImageConfig | None = None, engine=None) -> str:
    """Return the tag of a Python `version` toolchain image (python3, venv, build tools, uv, git).

    Official route: `python:<version>-slim-bookworm` plus build tools. Debootstrap route: the
    Debian suite that ships `version` (see DEBIAN_PYTHONS); raises InfraError when the version
    cannot be provided here (the caller substitutes and records it).
    """
    cfg = cfg or ImageConfig()
    store = active_store(engine)
    tag = python_image_tag(version, cfg)
    suite = DEBIAN_PYTHONS.get(version)

    def build() -> None:
        if cfg.route in ("auto", "official"):
            official = f"python:{version}-slim-bookworm"
            if store.pull(official):
                layer = (_apt_script(BASE_PACKAGES + ["build-essential", "pkg-config"]) + "; "
                         f"pip install -q 'uv=={cfg.uv_version}' && uv --version && "
                         "ln -sf \"$(command -v python)\" /usr/local/bin/python3 || true")
                _layer(store, official, tag, layer, route="official", mirror=cfg.mirror)
                return
            if cfg.route == "official":
                raise InfraError(f"no registry answers for {official}")
        if not suite:
            raise InfraError(f"Python {version} cannot be provided without a registry "
                             f"(Debian suites give {', '.join(DEBIAN_PYTHONS)})")
        base = ensure_debian_base(suite, cfg, store)
        _layer(store, base, tag, script, route="debootstrap", mirror=cfg.mirror)

    script = python_toolchain_script(cfg.uv_version, version if suite in MOVING_SUITES else None)

    with _lock(tag):
        shared_image(store, tag, cfg, build)
        if suite and cfg.route != "official" and _label(store, tag, "swemint.route") != "official":
            note_layer(tag, debian_base_tag(suite, cfg), script)
        return tag


if __name__ == "__main__":  # python -m envpool.images [--tags] [3.11 3.9 ...]: bootstrap toolchain images
    import sys

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if sys.argv[1:2] == ["--tags"]:  # only print the tags (nothing built)
        for _version in sys.argv[2:] or ["3.11", "3.9"]:
            print(python_image_tag(_version))
        sys.exit(0)
    try:
        for _version in sys.argv[1:] or ["3.11", "3.9"]:
            print(ensure_python_image(_version), flush=True)
    except InfraError as _e:
        print(f"swemint: {_e}", file=sys.stderr)
        sys.exit(1)

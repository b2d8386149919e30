"""The few calls of the Docker Registry HTTP API v2 that disk accounting and eviction need:
repositories, tags, a manifest (its digest and layer sizes), deleting a manifest.

Basic authentication (`docker-registry` with htpasswd, most self-hosted registries); plain HTTP
for a registry on loopback (`127.0.0.0/8`, `localhost`, as Docker trusts it), HTTPS otherwise.
Deleting needs the registry's `storage.delete.enabled: true`; the bytes come back only after the
registry's garbage collection (`docker-registry garbage-collect CONFIG`, with the registry
read-only or stopped).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from envpool.errors import InfraError

MANIFEST_TYPES = ", ".join([
    "application/vnd.docker.distribution.manifest.v2+json",
    "application/vnd.oci.image.manifest.v1+json",
])
"""Accept header of manifest requests (single-platform images: what `docker push` of a local
image writes)."""


@dataclass
class Manifest:
    """One manifest: `repo`, its `digest`, the `config` digest (the image id), and `layers` as
    (digest, compressed bytes), in order."""

    repo: str
    digest: str
    config: str
    layers: list[tuple[str, int]] = field(default_factory=list)

    @property
    def size(self) -> int:
        """Compressed bytes of its layers."""
        return sum(s for _, s in self.layers)


def _scheme(registry: str) -> str:
    host = registry.split("/", 1)[0].rsplit(":", 1)[0]
    return "http" if host in ("localhost", "::1") or host.startswith("127.") else "https"


class RegistryAPI:
    """`registry`: `host:port` (a path prefix after it is ignored here: repositories are named
    in full); `auth`: {"username", "password"} or None. Every call raises InfraError when the
    registry does not answer or refuses."""

    def __init__(self, registry: str, auth: dict | None = None, timeout: float = 60.0):
        import requests

        self.host = registry.split("/", 1)[0]
        self.base = f"{_scheme(registry)}://{self.host}/v2"
        self.session = requests.Session()
        if auth:
            self.session.auth = (auth["username"], auth["password"])
        self.timeout = timeout

    def _get(self, path: str, **headers: str):
        try:
            r = self.session.get(self.base + path, headers=headers, timeout=self.timeout)
        except Exception as e:  # noqa: BLE001 - requests' connection errors
            raise InfraError(f"registry {self.host} does not answer: {e}") from e
        return r

    def repositories(self) -> list[str]:
        """Every repository (`_catalog`, paged)."""
        out: list[str] = []
        path = "/_catalog?n=1000"
        while path:
            r = self._get(path)
            if r.status_code != 200:
                raise InfraError(f"registry {self.host}: catalog answered HTTP {r.status_code}")
            out += r.json().get("repositories") or []
            link = r.headers.get("Link", "")
            path = link[link.index("</v2") + 4:link.index(">")] if link.startswith("</v2") else ""
        return out

    def tags(self, repo: str) -> list[str]:
        """Tags of `repo` ([] for a repository without tags or unknown)."""
        r = self._get(f"/{repo}/tags/list")
        if r.status_code == 404:
            return []
        if r.status_code != 200:
            raise InfraError(f"registry {self.host}: tags of {repo} answered HTTP {r.status_code}")
        return r.json().get("tags") or []

    def manifest(self, repo: str, reference: str) -> Manifest | None:
        """The manifest `repo:reference` (a tag or a digest), None when there is none."""
        r = self._get(f"/{repo}/manifests/{reference}", Accept=MANIFEST_TYPES)
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            raise InfraError(f"registry {self.host}: manifest {repo}:{reference} answered HTTP {r.status_code}")
        body = r.json()
        digest = r.headers.get("Docker-Content-Digest") or (reference if reference.startswith("sha256:") else "")
        return Manifest(repo=repo, digest=digest, config=(body.get("config") or {}).get("digest", ""),
                        layers=[(lay["digest"], int(lay.get("size") or 0)) for lay in body.get("layers") or []])

    def delete(self, repo: str, digest: str) -> bool:
        """Delete manifest `repo@digest` (every tag naming it goes too); False when it was not
        there. InfraError when the registry refuses (deletes not enabled: HTTP 405)."""
        try:
            r = self.session.delete(f"{self.base}/{repo}/manifests/{digest}", timeout=self.timeout)
        except Exception as e:  # noqa: BLE001
            raise InfraError(f"registry {self.host} does not answer: {e}") from e
        if r.status_code == 404:
            return False
        if r.status_code not in (200, 202):
            raise InfraError(f"registry {self.host}: deleting {repo}@{digest} answered HTTP {r.status_code}"
                             + (" (enable storage.delete in its config)" if r.status_code == 405 else ""))
        return True

    def manifests(self, repos: list[str] | None = None) -> list[tuple[str, Manifest]]:
        """(tag, manifest) of every tag of `repos` (default: every repository)."""
        out = []
        for repo in repos if repos is not None else self.repositories():
            for tag in self.tags(repo):
                m = self.manifest(repo, tag)
                if m is not None:
                    out.append((tag, m))
        return out

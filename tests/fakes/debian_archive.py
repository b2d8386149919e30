"""A stand-in for Debian's archive: Sources paragraphs (Debian Policy 5.5, the fields
`agents.ecosystems.cfamily.debsources` reads) and a `fetch` serving each suite's ``Sources.xz`` from
memory, for `DebianSources(..., fetch=archive)` without a network.

`paragraph(package, version, files, homepage)` writes one source package (`files`: (name,
sha256) pairs, each listed under ``Checksums-Sha256``); `FakeArchive({suite: [paragraph, ...]})`
answers ``<mirror>/dists/<suite>/main/source/Sources.xz`` (OSError for a suite it lacks, as a
mirror without it would) and records the URLs asked in `asked`.
"""

from __future__ import annotations

import lzma


def paragraph(package: str, version: str, files: list[tuple[str, str]], homepage: str = "",
              directory: str | None = None) -> str:
    """One Sources paragraph (the pool directory defaults to ``pool/main/<p>/<package>``)."""
    lines = [f"Package: {package}", f"Version: {version}",
             f"Directory: {directory or f'pool/main/{package[0]}/{package}'}"]
    if homepage:
        lines.append(f"Homepage: {homepage}")
    lines.append("Checksums-Sha256:")
    lines += [f" {sha} 1234 {name}" for name, sha in files]
    return "\n".join(lines)


def sources_xz(paragraphs: list[str]) -> bytes:
    """A ``Sources.xz`` holding `paragraphs`."""
    return lzma.compress("\n\n".join(paragraphs).encode())


class FakeArchive:
    """`fetch(url) -> bytes` over `suites` (suite -> paragraphs); see the module docstring."""

    def __init__(self, suites: dict[str, list[str]]):
        self.suites = suites
        self.asked: list[str] = []

    def __call__(self, url: str) -> bytes:
        self.asked.append(url)
        suite = url.split("/dists/", 1)[1].split("/", 1)[0]
        if suite not in self.suites:
            raise OSError(f"404 Not Found: {url}")
        return sources_xz(self.suites[suite])

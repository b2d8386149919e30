"""Debian's Sources indexes as `agents.ecosystems.cfamily.debsources` reads them (no network: a
`tests.fakes.debian_archive.FakeArchive`): upstream repository keys of URLs, upstream versions
of Debian versions, the upstream tarball of a paragraph (unsafe fields refused), the lookups by
package and by upstream repository (Homepage), and the on-disk cache."""

from __future__ import annotations

import pytest

from agents.ecosystems.cfamily.debsources import DebianSources, SourcesConfig, parse_sources, upstream_key, upstream_version
from tests.fakes.debian_archive import FakeArchive, paragraph

MIRROR = "http://deb.example/debian"
SHA = "a" * 64
HOME = "https://github.com/catchorg/Catch2"
CATCH2 = paragraph("catch2", "2.13.10-1", [("catch2_2.13.10.orig.tar.gz", SHA),
                                            ("catch2_2.13.10-1.debian.tar.xz", "d" * 64)], HOME)
SUITES = {
    "bookworm": [CATCH2, paragraph("catch", "1.12.1-1", [("catch_1.12.1.orig.tar.gz", "e" * 64)], HOME)],
    "trixie": [paragraph("catch2", "3.7.1-0.5", [("catch2_3.7.1.orig.tar.gz", "b" * 64)], HOME)],
    "sid": [paragraph("catch2", "3.7.1-0.6", [("catch2_3.7.1.orig.tar.gz", "b" * 64)], HOME)],
}


@pytest.fixture
def sources(tmp_path):
    """DebianSources over the suites above (forky is missing from this archive)."""
    return DebianSources(SourcesConfig(suites=["bookworm", "trixie", "forky", "sid"], cache_dir=str(tmp_path / "c")),
                         MIRROR, fetch=FakeArchive(SUITES))


def test_upstream_keys_and_versions():
    assert upstream_key("https://github.com/catchorg/Catch2.git") == "github.com/catchorg/catch2"
    assert upstream_key("git@github.com:fmtlib/fmt.git") == "github.com/fmtlib/fmt"
    assert upstream_key("https://github.com/google/googletest/archive/refs/tags/v1.14.0.zip") == \
        "github.com/google/googletest"
    assert upstream_key("https://codeload.github.com/a/b/tar.gz/v1") == "github.com/a/b"
    assert upstream_key("https://gitlab.com/libeigen/eigen/-/archive/3.4.0/eigen-3.4.0.tar.gz") == \
        "gitlab.com/libeigen/eigen"
    assert upstream_key("https://fmt.dev/") is None
    assert upstream_version("1:1.15.2+ds-2") == "1.15.2"
    assert upstream_version("3.12.0.really.3.11.3-3") == "3.11.3"
    assert upstream_version("2.4.9~ds-1") == "2.4.9" and upstream_version("20220623.1-1+deb12u2") == "20220623.1"


def test_parse_sources_keeps_the_upstream_tarball_and_refuses_unsafe_fields():
    text = "\n\n".join([
        CATCH2,
        paragraph("native", "1.0", [("native_1.0.tar.xz", "f" * 64), ("native_1.0.dsc", "f" * 64)]),
        paragraph("comp", "2.0-1", [("comp_2.0.orig-docs.tar.gz", "f" * 64)]),  # only a component tarball
        paragraph("evil", "1.0-1", [("evil_1.0.orig.tar.gz", "f" * 64)], directory="pool/main/e/$(reboot)"),
        paragraph("up", "1.0-1", [("up_1.0.orig.tar.gz", "f" * 64)], directory="pool/main/../../etc"),
    ])
    got = {r.package: r for r in parse_sources(text, "bookworm")}
    assert set(got) == {"catch2", "native"}
    assert got["catch2"].orig == "catch2_2.13.10.orig.tar.gz" and got["catch2"].sha256 == SHA
    assert got["catch2"].url(MIRROR) == f"{MIRROR}/pool/main/c/catch2/catch2_2.13.10.orig.tar.gz"
    assert got["native"].orig == "native_1.0.tar.xz"


def test_sources_lookup_by_upstream_and_cache(sources, tmp_path):
    assert sources.by_upstream("github.com/catchorg/catch2") == ["catch2", "catch"]  # both claim the homepage
    assert [(r.upstream, r.suite) for r in sources.records("catch2")] == \
        [("2.13.10", "bookworm"), ("3.7.1", "trixie"), ("3.7.1", "sid")]
    assert "forky" in sources.errors  # a suite that cannot be read is empty, not an error
    again = DebianSources(sources.config, MIRROR, fetch=lambda url: pytest.fail(f"fetched again: {url}"))
    assert [r.suite for r in again.records("catch2")] == ["bookworm", "trixie", "sid"]  # from the cache
    assert "failed less than" in again.errors["forky"]  # not asked again for an hour


def test_an_index_older_than_max_age_is_fetched_again(sources):
    assert sources.records("catch2")
    archive = FakeArchive(SUITES)
    stale = DebianSources(sources.config.model_copy(update={"max_age_days": 0, "retry_after": 0}), MIRROR,
                          fetch=archive)
    assert len(stale.records("catch2")) == 3
    assert [u.split("/dists/")[1].split("/")[0] for u in archive.asked] == ["bookworm", "trixie", "forky", "sid"]

"""FetchContent downloads from an unreachable host, provided from Debian's source packages
(no Docker, no network): the declarations read from CMake files, the failed fetches read from
real configure logs (tests/data/fetchcontent), upstream URL -> Debian source package (data, then
the Sources index's Homepage/Vcs), the version nearest the request, the repair's commands
(quoted), and the C/C++ ecosystem's use of them."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from agents.ecosystems import cfamily
from agents.ecosystems.cfamily import fetchcontent
from agents.ecosystems.base import PolyPlan
from agents.ecosystems.cfamily.debsources import DebianSources, SourcesConfig
from agents.ecosystems.cfamily.fetchcontent import Declaration, FetchContentConfig, choose, declarations, failed_fetches
from tests.agents.ecosystems.conftest import make_tree
from tests.fakes.debian_archive import FakeArchive, paragraph

DATA = Path(__file__).resolve().parents[2] / "data" / "fetchcontent"
MIRROR = "http://deb.example/debian"
SHA = {"2": "a" * 64, "3": "b" * 64, "bench": "c" * 64}
SUITES = {
    "bookworm": [paragraph("catch2", "2.13.10-1", [("catch2_2.13.10.orig.tar.gz", SHA["2"]),
                                                    ("catch2_2.13.10-1.debian.tar.xz", "d" * 64)],
                           "https://github.com/catchorg/Catch2"),
                 paragraph("catch", "1.12.1-1", [("catch_1.12.1.orig.tar.gz", "e" * 64)],
                           "https://github.com/catchorg/Catch2"),
                 paragraph("benchmark", "1.7.1-1", [("benchmark_1.7.1.orig.tar.gz", SHA["bench"])],
                           "https://github.com/google/benchmark")],
    "trixie": [paragraph("catch2", "3.7.1-0.5", [("catch2_3.7.1.orig.tar.gz", SHA["3"])],
                         "https://github.com/catchorg/Catch2")],
    "sid": [paragraph("catch2", "3.7.1-0.6", [("catch2_3.7.1.orig.tar.gz", SHA["3"])],
                      "https://github.com/catchorg/Catch2")],
}


@pytest.fixture
def sources(tmp_path):
    """DebianSources over the suites above (served from memory; forky is missing)."""
    return DebianSources(SourcesConfig(suites=["bookworm", "trixie", "forky", "sid"], cache_dir=str(tmp_path / "c")),
                         MIRROR, fetch=FakeArchive(SUITES))


SPDLOG_TESTS = """find_package(Catch2 3 QUIET)
if(NOT Catch2_FOUND)
    include(FetchContent)
    FetchContent_Declare(Catch2
            GIT_REPOSITORY https://github.com/catchorg/Catch2.git
            GIT_TAG 53d0d913a422d356b23dd927547febdf69ee9081 # v3.5.0
    )
    FetchContent_MakeAvailable(Catch2)
endif()
"""
BENCH = """set(BENCH_TAG v1.6.0)
FetchContent_Declare(googlebenchmark GIT_REPOSITORY https://github.com/google/benchmark.git GIT_TAG ${BENCH_TAG})
FetchContent_Declare("gtest" URL "https://github.com/google/googletest/archive/refs/tags/release-1.12.1.tar.gz")
FetchContent_Declare(json GIT_REPOSITORY https://github.com/nlohmann/json GIT_TAG v3.x)  # newest 3
FetchContent_Declare(${PROJECT_NAME}_dep GIT_REPOSITORY https://github.com/a/b.git)
"""


def test_declarations_read_name_url_tag_and_the_version_asked():
    got = {d.name: d for d in declarations({"tests/CMakeLists.txt": SPDLOG_TESTS, "bench/CMakeLists.txt": BENCH})}
    assert set(got) == {"Catch2", "googlebenchmark", "gtest", "json"}  # ${PROJECT_NAME}_dep is no plain name
    assert got["Catch2"].url == "https://github.com/catchorg/Catch2.git"
    assert got["Catch2"].tag.startswith("53d0d913") and got["Catch2"].hint == "v3.5.0"  # the hash's comment
    assert got["googlebenchmark"].tag == "v1.6.0" and got["googlebenchmark"].hint == "v1.6.0"  # ${BENCH_TAG}
    assert got["gtest"].hint == "release-1.12.1.tar.gz" and got["gtest"].file == "bench/CMakeLists.txt"
    assert got["json"].hint == "v3.x"


def test_requested_versions():
    assert fetchcontent.requested("v3.5.0") == ((3, 5, 0), False)
    assert fetchcontent.requested("release-1.12.1.tar.gz") == ((1, 12, 1), False)
    assert fetchcontent.requested("v3.x") == ((3,), True)
    assert fetchcontent.requested("catch2-3.4.0.zip") == ((3, 4, 0), False)  # not the 2 of catch2
    assert fetchcontent.requested("main") is None and fetchcontent.requested(None) is None


@pytest.mark.parametrize("log, url, name", [
    ("cmake325_git.log", "https://github.com/catchorg/Catch2.git", "catch2"),
    ("cmake331_git.log", "https://github.com/catchorg/Catch2.git", "catch2"),
    ("cmake325_url.log", "https://github.com/google/googletest/archive/refs/tags/v1.14.0.zip", "googletest"),
])
def test_failed_fetches_in_real_configure_logs(log, url, name):
    got = failed_fetches((DATA / log).read_text())
    assert [(f.url, f.name) for f in got] == [(url, name)]
    assert failed_fetches("CMake Error: Could NOT find ZLIB") == []


def test_choose_the_nearest_version(sources):
    recs = sources.records("catch2")
    rec, why = choose(recs, "v3.5.0")
    assert (rec.upstream, rec.suite) == ("3.7.1", "trixie") and "not older" in why  # the earliest suite
    assert choose(recs, "v2.13.4")[0].upstream == "2.13.10"
    assert choose(recs, "v3.x")[0].upstream == "3.7.1"
    assert choose(recs, "v3.9.0")[0].upstream == "3.7.1"  # none as new: the newest of the major
    assert choose(recs, None)[0].upstream == "3.7.1"
    rec, why = choose(recs, "v4.0.0")
    assert rec is None and "major version 4" in why  # another major is another API
    assert choose([], "v1")[0] is None


def test_repair_provides_every_dependency_of_the_failed_host(sources, monkeypatch):
    decls = declarations({"tests/CMakeLists.txt": SPDLOG_TESTS, "bench/CMakeLists.txt": BENCH})
    state = {"declarations": [d.model_dump() for d in decls]}
    cmd = "mkdir -p /opt/build && cmake -S /testbed -B /opt/build -DBUILD_TESTING=ON"
    out = (DATA / "cmake325_git.log").read_text()
    commands, notes = fetchcontent.repair_commands(state, cmd, out, sources, FetchContentConfig())
    catch2, bench, configure = commands  # gtest and json: Debian here has no such packages
    assert "catch2 3.7.1-0.5 (trixie" in catch2 and "3.5.0 asked" in catch2
    words = shlex.split(catch2)
    assert words[:2] == ["echo", "swemint: " + notes[0]]
    i = words.index("/usr/lib/apt/apt-helper")
    assert words[i + 1:i + 5] == ["download-file", f"{MIRROR}/pool/main/c/catch2/catch2_3.7.1.orig.tar.gz",
                                  "catch2_3.7.1.orig.tar.gz", "SHA256:" + SHA["3"]]
    assert "/opt/swemint/fetchcontent/googlebenchmark" in bench and "1.7.1" in bench
    assert configure == ("mkdir -p /opt/build && cmake -DFETCHCONTENT_SOURCE_DIR_CATCH2=/opt/swemint/fetchcontent/"
                         "catch2 -DFETCHCONTENT_SOURCE_DIR_GOOGLEBENCHMARK=/opt/swemint/fetchcontent/googlebenchmark "
                         "-S /testbed -B /opt/build -DBUILD_TESTING=ON")
    assert any(n.startswith("FetchContent gtest") and "Debian source googletest: Debian has no such" in n
               for n in notes)
    tried = {"\n".join(commands) + "{}"}  # Execution's key of the applied repair
    assert fetchcontent.provided_in(tried) == {"CATCH2": "/opt/swemint/fetchcontent/catch2",
                                               "GOOGLEBENCHMARK": "/opt/swemint/fetchcontent/googlebenchmark"}
    # provided already in this build: the same failure again has no new repair (a new build has)
    assert fetchcontent.repair_commands(state, cmd, out, sources, FetchContentConfig(), tried) is None
    assert fetchcontent.repair_commands(state, cmd, out, sources, FetchContentConfig(), set()) is not None
    # a later failure in the same build: the new configure names the earlier sources too
    later = out.replace("catchorg/Catch2.git", "acme/other.git").replace("catch2", "other")
    monkeypatch.setattr(fetchcontent, "upstreams", lambda: {"github.com/acme/other": "catch2"})
    again, _ = fetchcontent.repair_commands(state, cmd, later, sources, FetchContentConfig(), tried)
    assert "-DFETCHCONTENT_SOURCE_DIR_CATCH2=" in again[-1] and "-DFETCHCONTENT_SOURCE_DIR_OTHER=" in again[-1]


def test_repair_without_declarations_uses_the_name_of_the_log_and_quotes_everything(sources, monkeypatch):
    out = (DATA / "cmake331_git.log").read_text().replace(
        "https://github.com/catchorg/Catch2.git", "https://github.com/catchorg/Catch2$(touch${IFS}x).git")
    monkeypatch.setattr(fetchcontent, "upstreams", lambda: {"github.com/catchorg/catch2$(touch${ifs}x)": "catch2"})
    commands, _ = fetchcontent.repair_commands({}, "cmake -S . -B b", out, sources, FetchContentConfig(root="/o d"))
    assert "'swemint: FetchContent catch2 (https://github.com/catchorg/Catch2$(touch${IFS}x).git)" in commands[0]
    assert shlex.split(commands[-1]) == ["cmake", "-DFETCHCONTENT_SOURCE_DIR_CATCH2=/o d/catch2", "-S", ".", "-B", "b"]
    assert "3.7.1-0.5" in commands[0] and "no version asked" in commands[0]


def test_configure_with_inserts_after_the_configuring_cmake():
    assert fetchcontent.configure_with("cmake --build b && cmake -S . -B b", ["-DX=1"]) == \
        "cmake --build b && cmake -DX=1 -S . -B b"
    assert fetchcontent.configure_with("make -k", ["-DX=1"]) is None


# --- the C/C++ ecosystem ------------------------------------------------------------------------

def test_cfamily_plan_records_declarations_and_repairs_first(tmp_path, image_store, monkeypatch, sources):
    from envpool.images import ImageConfig
    from tests.agents.ecosystems.conftest import make_instance

    tree = make_tree(tmp_path, {"CMakeLists.txt": "project(s CXX)\nenable_testing()\nadd_subdirectory(tests)\n",
                                "tests/CMakeLists.txt": SPDLOG_TESTS})
    plan = cfamily.ECOSYSTEM.plan(tree, make_instance(tree, "cpp"), ["tests/t.cpp"], ImageConfig())
    state = plan.state["fetchcontent"]
    assert state["mirror"] == ImageConfig().debian_mirror
    assert [Declaration(**d).name for d in state["declarations"]] == ["Catch2"]
    assert any("FetchContent downloads: Catch2 (https://github.com/catchorg/Catch2.git)" in n for n in plan.notes)
    configure = next(c for c in plan.setup_commands if "cmake -S /testbed" in c)
    # the configure output also says "Could NOT find" (a status line): the fetch is repaired first
    out = "-- Could NOT find ZLIB\n" + (DATA / "cmake325_git.log").read_text()
    fix = cfamily.fetch_repair(plan, configure, out, sources=sources)
    assert len(fix) == 2 and "-DFETCHCONTENT_SOURCE_DIR_CATCH2=/opt/swemint/fetchcontent/catch2" in fix[1]
    assert cfamily.fetch_repair(PolyPlan(ecosystem="cfamily", toolchain="t", image="i", parser="ctest_log"),
                                configure, "no fetch failed", sources=sources) is None
    monkeypatch.setattr(cfamily, "fetch_repair", lambda p, c, o, tried: fix)
    assert cfamily.ECOSYSTEM.repair(plan, configure, out, set()) == fix
    assert cfamily.ECOSYSTEM.repair(plan, configure, out, {"\n".join(fix) + "{}"}) != fix  # tried: the next rule

"""Debian's file index as the answer to a missing command, header or library (agents.debindex):
queries from data, answers captured from `apt-file search` in Debian bookworm, the ranking, the
trajectory steps, the cache, and what a test driver says it needs (agents.ecosystems.drivers).
The Docker-backed cases (a real apt-file) are in test_loop_docker.py (tclsh, dc) and
ecosystems/test_drivers_docker.py (a driver's tclsh before round 1)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from agents.mint_config import MintConfig
from agents.context import MintRun, Trajectory
from agents.debindex import DebianIndex, Need, parse_answer, pick, query_for, search_command
from agents.diagnosis import needs_in
from agents.ecosystems.drivers import apt_packages, driver_requirements, find_drivers
from agents.gitrepo import GitTree
from agents.models import Instance, InstanceResult
from envpool.errors import InfraError
from envpool.fake import FakeSandboxFactory
from tests.envpool.test_mirror_retry import MIRROR_SYNC

# captured from `apt-file search --regexp <query>` in swemint/cfamily:gcc12 (Debian bookworm)
ANSWERS = {
    ("command", "tclsh"): "tcl: /usr/bin/tclsh\n",
    ("command", "python"): "python-is-python3: /usr/bin/python\n",
    ("header", "zlib.h"): ("libbotan-2-dev: /usr/include/botan-2/botan/zlib.h\nlibcrypto++-dev: /usr/include/crypto++/"
                           "zlib.h\nlibpoco-dev: /usr/include/Poco/zlib.h\nlibtbox-dev: /usr/include/tbox/zip/zlib.h\n"
                           "zlib1g-dev: /usr/include/zlib.h\n"),
    ("header", "openssl/ssl.h"): ("android-libboringssl-dev: /usr/include/android/openssl/ssl.h\n"
                                  "libssl-dev: /usr/include/openssl/ssl.h\n"
                                  "libwolfssl-dev: /usr/include/cyassl/openssl/ssl.h\n"
                                  "libwolfssl-dev: /usr/include/wolfssl/openssl/ssl.h\n"),
    ("library", "libonig.so.5"): "libonig5: /usr/lib/x86_64-linux-gnu/libonig.so.5\n",
    ("link", "onig"): "libonig-dev: /usr/lib/x86_64-linux-gnu/libonig.so\n",
    ("pkgconfig", "libxml-2.0"): "libxml2-dev: /usr/lib/x86_64-linux-gnu/pkgconfig/libxml-2.0.pc\n",
}
CHOSEN = {("command", "tclsh"): "tcl", ("command", "python"): "python-is-python3", ("header", "zlib.h"): "zlib1g-dev",
          ("header", "openssl/ssl.h"): "libssl-dev", ("library", "libonig.so.5"): "libonig5",
          ("link", "onig"): "libonig-dev", ("pkgconfig", "libxml-2.0"): "libxml2-dev"}
POLICY = """tcl8.6:
  Installed: (none)
  Candidate: 8.6.13+dfsg-2
  Version table:
     8.6.13+dfsg-2 500
        500 http://deb.debian.org/debian bookworm/main amd64 Packages
tclx:
  Installed: (none)
  Candidate: (none)
  Version table:
"""


@pytest.mark.parametrize("key", sorted(ANSWERS))
def test_captured_answers_choose_the_package_that_provides_the_file(key):
    need = Need(kind=key[0], name=key[1])
    assert pick(need, parse_answer(ANSWERS[key]))[0] == CHOSEN[key]


def test_queries_come_from_data_and_names_are_escaped_and_validated():
    assert query_for(Need(kind="command", name="tclsh")) == "^/(usr/)?s?bin/tclsh$"
    assert query_for(Need(kind="link", name="stdc++")) == r"^/(usr/)?lib/([\w.+-]+-linux-gnu/)?libstdc\+\+\.(so|a)$"
    assert search_command("^/a b$") == "apt-file search --regexp '^/a b$'"
    for bad in ("x;rm -rf /", "$(id)", "../etc/passwd", "/usr/bin/x", "a b", "`x`"):
        with pytest.raises(ValueError):
            Need(kind="command", name=bad)
    # a name from the output that is not a plain token gives no need at all
    assert needs_in("sh: 1: $(id): not found") == []


def test_a_penalised_package_loses_to_the_plain_one():
    pairs = parse_answer("tcl8.6-dbg: /usr/bin/tclsh\ntcl: /usr/bin/tclsh\nnot an answer line\n")
    assert pick(Need(kind="command", name="tclsh"), pairs) == ["tcl", "tcl8.6-dbg"]


def _run(tmp_path, factory, **repair) -> MintRun:
    cfg = MintConfig(workdir=tmp_path / "w", run_id="t", repair={"mirror_backoff": 0, **repair})
    inst = Instance(instance_id="o__r-1", repo="o/r", base_commit="0" * 40, patch="p", test_patch="t")
    idir = tmp_path / "w" / "instances" / "o__r-1"
    idir.mkdir(parents=True)
    return MintRun(instance=inst, tree=None, config=cfg, factory=factory,
                   res=InstanceResult(instance_id="o__r-1", repo="o/r", outcome="infra_error"), idir=idir,
                   log_path=idir / "run.log", traj=Trajectory(idir / "trajectory.jsonl"), deadline=1e18)


def test_resolve_records_each_query_and_answer_and_caches_them(tmp_path):
    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-file search --regexp .*tclsh", (0, ANSWERS[("command", "tclsh")]))
    f.on(r"apt-file search --regexp .*zlib", (0, ANSWERS[("header", "zlib.h")]))
    f.on(r"apt-file search --regexp .*nosuch", (1, ""))
    run = _run(tmp_path, f)
    index = DebianIndex(run, "swemint/cfamily:gcc12")
    needs = [Need(kind="command", name="tclsh"), Need(kind="header", name="zlib.h"),
             Need(kind="command", name="nosuchtool")]
    pkgs, answers = index.resolve(needs)
    assert pkgs == ["tcl", "zlib1g-dev"] and [a.chosen for a in answers] == ["tcl", "zlib1g-dev", None]
    steps = [s for s in run.traj.steps if s.rule == "debian-index"]
    assert [s.command for s in steps] == [search_command(query_for(n)) for n in needs]
    assert "zlib1g-dev: /usr/include/zlib.h" in steps[1].output_excerpt
    assert steps[1].note.startswith("index: header zlib.h -> zlib1g-dev (of zlib1g-dev, ")
    assert steps[2].note == "index: command nosuchtool -> no Debian package"
    # the index image was made once, on the build network, from the plan's base image
    made = [s for s in run.traj.steps if s.rule == "debian-index:image"]
    assert len(made) == 1 and "apt-file update" in made[0].command
    # asked again (another instance of the same run): answered from the cache, still recorded
    started = len(f.sandboxes)
    pkgs2, answers2 = DebianIndex(run, "swemint/cfamily:gcc12").resolve(needs[:2])
    assert pkgs2 == pkgs and all(a.cached for a in answers2)
    assert run.traj.steps[-1].note.endswith("[cached]") and len(f.sandboxes) == started
    assert not f.open_sandboxes


def test_commands_the_build_sandbox_has_are_not_asked(tmp_path):
    f = FakeSandboxFactory(run_id="t")
    f.on(r"command -v tclsh ", (0, ""))
    f.on(r"command -v xxd ", (1, ""))
    f.on(r"apt-file search --regexp .*xxd", (0, "xxd: /usr/bin/xxd\n"))
    run = _run(tmp_path, f)
    with f.sandbox(run.spec("img", "bridge")) as sb:
        pkgs, answers = DebianIndex(run, "img").resolve([Need(kind="command", name="tclsh"),
                                                         Need(kind="command", name="xxd")], sb)
    assert pkgs == ["xxd"] and [a.need.name for a in answers] == ["xxd"]


def test_available_keeps_the_ci_packages_this_suite_has(tmp_path):
    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-cache policy", (0, POLICY))
    run = _run(tmp_path, f)
    assert DebianIndex(run, "img").available(["tcl8.6", "tclx", "bad name;"]) == ["tcl8.6"]
    step = run.traj.steps[-1]
    assert step.rule == "debian-index:policy" and step.command == "apt-cache policy tcl8.6 tclx"



def test_available_asks_each_name_once_per_index(tmp_path):
    """A second call for names already answered runs no sandbox; only new names are asked."""
    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-cache policy", (0, POLICY))
    run = _run(tmp_path, f)
    index = DebianIndex(run, "img")
    assert index.available(["tcl8.6", "tclx"]) == ["tcl8.6"]
    before = len(f.sandboxes)
    assert index.available(["tclx", "tcl8.6"]) == ["tcl8.6"] and len(f.sandboxes) == before
    assert index.available(["tcl8.6", "valgrind"]) == ["tcl8.6"] and len(f.sandboxes) == before + 1
    policy = [c.command for sb in f.sandboxes for c in sb.calls if "apt-cache policy" in c.command]
    assert policy[-1].endswith("apt-cache policy valgrind")

# -- what a test driver needs, read at analysis time ---------------------------------------------

RUNTEST = """#!/bin/sh
TCLSH=""
for V in 8.5 8.6; do T=`which tclsh$V 2>/dev/null` && TCLSH=$T; done
if ! command -v xxd >/dev/null; then echo "xxd missing"; fi
if [ -z "$TCLSH" ]; then echo "You need tcl 8.5 or newer in order to run the test"; exit 1; fi
$TCLSH tests/test_helper.tcl "$@"
"""
WORKFLOW = """on: push
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - run: make
      - run: sudo apt-get install -y tcl8.6 tclx
      - run: ./runtest --verbose
  valgrind:
    runs-on: ubuntu-latest
    steps:
      - run: sudo apt-get update && sudo apt-get install tcl8.6 tclx valgrind -y
      - run: ./runtest --valgrind
  build32:
    runs-on: ubuntu-latest
    steps:
      - run: sudo apt-get install libc6-dev-i386 && make 32bit
"""


def _tree(tmp_path, files: dict[str, str]) -> GitTree:
    repo = tmp_path / "src"
    repo.mkdir()
    for path, text in files.items():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], cwd=repo, check=True)
    sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True).stdout.strip()
    return GitTree(repo / ".git", sha)


def test_a_driver_says_what_it_needs_and_ci_says_what_every_job_running_it_installs(tmp_path):
    tree = _tree(tmp_path, {"runtest": RUNTEST, "tests/test_helper.tcl": "", "Makefile": "all:\n\ttrue\n",
                            ".github/workflows/ci.yml": WORKFLOW})
    driver = next(d for d in find_drivers(tree, "cfamily") if d.path == "runtest")
    needs, packages = driver_requirements(tree, driver)
    # the message names tclsh; `command -v xxd` is a literal probe; `which tclsh$V` is not literal
    assert [n.label for n in needs] == ["command tclsh", "command xxd"]
    # what every job running ./runtest installs (valgrind: one job only; build32 runs no runtest)
    assert packages == ["tcl8.6", "tclx"]


def test_apt_lines_give_debian_names_only():
    text = "apt-get install -y --no-install-recommends a=1.2 b \\\n  c; apt install d$(x) e && apt-get update"
    assert apt_packages(text) == ["a", "b", "c", "e"]
    assert apt_packages("sudo apt-get install -qq 'x;y'") == []


def test_a_python_driver_probes_with_shutil_which_only(tmp_path):
    text = "#!/usr/bin/env python3\n# which may be slow\nimport shutil\nif not shutil.which('qemu-arm'): pass\n"
    tree = _tree(tmp_path, {"tests/run-tests.py": text, "Makefile": "test:\n\tcd tests && ./run-tests.py\n",
                            "a.c": "", "b.c": "", "c.c": ""})
    driver = next(d for d in find_drivers(tree, "cfamily"))
    assert [n.label for n in driver_requirements(tree, driver)[0]] == ["command qemu-arm"]


def test_the_index_answers_are_written_under_the_workdir_cache(tmp_path):
    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-file search", (0, "tcl: /usr/bin/tclsh\n"))
    run = _run(tmp_path, f)
    index = DebianIndex(run, "img")
    index.resolve([Need(kind="command", name="tclsh")])
    assert index.cache_path.parent == Path(run.config.workdir) / "cache" / "debian-index"
    assert "tcl: /usr/bin/tclsh" in index.cache_path.read_text()


def test_available_answers_even_when_the_file_index_cannot_be_made(tmp_path):
    """A mirror whose Contents file does not match its Release (apt-file update fails: "File has
    unexpected size ... Mirror sync in progress?") still has package lists: the policy query runs
    after apt-get update alone and answers."""
    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-file update", (100, "E: Failed to fetch .../Contents-amd64.gz  File has unexpected size"))
    f.on(r"apt-cache policy", (0, POLICY))
    run = _run(tmp_path, f)
    assert DebianIndex(run, "img").available(["tcl8.6", "tclx"]) == ["tcl8.6"]
    policy = [c.command for sb in f.sandboxes for c in sb.calls if "apt-cache policy" in c.command]
    assert policy and "apt-file" not in policy[-1]


GUESS_POLICY = """libwidget-dev:
  Installed: (none)
  Candidate: 1.2-1
  Version table:
widget-dev:
  Installed: (none)
  Candidate: (none)
  Version table:
"""


def test_a_library_need_the_file_index_cannot_answer_gets_the_dev_package_named_like_it(tmp_path):
    """The class: a mirror whose Contents is out of sync (apt-file cannot answer) while a
    project names a missing library ("Cannot find required library Widget", a CMake package, a
    pkg-config module): Debian's -dev package named after the library, when the suite has it;
    a command gets no guess."""
    from agents.debindex import library_guesses

    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-file update", (100, "E: Failed to fetch .../Contents-amd64.gz  File has unexpected size"))
    f.on(r"apt-cache policy", (0, GUESS_POLICY))
    run = _run(tmp_path, f)
    pkgs, answers = DebianIndex(run, "img").resolve([Need(kind="cmake", name="Widget"),
                                                     Need(kind="command", name="widgetc")])
    assert pkgs == ["libwidget-dev"] and [a.chosen for a in answers] == ["libwidget-dev", None]
    policy = [c.command for sb in f.sandboxes for c in sb.calls if "apt-cache policy" in c.command]
    assert policy and "libwidget-dev widget-dev" in policy[-1]
    assert library_guesses(Need(kind="pkgconfig", name="libfoo-1.0")) == ["libfoo-dev", "foo-dev"]
    assert library_guesses(Need(kind="header", name="foo.h")) == []


# -- an index the mirror kept from being built is no answer ---------------------------------------

UCOL = Need(kind="header", name="unicode/ucol.h")


def _index(tmp_path, rules, **run_kw):
    """A DebianIndex of a run whose fake sandboxes answer `rules` ((pattern, reply) pairs), its
    backoff sleeps recorded instead of slept: (factory, run, index, slept seconds)."""
    f = FakeSandboxFactory(run_id="t")
    for pattern, reply in rules:
        f.on(pattern, reply)
    run = _run(tmp_path, f, **run_kw)
    index = DebianIndex(run, "swemint/cfamily:gcc14")
    slept: list[float] = []
    index.sleep = slept.append
    return f, run, index, slept


def test_an_index_build_the_mirror_sync_fails_is_retried_with_backoff_and_then_answers(tmp_path):
    """timescaledb-10401: trixie's mirror mid-sync failed `apt-file update` (exit 100); the build
    is tried again after the backoff and, the mirror in sync again, answers (and is cached)."""
    builds = []
    _, run, index, slept = _index(tmp_path, [
        (r"apt-file update", lambda cmd, sb: builds.append(cmd) or ((100, MIRROR_SYNC) if len(builds) == 1 else (0, ""))),
        (r"apt-file search --regexp .*ucol", (0, "libicu-dev: /usr/include/unicode/ucol.h\n"))], mirror_backoff=7)
    pkgs, [answer] = index.resolve([UCOL])
    assert pkgs == ["libicu-dev"] and answer.unavailable is None and len(builds) == 2 and slept == [7]
    made = [s for s in run.traj.steps if s.rule == "debian-index:image"]
    assert [s.exit_code for s in made] == [100, 0] and "attempt 1 of 3" in made[0].note
    assert run.traj.steps[-1].note == "index: header unicode/ucol.h -> libicu-dev"
    assert "libicu-dev: /usr/include/unicode/ucol.h" in index.cache_path.read_text()


def test_an_index_the_mirror_keeps_from_being_built_is_unavailable_never_no_package_and_never_cached(tmp_path):
    from agents.debindex import IndexUnavailable, unanswered

    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-file update", (100, MIRROR_SYNC))
    f.on(r"apt-cache policy", (0, ""))
    run = _run(tmp_path, f, mirror_attempts=3)
    index = DebianIndex(run, "swemint/cfamily:gcc14")
    pkgs, [answer] = index.resolve([UCOL])
    assert pkgs == [] and answer.chosen is None and "Mirror sync in progress?" in (answer.unavailable or "")
    step = run.traj.steps[-1]
    assert step.rule == "debian-index" and step.exit_code not in (0, 1)
    assert step.note.startswith("index: header unicode/ucol.h -> index unavailable (infrastructure): E: Failed to "
                                "fetch http://deb.debian.org/debian/dists/trixie/main/Contents-amd64.gz")
    assert "no Debian package" not in step.note
    assert len([s for s in run.traj.steps if s.rule == "debian-index:image"]) == 3
    assert not index.cache_path.exists()
    # the file search never ran without the index (no apt-file set up in a throwaway sandbox)
    assert not [c for sb in f.sandboxes for c in sb.calls if "apt-file search" in c.command]
    with pytest.raises(IndexUnavailable) as e:
        unanswered([answer], instance_id="o__r-1")
    assert isinstance(e.value, InfraError) and "header unicode/ucol.h" in e.value.message
    assert "Mirror sync in progress?" in e.value.message
    # asked again in this run: still unavailable, without building the image again
    _, [again] = index.resolve([UCOL])
    assert again.unavailable and len([s for s in run.traj.steps if s.rule == "debian-index:image"]) == 3
    assert not index.cache_path.exists()
    # a later run (the mirror in sync again) builds it and answers: no failure was remembered
    f2 = FakeSandboxFactory(run_id="t")
    f2.on(r"apt-file search --regexp .*ucol", (0, "libicu-dev: /usr/include/unicode/ucol.h\n"))
    assert DebianIndex(_run(tmp_path / "2", f2), "swemint/cfamily:gcc14").resolve([UCOL])[0] == ["libicu-dev"]


def test_an_index_build_that_fails_for_another_reason_than_the_mirror_is_attempted_once(tmp_path):
    _, run, index, slept = _index(tmp_path, [(r"apt-file update", (1, "sh: 1: apt-file: not found\n")),
                                             (r"apt-cache policy", (0, ""))], mirror_attempts=3)
    pkgs, [answer] = index.resolve([UCOL])
    assert pkgs == [] and "index build failed (exit 1)" in (answer.unavailable or "")
    assert len([s for s in run.traj.steps if s.rule == "debian-index:image"]) == 1 and slept == []

def test_a_search_that_fails_in_the_index_image_is_no_answer_and_is_not_cached(tmp_path):
    f = FakeSandboxFactory(run_id="t")
    f.on(r"apt-file search --regexp .*ucol", (255, "E: The cache is empty. You need to run 'apt-file update' first."))
    f.on(r"apt-file search --regexp .*tclsh", (0, "tcl: /usr/bin/tclsh\n"))
    run = _run(tmp_path, f)
    index = DebianIndex(run, "img")
    pkgs, answers = index.resolve([UCOL, Need(kind="command", name="tclsh")])
    assert pkgs == ["tcl"] and "exit 255" in (answers[0].unavailable or "") and answers[1].unavailable is None
    cached = index.cache_path.read_text()
    assert "tclsh" in cached and "ucol" not in cached


# -- a neighbouring suite's index, when the own suite's cannot be built ---------------------------

SUITES = "trixie http://deb.debian.org/debian\ntrixie-updates http://deb.debian.org/debian\n"
ICU_POLICY = """libicu-dev:
  Installed: (none)
  Candidate: 76.1-4
  Version table:
     76.1-4 500
        500 http://deb.debian.org/debian trixie/main amd64 Packages
libmozjs-140-dev:
  Installed: (none)
  Candidate: (none)
  Version table:
"""


def _trixie_mid_sync(tmp_path, answers: dict[str, str], policy: str = ICU_POLICY, neighbours_build=("sid", "bookworm"),
                     **repair):
    """A fake engine whose trixie image's own index fails with the mirror-sync error every time;
    the neighbour suites in `neighbours_build` build, and their index answers `answers[suite]`."""
    from agents.debindex import index_for

    f = FakeSandboxFactory(run_id="t")
    run = _run(tmp_path, f, **repair)
    f.on(r"apt-get indextargets", (0, SUITES))
    f.on(r"apt-file -c \S+ update", lambda cmd, sb: (0, "") if any(
        f"deb http://deb.debian.org/debian {s} main" in cmd for s in neighbours_build) else (100, MIRROR_SYNC))
    f.on(r"apt-file update", (100, MIRROR_SYNC))

    def search(cmd, sb):
        for suite, text in answers.items():
            if sb.spec.image == index_for(run, "swemint/cfamily:gcc14", (suite, "http://deb.debian.org/debian")).ref:
                return (0, text) if text else (1, "")
        raise AssertionError(f"a search outside a neighbour's index image: {sb.spec.image}")

    f.on(r"apt-file -c /etc/apt/swemint-neighbour.conf search --regexp ", search)
    f.on(r"apt-cache policy", (0, policy))
    return f, run


ICU_SID = "libicu-dev: /usr/include/unicode/ucol.h\nlibmozjs-140-dev: /usr/include/x86_64-linux-gnu/mozjs-140/unicode/ucol.h\n"


def test_an_own_index_the_mirror_keeps_from_being_built_is_answered_by_a_neighbouring_suite_confirmed_in_its_own(
        tmp_path):
    """trixie's Contents out of sync with its InRelease (apt-file update fails every attempt):
    sid's index, made from the same image with apt-file's own sources list, says libicu-dev
    ships unicode/ucol.h; trixie has libicu-dev (apt-cache policy on trixie), so it is the answer,
    noted as sid's and confirmed; libmozjs-140-dev, which trixie lacks, is not among them."""
    from agents.debindex import index_for, unanswered

    f, run = _trixie_mid_sync(tmp_path, {"sid": ICU_SID})
    index = index_for(run, "swemint/cfamily:gcc14")
    pkgs, [answer] = index.resolve([UCOL])
    assert pkgs == ["libicu-dev"] and answer.chosen == "libicu-dev" and answer.packages == ["libicu-dev"]
    assert answer.unavailable is None and answer.suite == "sid"
    unanswered([answer])  # an answer: nothing to raise
    step = run.traj.steps[-1]
    assert step.rule == "debian-index" and step.exit_code == 0
    assert step.command == "apt-file -c /etc/apt/swemint-neighbour.conf search --regexp " \
                           "'^/usr/include/(.+/)?unicode/ucol\\.h$'"
    assert step.note.startswith("index: header unicode/ucol.h -> libicu-dev from sid's index, confirmed in trixie "
                                "(apt-cache policy); trixie's own index unavailable (infrastructure): E: Failed to fetch")
    assert "libicu-dev: /usr/include/unicode/ucol.h" in step.output_excerpt
    # the own index was tried as before (3 attempts), then sid's once, built from the same image with a
    # sources list naming only sid, for apt-file alone (quoted)
    made = [s for s in run.traj.steps if s.rule == "debian-index:image"]
    assert [s.exit_code for s in made] == [100, 100, 100, 0]
    assert "from sid's Contents" in made[-1].note and "apt-file -c /etc/apt/swemint-neighbour.conf update" in \
        made[-1].command and "'deb http://deb.debian.org/debian sid main' > /etc/apt/swemint-neighbour.list" in \
        made[-1].command
    policy = [c.command for sb in f.sandboxes for c in sb.calls if "apt-cache policy" in c.command]
    assert policy == ["export DEBIAN_FRONTEND=noninteractive; apt-get update -qq >/dev/null 2>&1; "
                      "apt-cache policy libicu-dev libmozjs-140-dev"]
    assert [sb.spec.image for sb in f.sandboxes if any("apt-cache policy" in c.command for c in sb.calls)] == \
        ["swemint/cfamily:gcc14"]  # the own suite's package lists
    # cached as sid's answer (its own file), never as trixie's; a later run asks trixie's index first,
    # then takes sid's cached answer, confirmed again
    assert not index.cache_path.exists()
    sid = index_for(run, "swemint/cfamily:gcc14", ("sid", "http://deb.debian.org/debian"))
    assert sid.cache_path != index.cache_path and "libicu-dev: /usr/include/unicode/ucol.h" in sid.cache_path.read_text()
    f2, run2 = _trixie_mid_sync(tmp_path / "2", {})
    run2.config.workdir = run.config.workdir
    pkgs2, [again] = index_for(run2, "swemint/cfamily:gcc14").resolve([UCOL])
    assert pkgs2 == ["libicu-dev"] and again.cached and again.suite == "sid"
    assert run2.traj.steps[-1].note.endswith("[cached]")
    assert not [c for sb in f2.sandboxes for c in sb.calls if "apt-file -c" in c.command]


def test_a_neighbour_s_package_the_own_suite_lacks_is_not_taken(tmp_path):
    """sid names a package trixie does not have: not taken, the next neighbour (bookworm) is
    asked and its libicu-dev, which trixie has, is; when no neighbour names one trixie has, the
    need stays unavailable (infra_error), never a package of another suite."""
    from agents.debindex import IndexUnavailable, index_for, unanswered

    only_sid = "libicu-sid-dev: /usr/include/unicode/ucol.h\n"
    f, run = _trixie_mid_sync(tmp_path, {"sid": only_sid, "bookworm": "libicu-dev: /usr/include/unicode/ucol.h\n"})
    pkgs, [answer] = index_for(run, "swemint/cfamily:gcc14").resolve([UCOL])
    assert pkgs == ["libicu-dev"] and answer.suite == "bookworm"
    assert "libicu-dev from bookworm's index, confirmed in trixie" in run.traj.steps[-1].note

    f, run = _trixie_mid_sync(tmp_path / "2", {"sid": only_sid, "bookworm": ""})
    pkgs, [answer] = index_for(run, "swemint/cfamily:gcc14").resolve([UCOL])
    assert pkgs == [] and answer.chosen is None and answer.suite is None
    assert "Mirror sync in progress?" in (answer.unavailable or "")
    note = run.traj.steps[-1].note
    assert note.startswith("index: header unicode/ucol.h -> index unavailable (infrastructure): E: Failed to fetch")
    assert "sid's index has libicu-sid-dev, which this suite lacks" in note
    with pytest.raises(IndexUnavailable):
        unanswered([answer])


def test_when_no_neighbour_s_index_can_be_built_either_the_need_is_unavailable_as_before(tmp_path):
    from agents.debindex import IndexUnavailable, index_for, unanswered

    f, run = _trixie_mid_sync(tmp_path, {}, neighbours_build=())
    index = index_for(run, "swemint/cfamily:gcc14")
    pkgs, [answer] = index.resolve([UCOL])
    assert pkgs == [] and answer.chosen is None and "Mirror sync in progress?" in (answer.unavailable or "")
    note = run.traj.steps[-1].note
    assert note.startswith("index: header unicode/ucol.h -> index unavailable (infrastructure): E: Failed to fetch "
                           "http://deb.debian.org/debian/dists/trixie/main/Contents-amd64.gz")
    assert "sid's index unavailable too" in note and "bookworm's index unavailable too" in note
    made = [s for s in run.traj.steps if s.rule == "debian-index:image"]
    assert len(made) == 3 + 2  # the own index's attempts, then one per neighbour
    assert not list((Path(run.config.workdir) / "cache" / "debian-index").glob("*.json"))  # nothing cached
    assert not [c for sb in f.sandboxes for c in sb.calls if "search --regexp" in c.command]
    with pytest.raises(IndexUnavailable) as e:
        unanswered([answer], instance_id="o__r-1")
    assert "header unicode/ucol.h" in e.value.message and "Mirror sync in progress?" in e.value.message
    # asked again in this run: nothing is built again
    index.resolve([UCOL])
    assert len([s for s in run.traj.steps if s.rule == "debian-index:image"]) == 5


def test_the_neighbours_of_a_suite_are_data_and_its_suite_is_read_from_its_apt_sources():
    from agents.debindex import index_data
    from agents.debneighbour import neighbours_of, own_suite, setup_script

    assert neighbours_of("trixie", index_data()) == ["sid", "bookworm"]
    assert neighbours_of("bookworm", index_data()) == ["trixie", "bullseye"]
    assert neighbours_of("nosuch", index_data()) == []
    assert own_suite(SUITES) == ("trixie", "http://deb.debian.org/debian")
    assert own_suite("bookworm-security http://deb.debian.org/debian-security\nbookworm http://deb.debian.org/debian/\n") \
        == ("bookworm", "http://deb.debian.org/debian")
    assert own_suite("") is None and own_suite("trixie $(id)\n") is None
    assert "'deb http://x/y sid main'" in setup_script("true", "sid", "http://x/y")

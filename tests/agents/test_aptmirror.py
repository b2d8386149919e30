"""A Debian mirror apt could not use is the infrastructure's failure (`envpool.aptmirror`; apt's
words for it: tests/envpool/test_mirror_retry.py): a setup step retried with backoff and then
`infra_error`, the grading tools' python3 at an image's commit retried the same way, and a missing header
whose fix waits on an index the mirror kept from being built: `infra_error` naming the need and
the mirror's error, no rebuild spent (timescaledb-10401 ended `env_failed` after two moves)."""

from __future__ import annotations

import re

from agents.mint_config import MintConfig
from agents.minter import mint_instance
from tests.agents.test_loop import Toy, debian_toy, events, instance_on, patched, steps
from tests.agents.ecosystems.conftest import force_ecosystem
from tests.envpool.test_mirror_retry import HASH_SUM, MIRROR_SYNC, UCOL
from envpool.evalscript import ENSURE_PYTHON3
from envpool.fake import FakeSandboxFactory


def _cfg(tmp_path, **repair) -> MintConfig:
    return MintConfig(workdir=tmp_path / "w", run_id="t", memory={"enabled": False},
                      repair={"mirror_backoff": 0, **repair})


def _mint_failing_once(tmp_path, monkeypatch, pattern: str):
    """(result, the commands run) of the toy's mint where the command matching `pattern` fails on
    the mirror (HASH_SUM) once and then works."""
    force_ecosystem(monkeypatch, Toy(versions=("1.19",)))
    inst, git_dir = instance_on(tmp_path)
    f = FakeSandboxFactory(run_id="t")
    tries: list[str] = []
    f.on(pattern, lambda cmd, sb: tries.append(cmd) or ((100, HASH_SUM) if len(tries) == 1 else (0, "ok")))
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    return mint_instance(inst, git_dir, _cfg(tmp_path), factory=f), tries


def test_an_apt_step_the_mirror_fails_once_is_retried_and_the_row_verifies(tmp_path, monkeypatch):
    res, tries = _mint_failing_once(tmp_path, monkeypatch, r"^fetch-deps$")
    assert res.outcome == "verified", res.reason
    assert len(tries) == 2 and res.round == 1
    second = [s for s in steps(res) if s.command == "fetch-deps"][-1]
    assert second.exit_code == 0 and "attempt 2 of 3: the Debian mirror failed" in second.note


def test_an_apt_step_the_mirror_keeps_failing_ends_infra_error_not_env_failed(tmp_path, monkeypatch):
    force_ecosystem(monkeypatch, Toy(versions=("1.19",)))
    inst, git_dir = instance_on(tmp_path)
    f = FakeSandboxFactory(run_id="t")
    f.on(r"^fetch-deps$", (100, HASH_SUM))
    res = mint_instance(inst, git_dir, _cfg(tmp_path, mirror_attempts=2), factory=f)
    assert res.outcome == "infra_error", res.reason
    assert "apt could not use the Debian mirror (infrastructure)" in res.reason and "Hash Sum mismatch" in res.reason
    assert len([s for s in steps(res) if s.command == "fetch-deps"]) == 2  # the attempts, one build, no move
    assert not [s for s in steps(res) if s.agent == "flow" and s.rule.startswith("move")]


def test_the_grading_tools_python3_the_mirror_fails_once_is_installed_again_when_the_image_is_committed(
        tmp_path, monkeypatch):
    """`agents.envimage.commit_image` installs python3 through `envpool.evalscript.ensure_python3`
    under the mint's `repair.mirror_*`: apt failing on the mirror once, the install runs again."""
    res, tries = _mint_failing_once(tmp_path, monkeypatch, "^" + re.escape(ENSURE_PYTHON3) + "$")
    assert res.outcome == "verified", res.reason
    assert len(tries) == 2 and res.round == 1


def test_a_missing_header_whose_index_the_mirror_keeps_from_being_built_ends_infra_error_without_moves(
        tmp_path, monkeypatch):
    """timescaledb-10401: `fatal error: unicode/ucol.h`, trixie's mirror mid-sync, apt-file
    update failing in every attempt: the trajectory says "index unavailable (infrastructure)", the
    row ends `infra_error` naming the header and the mirror's error, after one build (no move, no
    second build), and the index's failure is cached nowhere."""
    eco, f = debian_toy(monkeypatch, "/usr/include/unicode/ucol.h", "libicu-dev")
    f.on(r"apt-file update", (100, MIRROR_SYNC))
    f.on(r"apt-cache policy", (0, ""))
    f.on(r"^fetch-deps$", lambda cmd, sb: (0, "ok") if "/usr/include/unicode/ucol.h" in sb.files else (2, UCOL))
    inst, git_dir = instance_on(tmp_path)
    cfg = _cfg(tmp_path)
    res = mint_instance(inst, git_dir, cfg, factory=f)
    assert res.outcome == "infra_error", res.reason
    assert "Debian's file index is unavailable (infrastructure) for header unicode/ucol.h" in res.reason
    assert "Mirror sync in progress?" in res.reason and "missing-header" in res.reason
    got = steps(res)
    notes = [s.note for s in got if s.rule == "debian-index"]
    assert notes and all("index unavailable (infrastructure)" in n for n in notes)
    assert not [n for n in notes if "no Debian package" in n]
    assert len([s for s in got if s.rule == "debian-index:image"]) == cfg.repair.mirror_attempts  # once per run
    assert len(eco.requests) == 1  # planned once: no replan, no move, no second build
    assert not [s for s in got if s.agent == "flow" and s.rule.startswith(("move", "round#"))]
    assert not list((tmp_path / "w" / "cache" / "debian-index").glob("*.json"))


def _mint_ucol(tmp_path, f):
    """Mint the toy whose setup fails on unicode/ucol.h until libicu-dev is installed."""
    f.on(r"^fetch-deps$", lambda cmd, sb: (0, "ok") if "/usr/include/unicode/ucol.h" in sb.files else (2, UCOL))
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    inst, git_dir = instance_on(tmp_path)
    return mint_instance(inst, git_dir, _cfg(tmp_path), factory=f)


def test_the_same_header_verifies_once_the_mirror_is_back(tmp_path, monkeypatch):
    """The index build fails once (mid-sync) and then works: the header's package is installed
    and the row verifies, as it would have without the mirror's hiccup."""
    eco, f = debian_toy(monkeypatch, "/usr/include/unicode/ucol.h", "libicu-dev")
    builds = []
    f.on(r"apt-file update", lambda cmd, sb: builds.append(cmd) or ((100, MIRROR_SYNC) if len(builds) == 1 else (0, "")))
    f.on(r"apt-file search --regexp .*ucol", (0, "libicu-dev: /usr/include/unicode/ucol.h\n"))
    res = _mint_ucol(tmp_path, f)
    assert res.outcome == "verified", res.reason
    assert len(builds) == 2 and res.round == 1


def test_a_missing_header_whose_own_index_the_mirror_keeps_from_being_built_verifies_through_a_neighbouring_suite(
        tmp_path, monkeypatch):
    """timescaledb-10401 on trixie, whose Contents the mirror keeps out of sync with its InRelease:
    apt-file update fails on trixie in every attempt, sid's index (the first neighbour of trixie)
    says libicu-dev ships unicode/ucol.h, trixie's package lists have it: installed, the row
    verifies in round 1 with the note naming sid's index and trixie's confirmation."""
    eco, f = debian_toy(monkeypatch, "/usr/include/unicode/ucol.h", "libicu-dev")
    f.on(r"apt-get indextargets", (0, "trixie http://deb.debian.org/debian\n"))
    f.on(r"apt-file -c \S+ update", lambda cmd, sb: (0, "") if " sid main" in cmd else (100, MIRROR_SYNC))
    f.on(r"apt-file update", (100, MIRROR_SYNC))
    f.on(r"apt-file -c \S+ search --regexp .*ucol", (0, "libicu-dev: /usr/include/unicode/ucol.h\n"))
    f.on(r"apt-cache policy", (0, "libicu-dev:\n  Installed: (none)\n  Candidate: 76.1-4\n"))
    res = _mint_ucol(tmp_path, f)
    assert res.outcome == "verified", res.reason
    notes = [s.note for s in steps(res) if s.rule == "debian-index"]
    assert res.round == 1 and notes and "libicu-dev from sid's index, confirmed in trixie" in notes[0]
    assert "apt-get install" in res.setup_script and "libicu-dev" in res.setup_script


def test_the_grading_tools_python3_the_mirror_keeps_failing_ends_the_row_infra_error(tmp_path, monkeypatch):
    """After `repair.mirror_attempts` attempts failing on the mirror, the image is not committed
    with a python3-less grading toolchain: `commit_image` raises AptMirrorError, the row ends
    `infra_error` naming apt's line."""
    force_ecosystem(monkeypatch, Toy(versions=("1.19",)))
    inst, git_dir = instance_on(tmp_path)
    f = FakeSandboxFactory(run_id="t")
    tries: list[str] = []
    f.on("^" + re.escape(ENSURE_PYTHON3) + "$", lambda cmd, sb: tries.append(cmd) or (100, HASH_SUM))
    f.on(r"go test -json", lambda cmd, sb: (0, events({"TestAdd": "pass"})) if patched(sb)
         else (1, events({"TestAdd": "fail"})))
    res = mint_instance(inst, git_dir, _cfg(tmp_path, mirror_attempts=2), factory=f)
    assert res.outcome == "infra_error", res.reason
    assert "grading tools' python3" in res.reason and "Hash Sum mismatch" in res.reason
    assert len(tries) == 2


def test_the_grading_tools_python3_failing_otherwise_is_logged_and_the_image_committed(caplog):
    """A python3 install failing for another reason than the mirror is tried once, logged, and the
    image committed (the row's eval script reports it); failing on the mirror raises."""
    import pytest

    from agents.envimage import commit_image
    from envpool.aptmirror import AptMirrorError, MirrorRetry
    from envpool.sandbox import SandboxSpec

    f = FakeSandboxFactory(run_id="r1")
    tries: list[str] = []
    said = [(1, "no space left")]
    f.on("^" + re.escape(ENSURE_PYTHON3) + "$", lambda cmd, sb: tries.append(cmd) or said[0])
    policy = MirrorRetry(mirror_attempts=3, mirror_backoff=0)
    with f.sandbox(SandboxSpec(image="x", run_id="r1")) as sb, caplog.at_level("WARNING"):
        ref, _ = commit_image(sb, f, "swemint/env", "t1", {"swemint.run": "r1"}, mirror=policy)
    assert f.images.get(ref) is not None and len(tries) == 1
    assert "grading tools' python3 for swemint/env:t1 failed (exit 1): no space left" in caplog.text
    said[0] = (100, HASH_SUM)
    with f.sandbox(SandboxSpec(image="x", run_id="r1")) as sb, pytest.raises(AptMirrorError) as e:
        commit_image(sb, f, "swemint/env", "t2", {"swemint.run": "r1"}, mirror=policy)
    assert "Hash Sum mismatch" in e.value.line and f.images.get("swemint/env:t2") is None
    assert len(tries) == 1 + 3

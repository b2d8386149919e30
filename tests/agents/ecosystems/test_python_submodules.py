"""Git submodules the mirror lacks, filled from PyPI sdists (`agents.ecosystems.python.submodules`):
.gitmodules parsing, empty gitlinks, PEP 503 names, the choice of the sdist under the date cut,
the builder's steps (the probe, the recorded fill before the project install, nothing added
when PyPI has no such distribution) and the fill script itself on local archives. The docker
twin is `test_python_submodules_docker.py`."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from datetime import datetime, timezone

import pytest

from agents.ecosystems.python.profile import PythonProfile
from agents.ecosystems.python.python_plan import choose_python
from agents.ecosystems.python.builder import PythonEnvBuilder
from agents.ecosystems.python.submodules import (PROBE_PREFIX, Sdist, candidate_names, choose_sdist, empty_submodules,
                                                 fill_command, probe_results)
from agents.gitrepo import GitSubmodule, parse_gitmodules
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec
from tests.agents.ecosystems.conftest import make_tree

SHA = "d23a53f46dd1c3703e5eee63dca3f53bd18a4e8b"
ASTROPY_GITMODULES = ('[submodule "astropy_helpers"]\n\tpath = astropy_helpers\n'
                      '\turl = https://github.com/astropy/astropy-helpers.git\n')


def test_gitmodules_sections_keys_quotes_and_comments():
    text = ('# vendored helpers\n[submodule "astropy_helpers"]\n\tpath = astropy_helpers\n'
            '\turl = https://github.com/astropy/astropy-helpers.git ; upstream\n'
            '[submodule "with \\"quote\\""]\n\tPath = "ext/odd dir"\n\tURL = git@github.com:o/Odd.git\n'
            '[submodule "no-path"]\n\turl = https://e.org/x.git\n[core]\n\tpath = not-a-submodule\n')
    assert parse_gitmodules(text) == [
        GitSubmodule(name="astropy_helpers", path="astropy_helpers",
                     url="https://github.com/astropy/astropy-helpers.git"),
        GitSubmodule(name='with "quote"', path="ext/odd dir", url="git@github.com:o/Odd.git")]
    assert parse_gitmodules("") == []


def test_only_empty_gitlinks_are_missing_submodules(tmp_path):
    """A gitlink with no file under it is what a mirror lacks; a declared path whose files are
    committed (a vendored copy) and a stale entry without a gitlink are not."""
    gm = (ASTROPY_GITMODULES + '[submodule "vendored"]\n\tpath = ext/vendored\n\turl = https://e.org/vendored.git\n'
          '[submodule "stale"]\n\tpath = stale\n\turl = https://e.org/stale.git\n')
    tree = make_tree(tmp_path, {".gitmodules": gm, "setup.py": "", "ext/vendored/v.py": ""},
                     gitlinks={"astropy_helpers": SHA})
    assert tree.gitlinks == {"astropy_helpers"}
    assert [s.path for s in empty_submodules(tree)] == ["astropy_helpers"]
    assert empty_submodules(make_tree(tmp_path / "none", {"setup.py": ""})) == []


def test_candidate_names_from_url_then_path_normalised_per_pep_503():
    def names(path: str, url: str) -> list[str]:
        return candidate_names(GitSubmodule(name=path, path=path, url=url))

    assert names("astropy_helpers", "https://github.com/astropy/astropy-helpers.git") == ["astropy-helpers"]
    assert names("vendor/six", "git@github.com:benjaminp/Six.git") == ["six"]
    assert names("ext/Foo_Bar", "https://e.org/org/my.Repo.git/") == ["my-repo", "foo-bar"]
    assert names("ext/odd dir", "../relative;rm -rf.git") == []  # neither is a distribution name
    assert names("lib__x", "") == ["lib-x"]


def doc(name: str, releases: dict[str, list]) -> dict:
    return {"name": name, "releases": releases}


def f(filename: str, uploaded: str, yanked: bool = False, sha: str = "a" * 64) -> list:
    return [filename, f"https://files.pythonhosted.org/packages/xx/{filename}", sha, uploaded, yanked]


def test_the_newest_release_up_to_the_date_cut_with_a_usable_sdist():
    d = doc("astropy-helpers", {
        "2.0.2": [f("astropy-helpers-2.0.2.zip", "2017-10-13T16:51:01Z"), f("astropy-helpers-2.0.2.tar.gz",
                                                                            "2017-10-13T16:51:01.267294Z")],
        "3.0rc1": [f("astropy-helpers-3.0rc1.tar.gz", "2018-01-07T23:37:39Z")],
        "2.0.3": [f("astropy-helpers-2.0.3.tar.gz", "2018-01-22T20:33:41Z")],
        "2.0.10": [f("astropy-helpers-2.0.10.tar.gz", "2017-12-01T00:00:00Z", yanked=True)],
        "2.0.9": [f("astropy_helpers-2.0.9-py3-none-any.whl", "2017-12-01T00:00:00Z")],
        "2.0.8": [f("astropy-helpers-2.0.8.tar.gz", "2017-12-01T00:00:00Z", sha="not-hex")],
        "junk version": [f("x.tar.gz", "2017-01-01T00:00:00Z")]})
    s = choose_sdist(d, "2018-01-10T00:00:00Z")
    assert (s.version, s.filename, s.uploaded) == ("2.0.2", "astropy-helpers-2.0.2.tar.gz",
                                                   "2017-10-13T16:51:01.267294Z")
    assert choose_sdist(d, "2018-02-01T00:00:00Z").version == "2.0.3"  # highest version, not last upload
    only_pre = doc("p", {"1.0rc1": [f("p-1.0rc1.tar.gz", "2018-01-01T00:00:00Z")]})
    assert choose_sdist(only_pre, "2019-01-01").version == "1.0rc1"  # a cut without time or zone: UTC
    assert choose_sdist(d, "2017-01-01T00:00:00Z") is None
    assert choose_sdist({"name": "nope", "status": 404}, "2030-01-01T00:00:00Z") is None


def astropy_builder(tmp_path, sb, files: dict[str, str] | None = None, gitlinks: dict[str, str] | None = None):
    files = files or {".gitmodules": ASTROPY_GITMODULES, "ah_bootstrap.py": "", "setup.py": "import ah_bootstrap\n"}
    tree = make_tree(tmp_path, files, gitlinks=gitlinks or {"astropy_helpers": SHA})
    prof = PythonProfile(commit=tree.commit, project_name="astropy", installable=True)
    created = datetime(2017, 12, 21, 22, 9, 47, tzinfo=timezone.utc)
    choice = choose_python(prof, created, ["3.11"])
    return PythonEnvBuilder(sb, tree, prof, choice, created, None, repo="astropy/astropy")


def probe_reply(name: str, **body) -> str:
    return "warning: something\n" + PROBE_PREFIX + json.dumps({"name": name, **body}) + "\n"


def test_an_empty_submodule_named_after_a_pypi_distribution_is_filled_before_the_install(tmp_path):
    sb = FakeSandbox(SandboxSpec(image="x"))
    sdist = f("astropy-helpers-2.0.2.tar.gz", "2017-10-13T16:51:01.267294Z", sha="ab" * 32)
    sb.on(r"pypi\.org/pypi/", probe_reply("astropy-helpers", releases={"2.0.2": [sdist], "3.0": [
        f("astropy-helpers-3.0.tar.gz", "2030-02-09T16:47:00Z")]}))  # after the plan's date cut
    b = astropy_builder(tmp_path, sb)
    assert b.build([]).ok
    rules = [s.rule for s in b.steps]
    assert rules.index("probe:submodule-pypi") < rules.index("submodule:pypi-sdist") \
        < rules.index("install:project+tests")
    probe = next(s for s in b.steps if s.rule == "probe:submodule-pypi")
    assert probe.command.endswith(" astropy-helpers") and probe.command not in b.commands
    fill = next(s for s in b.steps if s.rule == "submodule:pypi-sdist")
    assert fill.command in b.commands and b.commands.index(fill.command) < len(b.commands) - 1
    assert shlex.split(fill.command)[-3:] == [sdist[1], "ab" * 32, "/testbed/astropy_helpers"]
    assert "astropy-helpers 2.0.2" in fill.note and b.choice.exclude_newer in fill.note


def test_a_submodule_pypi_does_not_know_stays_empty_and_adds_no_error(tmp_path):
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(r"pypi\.org/pypi/", probe_reply("astropy-helpers", status=404))
    b = astropy_builder(tmp_path, sb)
    assert b.build([]).ok
    assert "submodule:pypi-sdist" not in [s.rule for s in b.steps]
    probe = next(s for s in b.steps if s.rule == "probe:submodule-pypi")
    assert probe.exit_code == 0 and "left empty" in probe.note
    assert all(s.exit_code in (0, None) for s in b.steps)
    assert not any("pypi.org" in c for c in b.commands)


def test_quoting_and_the_projects_own_name(tmp_path):
    """Every value from the repository reaches the shell quoted; a submodule named like the
    project under test is never filled from PyPI (that would be the project itself)."""
    gm = ('[submodule "odd"]\n\tpath = "vendor/my six"\n\turl = https://e.org/six.git\n'
          '[submodule "self"]\n\tpath = astropy\n\turl = https://github.com/astropy/astropy.git\n')
    sb = FakeSandbox(SandboxSpec(image="x"))
    sb.on(r"pypi\.org/pypi/", probe_reply("six", releases={"1.11.0": [f("six-1.11.0.tar.gz", "2017-09-17T18:46:53Z")]}))
    b = astropy_builder(tmp_path, sb, {".gitmodules": gm, "setup.py": ""}, {"vendor/my six": SHA, "astropy": SHA})
    assert b.fill_submodules() == ["vendor/my six"]
    assert [s.command.rsplit(" ", 1)[-1] for s in b.steps if s.rule == "probe:submodule-pypi"] == ["six"]
    assert b.commands[-1].endswith(" '/testbed/vendor/my six'")


def test_probe_output_lines_that_are_not_json_are_skipped():
    out = PROBE_PREFIX + "{broken\n" + PROBE_PREFIX + '{"name": "six", "status": 404}\nnoise\n'
    assert probe_results(out) == [{"name": "six", "status": 404}]


def sdist_file(tmp_path, filename: str, members: dict[str, str]) -> Sdist:
    """`members` packed as `filename` (.tar.gz or .zip) under `tmp_path`, as an Sdist whose url
    is the file's `file://` address."""
    import hashlib
    import io
    import tarfile
    import zipfile

    path = tmp_path / filename
    if filename.endswith(".zip"):
        with zipfile.ZipFile(path, "w") as z:
            for name, text in members.items():
                z.writestr(name, text)
    else:
        with tarfile.open(path, "w:gz") as t:
            for name, text in members.items():
                info = tarfile.TarInfo(name)
                info.size = len(text.encode())
                t.addfile(info, io.BytesIO(text.encode()))
    return Sdist(name="six", version="1.0", filename=filename, url=path.as_uri(),
                 sha256=hashlib.sha256(path.read_bytes()).hexdigest(), uploaded="2020-01-01T00:00:00Z")


def run_fill(sdist: Sdist, testbed) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", fill_command(sys.executable, sdist, "vendor/six", testbed=str(testbed))],
                          capture_output=True, text=True)


@pytest.mark.parametrize("filename", ["six-1.0.tar.gz", "six-1.0.zip"])
def test_the_fill_step_puts_the_sdists_root_folder_contents_at_the_path(tmp_path, filename):
    sdist = sdist_file(tmp_path, filename, {"six-1.0/six.py": "X = 1\n", "six-1.0/setup.py": "",
                                            "six-1.0/doc/index.rst": ""})
    (tmp_path / "tb/vendor/six").mkdir(parents=True)  # the empty gitlink
    r = run_fill(sdist, tmp_path / "tb")
    assert r.returncode == 0, r.stderr
    assert sorted(p.relative_to(tmp_path / "tb/vendor/six").as_posix()
                  for p in (tmp_path / "tb/vendor/six").rglob("*")) == ["doc", "doc/index.rst", "setup.py", "six.py"]


def test_the_fill_step_refuses_a_changed_file_and_members_outside_its_tree(tmp_path):
    good = sdist_file(tmp_path, "six-1.0.tar.gz", {"six-1.0/six.py": ""})
    r = run_fill(good.model_copy(update={"sha256": "0" * 64}), tmp_path / "tb")
    assert r.returncode != 0 and "sha256 mismatch" in r.stderr and not (tmp_path / "tb").exists()
    evil = sdist_file(tmp_path, "six-2.0.tar.gz", {"six-2.0/six.py": "", "six-2.0/../../../escaped.py": ""})
    r = run_fill(evil, tmp_path / "tb")
    assert r.returncode != 0 and "unsafe member" in r.stderr
    assert not list(tmp_path.rglob("escaped.py"))

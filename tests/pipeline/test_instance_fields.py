"""Instance fields are data (issue 24, item 1): checked at load, never a path, a command or an escape.

The instance files are written by the tests. Before the change, `instance_id` was never checked:
an id holding `/../` made `swemint export --format swebench-task-repo` write the task's files
outside the destination, an id holding a newline and a command put that command on a line of its
own in the row's `eval_script` and every exported `eval.sh`, and `repo` `../x` made the mirror
look-up read a git folder outside the mirror roots.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from agents.dockerfile import render_dockerfile, render_setup_script
from agents.models import EnvRecord, Instance, InstanceResult
from envpool.errors import InstanceInputError
from envpool.naming import INSTANCE_ID_RE, check_instance_id
from pipeline.pipeline_config import load_config
from pipeline.demo import make_demo
from pipeline.driver import run_mint
from pipeline.evaluate import dataset_rows
from pipeline.export import export_task_repo
from pipeline.instances import load_instances, parse_row
from pipeline.repos import RepoResolver
from pipeline.sources.source_rows import instance_id as source_id
from pipeline.sources.source_rows import make_instance_row
from pipeline.store import ResultStore

PATCH = "diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
TP = "diff --git a/tests/t.py b/tests/t.py\n--- a/tests/t.py\n+++ b/tests/t.py\n@@ -1 +1 @@\n-a\n+b\n"
TEN_KB = "octo__proj-" + "1" * 10_000
HOSTILE_IDS = ["../x", "a/b", "octo__proj-1\ntouch /tmp/PWNED", TEN_KB, "octo__proj-1/../../../escaped",
               "..", ".", "a\x1b[31mred", "a\x1b]52;c;aGk=\x07", "a;rm -rf ~", "$(touch PWNED)", "a b", "-rf",
               "/abs", "a..b", "a\0b", "a\u2028b", ""]


def row(iid: str = "octo__proj-1", **kw) -> dict:
    return {"instance_id": iid, "repo": "octo/proj", "base_commit": "abcd1234", "patch": PATCH, "test_patch": TP,
            **kw}


def load(tmp_path: Path, rows: list[dict]):
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return load_instances(f)


def assert_one_inert_line(msg: str, where: str) -> None:
    assert where in msg, msg
    assert not re.search(r"[\x00-\x1f\x7f\u2028\u2029]", msg), repr(msg)
    assert len(msg) < 800, len(msg)


def test_each_hostile_id_is_refused_with_one_inert_line_naming_its_row(tmp_path):
    res = load(tmp_path, [row("octo__proj-0"), *(row(i) for i in HOSTILE_IDS)])
    assert [i.instance_id for i in res.instances] == ["octo__proj-0"]
    assert len(res.errors) == len(HOSTILE_IDS)
    for n, e in enumerate(res.errors, 2):
        assert_one_inert_line(str(e), f"in.jsonl line {n}:")


@pytest.mark.parametrize("field,value", [
    ("repo", "../x"), ("repo", "octo/.."), ("repo", "octo/."), ("repo", "a/b/c"), ("repo", "a\n/b"),
    ("repo", "/etc"), ("repo", "octo/proj;rm"), ("repo", "x" * 300 + "/y"),
    ("version", "1.0\ntouch PWNED"), ("version", "$(touch PWNED)"), ("version", "1" * 100), ("version", "../1"),
    ("created_at", "2024-01-01\n; touch PWNED"), ("created_at", "yesterday"), ("created_at", "2" * 10_000),
    ("language", "py\nthon"), ("language", "x" * 100), ("language", "c\x1b[31m"),
    ("source", "github\ntouch PWNED"), ("commit", "\x1b[2J"), ("crawled_at", "soon"),
    ("patch", PATCH.replace("x.py", "../../x.py")), ("patch", PATCH.replace("x.py", ".git/hooks/post-checkout")),
    ("test_patch", TP.replace("tests/t.py", "/etc/cron.d/x")), ("problem_statement", "a\0b"),
    ("base_commit", "abcd1234\n"), ("base_commit", "abcd1234\n--x"), ("base_commit", "-abcd"),
])
def test_each_hostile_field_is_refused_naming_the_row_and_the_field(field, value):
    with pytest.raises(InstanceInputError) as e:
        parse_row(row(**{field: value}), "line 3", "in.jsonl")
    msg = str(e.value)
    assert_one_inert_line(msg, "in.jsonl line 3:")
    assert field.split("_")[0] in msg or (field in ("patch", "test_patch") and "path" in msg) \
        or (field == "base_commit" and "commit id" in msg), msg
    assert e.value.instance_id == "octo__proj-1"


def test_what_the_real_data_and_swemints_own_sources_hold_is_accepted():
    ok = ["astropy__astropy-12907", "Project-MONAI__MONAI-1234", "getmoto__moto.694ce1f4.pr_5123",
          "pydata__xarray-6599", "owner__.github-1", "burntsushi__ripgrep-2209"]
    assert all(check_instance_id(i) == i for i in ok)
    # the sources' ids: GitHub's owner/name (letters, digits, `-`, `_`, `.`), a PR number or a sha prefix
    for repo, suffix in (("Owner-1/my.repo_x", 12), ("a/b", "0123abc"), ("octo-org/.github", 3)):
        iid = source_id(repo, suffix)
        assert INSTANCE_ID_RE.fullmatch(iid) and check_instance_id(iid) == iid
    from datetime import datetime, timezone

    made = make_instance_row(repo="Owner-1/my.repo_x", suffix=12, base_commit="a" * 40, patch=PATCH, test_patch=TP,
                             problem_statement="p", hints_text="", created_at=datetime.now(timezone.utc),
                             language="C++", source="git")
    assert made["instance_id"] == "Owner-1__my.repo_x-12" and made["language"] == "cpp"
    with pytest.raises(ValueError, match="repo"):
        make_instance_row(repo="../x", suffix=1, base_commit="a" * 40, patch=PATCH, test_patch=TP,
                          problem_statement="p", hints_text="", created_at=datetime.now(timezone.utc), language=None)


def test_every_real_dev_instance_loads():
    dev = Path("/work/shared/data/swebench_dev.jsonl")
    if not dev.exists():
        pytest.skip("shared dev data absent")
    res = load_instances(dev)
    assert len(res.instances) == 589 and not res.errors


def test_a_repo_never_leads_the_mirror_lookup_out_of_its_roots(tmp_path):
    mirrors = tmp_path / "mirrors"
    mirrors.mkdir()
    secret = tmp_path / "secret.git"  # a git folder next to the mirrors: `../secret` used to find it
    subprocess.run(["git", "init", "-q", "--bare", str(secret)], check=True)
    r = RepoResolver([mirrors])
    for bad in ("../secret", "..//secret", "a/b/../../../secret"):
        with pytest.raises(InstanceInputError, match="owner/name"):
            r.resolve(bad)


def test_a_third_party_dataset_row_with_a_hostile_id_is_not_graded(tmp_path):
    rows = [{"instance_id": i, "repo": "octo/proj", "outcome": "verified"} for i in ("octo__proj-1", "../x", "a\nb")]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "verified.parquet")
    refused: list[str] = []
    got = dataset_rows(dataset=tmp_path, refused=refused)
    assert list(got) == ["octo__proj-1"] and len(refused) == 2
    for line, n in zip(refused, (2, 3)):
        assert_one_inert_line(line, f"row {n}:")


# -- the case that must hold: mint and export an instance file holding hostile ids -------------

def scripted_mint(instance, repo_path, config, env=None, candidates=None) -> InstanceResult:
    """A build stage stand-in whose verified row has what an export writes: a test command, a
    Dockerfile and a setup script rendered the way the minter renders them."""
    return InstanceResult(
        instance_id=instance.instance_id, repo=instance.repo, outcome="verified", version=instance.version,
        language=instance.language, FAIL_TO_PASS=["tests/test_x.py::test_a[$(touch /tmp/PWNED)]"],
        PASS_TO_PASS=["tests/test_x.py::test_b['; touch PWNED; ']"], test_files=["tests/test_x.py"],
        parser="pytest_plugin", image=f"swemint/env:{instance.instance_id}", timings={"total": 0.1},
        test_command="cd /testbed && python -m pytest -p no:cacheprovider tests/test_x.py",
        dockerfile=render_dockerfile(base_image="python:3.11", repo=instance.repo, base_commit=instance.base_commit,
                                     commands=["pip install -e ."], env={"X": "$(touch PWNED)"}),
        setup_script=render_setup_script(["pip install -e ."], {"X": "$(touch PWNED)"}),
        env=EnvRecord(instance_id=instance.instance_id, repo=instance.repo, base_commit=instance.base_commit,
                      image_tag=f"fake:{instance.instance_id}"))


def test_hostile_ids_are_refused_and_the_export_writes_only_inside_its_folder(tmp_path):
    mirrors, instances = make_demo(tmp_path / "demo")
    good = [json.loads(line) for line in instances.read_text().splitlines() if line.strip()][:2]
    rows = [*good, *({**good[0], "instance_id": i} for i in ("../x", "a/b", "octo__proj-1\ntouch PWNED", TEN_KB))]
    f = tmp_path / "in.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    cfg = load_config(None, ["mint.memory.enabled=false", "mint.reuse.enabled=false"], workdir=tmp_path / "w",
                      instances=f, mirrors=[mirrors], use_ray=False)
    report = run_mint(cfg, mint_fn=scripted_mint)
    assert sorted(r.instance_id for r in report.results) == sorted(r["instance_id"] for r in good)
    assert len(report.load_errors) == 4
    for e, n in zip(report.load_errors, (3, 4, 5, 6)):
        assert_one_inert_line(str(e), f"in.jsonl line {n}:")
    inputs = [json.loads(line) for line in (tmp_path / "w" / "input_errors.jsonl").read_text().splitlines()]
    assert len(inputs) == 4

    from agents.gitrepo import GitTree
    from pipeline.repos import RepoResolver as Resolver

    resolver = Resolver([mirrors])
    dest = tmp_path / "out" / "dest"
    before = set((tmp_path / "out").rglob("*")) if (tmp_path / "out").exists() else set()
    rep = export_task_repo(ResultStore(tmp_path / "w"), dest,
                           lambda inst: GitTree(resolver.prepare(inst.repo, inst.base_commit), inst.base_commit).archive())
    assert rep["tasks"] == 2 and not rep["skipped"]
    outside = [p for p in set((tmp_path / "out").rglob("*")) - before if not p.resolve().is_relative_to(dest.resolve())]
    assert outside == []
    assert sorted(p.name for p in (dest / "tasks").iterdir()) == sorted(r["instance_id"] for r in good)
    for task in (dest / "tasks").iterdir():
        iid = task.name
        for name in ("eval.sh", "Dockerfile"):
            text = (task / name).read_text()
            for line in text.splitlines():  # the id only ever stands in a comment line
                if iid in line:
                    assert line.lstrip().startswith("#"), (name, line)
        r = subprocess.run(["bash", "-n", str(task / "eval.sh")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        assert "touch /tmp/PWNED" in (task / "tests.json").read_text()  # ours, kept whole, as data
    assert not Path("/tmp/PWNED").exists()


# -- defence in depth: the export and the scripts stay safe for rows that never passed a load ------

def test_the_export_keeps_rows_that_bypassed_the_load_inside_the_destination(tmp_path, monkeypatch):
    from agents.dockerfile import tar_of

    evil = ["../../escaped", "octo__proj-1\ntouch PWNED", "a/b"]
    base = InstanceResult(instance_id="x", repo="octo/proj", outcome="verified", test_command="pytest t",
                          parser="pytest_plugin", test_files=["t.py"], FAIL_TO_PASS=["t.py::a"],
                          dockerfile="FROM x\n").model_dump()
    # rows as an older work directory could hold them (written before the load check existed)
    results = [InstanceResult.model_construct(**{**base, "instance_id": i, "env": None, "rounds": []}) for i in evil]
    insts = {i: Instance.model_construct(instance_id=i, repo="octo/proj", base_commit="abcd", patch=PATCH,
                                         test_patch=TP, problem_statement="p", hints_text="", created_at=None,
                                         version=None, language=None, source=None, pull_number=None) for i in evil}
    monkeypatch.setattr(ResultStore, "results", lambda self: list(results))
    monkeypatch.setattr(ResultStore, "instances", lambda self: dict(insts))
    dest = tmp_path / "out" / "dest"
    rep = export_task_repo(ResultStore(tmp_path / "w"), dest, lambda inst: tar_of({"a": b"x"}))
    assert rep["tasks"] == 3, rep
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert written and all(p.resolve().is_relative_to(dest.resolve()) for p in written)
    tasks = sorted(p.name for p in (dest / "tasks").iterdir())
    assert len(tasks) == 3 and all("/" not in t and t not in (".", "..") for t in tasks)
    for task in (dest / "tasks").iterdir():
        script = (task / "eval.sh").read_text()
        assert "\ntouch PWNED" not in script  # the id's newline stays `\n` in the header comment
        r = subprocess.run(["bash", "-n", str(task / "eval.sh")], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr


def test_a_link_left_in_the_destination_is_refused_not_followed(tmp_path):
    from tests.pipeline.test_export import inst  # the export tests' rows

    store = ResultStore(tmp_path / "w")
    i = inst("octo__proj-1")
    store.mark_running(i)
    store.write_result(InstanceResult(instance_id="octo__proj-1", repo="octo/proj", outcome="verified",
                                      FAIL_TO_PASS=["t::a"], test_files=["t.py"], parser="pytest_plugin",
                                      test_command="pytest t", dockerfile="FROM x\n"))
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    dest = tmp_path / "dest"
    (dest / "tasks").mkdir(parents=True)
    (dest / "tasks" / "octo__proj-1").symlink_to(outside)
    from agents.dockerfile import tar_of

    rep = export_task_repo(store, dest, lambda inst: tar_of({"a": b"x"}))
    assert rep["tasks"] == 0 and "outside" in rep["skipped"]["octo__proj-1"]
    assert list(outside.iterdir()) == []

"""Rows that travel (issue 29): small eval scripts that call the image's status tool, a licence per
row read from the repository at base_commit (and a filter on it), a complete card without host
paths, a note when images are local tags, and publishing refused while rows cannot be pulled.
Every repository here is written by the test itself."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from agents.models import Instance, InstanceResult
from pipeline.cli import app
from pipeline.export import export_dataset
from pipeline.hub import PublishRefused, push
from pipeline.imagetools import tool_states
from pipeline.licenses import LicenseReader, allowed, declared
from pipeline.store import ResultStore

MIT = """MIT License

Copyright (c) 2021 Someone

Permission is hereby granted, free of charge, to any person obtaining a copy
of this software and associated documentation files (the "Software"), to deal
in the Software without restriction, including without limitation the rights
to use, copy, modify, merge, publish, distribute, sublicense, and/or sell
copies of the Software, and to permit persons to whom the Software is
furnished to do so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
"""
APACHE_HEAD = "\n                                 Apache License\n                           Version 2.0, January 2004\n" \
              "                        http://www.apache.org/licenses/\n\n   TERMS AND CONDITIONS FOR USE\n"
WTFPL = """            DO WHAT THE FUCK YOU WANT TO PUBLIC LICENSE
                    Version 2, December 2004

 Copyright (C) 2004 Sam Hocevar <sam@hocevar.net>

 Everyone is permitted to copy and distribute verbatim or modified
 copies of this license document, and changing it is allowed as long
 as the name is changed.

            DO WHAT THE FUCK YOU WANT TO PUBLIC LICENSE
   TERMS AND CONDITIONS FOR COPYING, DISTRIBUTION AND MODIFICATION

  0. You just DO WHAT THE FUCK YOU WANT TO.
"""
TP = "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def mirror(root: Path, repo: str, files: dict[str, str]) -> str:
    """A bare mirror of `repo` under root (owner+name/repo) whose one commit holds `files`; its sha."""
    work = root / "src" / repo.replace("/", "+")
    work.mkdir(parents=True)
    for name, text in {"x.py": "a\n", **files}.items():
        (work / name).write_text(text)
    git(work, "init", "-q")
    git(work, "add", "-A")
    git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    git(root, "clone", "-q", "--bare", str(work), str(root / "mirrors" / repo.replace("/", "+") / "repo"))
    return git(work, "rev-parse", "HEAD")


def test_declared_wording_then_askalono():
    assert declared(MIT) == "MIT" and declared(APACHE_HEAD + "Apache License Version 2.0") == "Apache-2.0"
    # the project's licence first, then a bundled part's: the first one counts
    assert declared("proj is copyright me\n\n" + MIT + "\n\nbundled/zz is under the Apache License, Version 2.0") == "MIT"
    assert declared(WTFPL) is None  # not a common licence: askalono names it (below)
    assert allowed("Apache-2.0 OR MIT", ["mit"]) and not allowed("GPL-3.0-only", ["MIT", "Apache-2.0"])
    assert not allowed("MIT AND GPL-3.0-only", ["MIT"]) and not allowed("unknown", ["MIT"])


def test_licence_reader_on_mirrors(tmp_path):
    shas = {"o/mit": mirror(tmp_path, "o/mit", {"LICENSE": MIT}),
            "o/dual": mirror(tmp_path, "o/dual", {"LICENSE-MIT": MIT, "LICENSE-APACHE": APACHE_HEAD, "COPYING": "dual"}),
            "o/wtf": mirror(tmp_path, "o/wtf", {"COPYING.txt": WTFPL}),
            "o/none": mirror(tmp_path, "o/none", {"README": "no licence here"}),
            "o/odd": mirror(tmp_path, "o/odd", {"LICENSE": "All rights reserved. Ask us."})}
    cache = tmp_path / "cache.json"
    r = LicenseReader([tmp_path / "mirrors"], cache)
    got = {repo: r(repo, sha) for repo, sha in shas.items()}
    assert got == {"o/mit": "MIT", "o/dual": "Apache-2.0 OR MIT", "o/wtf": "WTFPL", "o/none": "unknown",
                   "o/odd": "unknown"}
    assert r("o/absent", "f" * 40) == "unknown" and r("o/mit", "0" * 40) == "unknown"
    r.save()
    assert "MIT" in json.loads(cache.read_text()).values()  # per licence blob: instances of a repo cost one match


@pytest.fixture()
def workdir(tmp_path):
    """Two verified rows (an MIT and a WTFPL repository) and a failed one, minted 'from' mirrors
    the recorded configuration names."""
    shas = {"o/mit": mirror(tmp_path, "o/mit", {"LICENSE": MIT}), "o/wtf": mirror(tmp_path, "o/wtf", {"LICENSE": WTFPL})}
    wd = tmp_path / "w"
    store = ResultStore(wd)
    for n, repo, outcome in ((1, "o/mit", "verified"), (2, "o/wtf", "verified"), (3, "o/mit", "env_failed")):
        iid = f"{repo.replace('/', '__')}-{n}"
        store.mark_running(Instance(instance_id=iid, repo=repo, base_commit=shas[repo], patch="p", test_patch=TP))
        store.write_result(InstanceResult(
            instance_id=iid, repo=repo, outcome=outcome, FAIL_TO_PASS=["tests/test_x.py::test_a"],
            parser="pytest_plugin", image=f"swemint/env:{n}", test_files=["tests/test_x.py"],
            reason="" if outcome == "verified" else f"see {wd}/instances/{iid}/run.log",
            test_command="cd /testbed && /opt/venv/bin/python -m pytest tests/test_x.py"))
    (wd / "mint_config.json").write_text(json.dumps({"workdir": str(wd), "mirrors": [str(tmp_path / "mirrors")],
                                                     "mint": {"workdir": str(wd), "run_id": "x"}, "workers": 2}))
    return wd


class NoEngine:
    """A Docker client with no images (what `tool_states` sees on a host that lacks them)."""

    @staticmethod
    def info():
        return {"Labels": ["swemint.node=node-7"], "Name": "host"}

    class images:  # noqa: N801
        @staticmethod
        def list(**kw):
            return []

        @staticmethod
        def get(ref):
            raise LookupError(ref)


def test_rows_travel_light_with_their_licence_and_a_complete_card(workdir):
    notes: list[str] = []
    paths = export_dataset(ResultStore(workdir), client=NoEngine(), notes=notes)
    rows = {r["instance_id"]: r for r in pq.read_table(paths["all"]).to_pylist()}
    assert {i: r["license"] for i, r in rows.items()} == {"o__mit-1": "MIT", "o__wtf-2": "WTFPL", "o__mit-3": "MIT"}
    for r in rows.values():
        if r["outcome"] == "verified":
            assert len(r["eval_script"].encode()) < 4096 and "/opt/swemint/bin/swemint-status.pyz" in r["eval_script"]
    assert rows["o__mit-3"]["reason"] == "see WORKDIR/instances/o__mit-3/run.log"
    card = paths["card"].read_text()
    front = yaml.safe_load(card.split("---")[1])
    assert front["license"] == ["mit", "wtfpl"] and front["task_categories"] == ["text-generation"]
    assert front["size_categories"] == ["n<1K"] and [s["split"] for s in front["configs"][0]["data_files"]] == [
        "verified", "all_outcomes"]
    assert str(workdir) not in card and str(workdir.parent) not in card and '"workers": 2' in card
    assert "local image" in card and any("local image tags" in n for n in notes)
    [absent] = [n for n in notes if "not on this engine" in n]
    assert "(node-7 at " in absent and "o__mit-1" in absent  # which engine, which rows
    # the licence filter keeps MIT rows only, and the card says so
    paths = export_dataset(ResultStore(workdir), client=NoEngine(), licenses=["MIT"])
    assert sorted(r["instance_id"] for r in pq.read_table(paths["all"]).to_pylist()) == ["o__mit-1", "o__mit-3"]
    assert "kept only when their licence is one of: MIT" in paths["card"].read_text()


def test_old_images_without_the_tool_are_named():
    class Img:
        def __init__(self, iid, labels):
            self.id, self.labels = iid, labels

    class Client:
        ran: list = []

        class images:  # noqa: N801
            @staticmethod
            def list(**kw):
                return [Img("sha256:new", {"swemint.status_tool": "abc"})]

            @staticmethod
            def get(ref):
                return {"old:probe-ok": Img("sha256:ok", {}), "old:no-tool": Img("sha256:no", {})}[ref]

        class containers:  # noqa: N801
            @staticmethod
            def run(image, cmd, **kw):
                Client.ran.append(image)
                if image == "old:no-tool":
                    raise RuntimeError("exit 1")

    rows = [{"instance_id": "a", "image_id": "sha256:new", "image_local": "new:1"},
            {"instance_id": "b", "image_id": "sha256:ok", "image_local": "old:probe-ok"},
            {"instance_id": "c", "image_id": "sha256:no", "image_local": "old:no-tool"}]
    assert tool_states(rows, client=Client()) == {"a": "labelled", "b": "probed", "c": "missing"}
    assert sorted(Client.ran) == ["old:no-tool", "old:probe-ok"]  # a labelled image is never started


def test_publishing_is_refused_while_images_are_local(workdir, tmp_path):
    export_dataset(ResultStore(workdir), client=NoEngine())
    with pytest.raises(PublishRefused, match="2 of 2 verified rows name images nobody else can pull"):
        push(workdir / "dataset", "me/tasks")
    r = CliRunner().invoke(app, ["export", "-w", str(workdir), "--push-to-hub", "me/tasks"])
    assert r.exit_code == 2 and "refusing to publish" in r.stderr and "Traceback" not in r.stderr
    # with every image a registry reference, the folder goes up through the Hub's client
    table = pq.read_table(workdir / "dataset" / "verified.parquet").to_pylist()
    for row in table:
        row["image"] = f"reg:5000/swemint/env:{row['instance_id']}@sha256:{'0' * 64}"
    out = tmp_path / "pub"
    out.mkdir()
    import pyarrow as pa

    pq.write_table(pa.Table.from_pylist(table), out / "verified.parquet")
    calls = []

    class Api:
        def create_repo(self, repo_id, **kw):
            calls.append(("create", repo_id, kw["repo_type"]))

        def upload_folder(self, **kw):
            calls.append(("upload", kw["repo_id"], kw["folder_path"]))

    assert push(out, "me/tasks", api=Api()) == "https://huggingface.co/datasets/me/tasks"
    assert calls == [("create", "me/tasks", "dataset"), ("upload", "me/tasks", str(out))]


def test_export_command_filters_and_says_what_it_found(workdir):
    r = CliRunner().invoke(app, ["export", "-w", str(workdir), "--permissive", "--json"])
    assert r.exit_code == 0, r.stderr
    s = json.loads(r.stdout)
    assert "MIT" in s["licenses"] and "WTFPL" not in s["licenses"]
    assert [x["instance_id"] for x in pq.read_table(workdir / "dataset" / "all.parquet").to_pylist()] == [
        "o__mit-1", "o__mit-3"]
    assert "left out" in r.stderr and "local image tags" in r.stderr

"""`scripts/measure_report.py`: every section's numbers over small hand-made work directories
(rows written by the real `ResultStore`), a tiny instances file with gold lists, a fake
`client.df()` for the disk section; no Docker."""

from __future__ import annotations

import json

from agents.models import Instance, InstanceResult, RoundRecord
from envpool.pool import EnvPool
from envpool.records import EnvRecord
from pipeline.store import ResultStore
from scripts.measure_report import build_report, main, render_markdown, unique_sizes


def _inst(iid: str, repo: str, lang: str, f2p: list[str], p2p: list[str] = ()) -> Instance:
    return Instance(instance_id=iid, repo=repo, base_commit="b" * 40, patch="p", test_patch="t", language=lang,
                    FAIL_TO_PASS=list(f2p), PASS_TO_PASS=list(p2p))


INSTANCES = [
    _inst("py-1", "o/py", "python", ["t.py::a"], ["t.py::p1", "t.py::p2"]),
    _inst("py-2", "o/py", "python", ["t.py::b"], ["t.py::p1"]),
    _inst("py-3", "o/py", "python", ["t.py::c"]),
    _inst("go-1", "o/go", "Go", ["TestA"]),
    _inst("go-2", "o/go", "golang", ["TestB"]),
    _inst("net-1", "o/net", "python", ["t.py::n"]),
    _inst("rs-1", "o/rs", "rust", ["tests::it"]),
]


def _write(workdir, inst: Instance, res: InstanceResult | None) -> None:
    store = ResultStore(workdir)
    store.mark_running(inst)
    if res is not None:
        store.write_result(res)


def _res(iid: str, outcome: str, **kw) -> InstanceResult:
    repo = next(i.repo for i in INSTANCES if i.instance_id == iid)
    return InstanceResult(instance_id=iid, repo=repo, outcome=outcome, **kw)


def _world(tmp_path):
    inst_file = tmp_path / "instances.jsonl"
    inst_file.write_text("".join(i.model_dump_json() + "\n" for i in INSTANCES))
    w1, w2 = tmp_path / "w1", tmp_path / "w2"
    by = {i.instance_id: i for i in INSTANCES}
    _write(w1, by["py-1"], _res("py-1", "verified", FAIL_TO_PASS=["t.py::a"], PASS_TO_PASS=["t.py::p1", "t.py::p2"],
                                timings={"before": 10.0, "after": 30.0, "total": 100.0}, image="swemint/env:py-1",
                                image_id="sha256:aaa"))
    _write(w1, by["py-2"], _res("py-2", "verified", FAIL_TO_PASS=["t.py::b", "t.py::x"],
                                timings={"before": 20.0, "after": 20.0, "total": 200.0}, image="swemint/env:py-2"))
    _write(w1, by["py-3"], None)  # RUNNING, never finished
    _write(w1, by["go-1"], _res("go-1", "env_failed", timings={"total": 30.0},
                                reason="go setup step failed (exit 1): go mod download /testbed/a/b.go:12 at 09a3650c97"))
    _write(w1, by["go-2"], _res("go-2", "env_failed", timings={"total": 40.0},
                                reason="go setup step failed (exit 2): go mod download /testbed/c/d.go:99 at 1234abcdef"))
    _write(w1, by["net-1"], _res("net-1", "no_fail_to_pass", timings={"total": 50.0}, reason="nothing failed"))
    # rs-1 only in the second work directory; its image only in the pool
    _write(w2, by["rs-1"], _res("rs-1", "verified", FAIL_TO_PASS=["tests::it"], timings={"total": 60.0}))
    EnvPool(w2 / "pool.duckdb").add(EnvRecord(instance_id="rs-1", repo="o/rs", base_commit="b" * 40,
                                              image_tag="swemint/env:rs-1", image_id="sha256:ccc"))
    ids = tmp_path / "ids.txt"
    ids.write_text("# the set\n" + "\n".join(i.instance_id for i in INSTANCES) + "\n")
    net = tmp_path / "network_bound.txt"
    net.write_text("# comment\nnet-1 gold FAIL_TO_PASS tests need httpbin.org; test runs have no network\n")
    return inst_file, [w1, w2], ids, net


DF = {"Images": [
    {"Id": "sha256:aaa", "RepoTags": ["swemint/env:py-1"], "Size": 1000, "SharedSize": 400},
    {"Id": "sha256:bbb", "RepoTags": ["swemint/env:py-2"], "Size": 500, "SharedSize": 100},
    {"Id": "sha256:ccc", "RepoTags": ["swemint/env:rs-1"], "Size": 900, "SharedSize": 0},
    {"Id": "sha256:ddd", "RepoTags": [], "Size": 900, "SharedSize": -1}]}


def test_every_section_of_the_generalisation_report(tmp_path):
    inst_file, workdirs, ids, net = _world(tmp_path)
    before = sorted((p, p.stat().st_mtime_ns) for w in workdirs for p in w.rglob("*"))
    rep = build_report(inst_file, workdirs, ids, network_file=net, df=DF)
    assert sorted((p, p.stat().st_mtime_ns) for w in workdirs for p in w.rglob("*")) == before  # read only

    repos = rep["repositories"]
    assert repos["o/py"] == {"language": "python", "instances": 3, "finished": 2, "not_run": 1, "verified": 2,
                             "recall_1": 2, "precision_1": 1, "both": 1, "median_s": 150.0, "network_bound": 0}
    assert (repos["o/go"]["language"], repos["o/go"]["verified"], repos["o/go"]["median_s"]) == ("go", 0, 35.0)
    assert repos["o/net"]["instances"] == 0 and repos["o/net"]["network_bound"] == 1
    assert repos["o/rs"]["both"] == 1  # from the second work directory
    not_run = [r for r in rep["rows"] if not r["finished"]]
    assert [r["instance_id"] for r in not_run] == ["py-3"] and not_run[0]["not_run"].startswith("running")

    lt = rep["languages"]
    assert lt["set"]["instances"] == 6 and lt["set"]["both"] == 2  # net-1 apart, py-3 counted as not verified
    assert (lt["languages"]["python"]["share"], lt["languages"]["python"]["target"]) == (round(1 / 3, 4), "not met")
    assert lt["languages"]["python"]["share_of_finished"] == 0.5
    assert (lt["languages"]["rust"]["share"], lt["languages"]["rust"]["target"]) == (1.0, "met")
    assert lt["languages"]["go"]["target"] == "not met"
    verdicts = [t["verdict"] for t in lt["targets"].values()]
    assert verdicts == ["not met", "not met", "not met"]
    p2p_target = next(t for k, t in lt["targets"].items() if k.startswith("PASS_TO_PASS"))
    assert p2p_target["per_language"] == {"go": "n/a (gold lists none)", "python": "not met",
                                          "rust": "n/a (gold lists none)"}

    fails = rep["failures"]
    assert [(g["count"], g["outcome"], g["example"]) for g in fails] == [
        (2, "env_failed", "go-1"), (1, "verified (precision < 1.0)", "py-2")]
    assert fails[0]["ids"] == ["go-1", "go-2"] and fails[0]["reason"].startswith("go setup step failed (exit 1)")
    assert "net-1" not in {i for g in fails for i in g["ids"]}
    zero = {z["repo"]: z for z in rep["zero_repositories"]}
    assert set(zero) == {"o/go", "o/net"}
    assert list(zero["o/go"]["causes"].values()) == [2]
    assert zero["o/net"]["causes"] == {"network-bound: gold FAIL_TO_PASS tests need httpbin.org; "
                                       "test runs have no network": 1}

    assert rep["p2p"]["python"] == {"rows": 2, "mean": 0.5, "min": 0.0, "gold_has_p2p": True}
    t = rep["times"]["python"]
    assert (t["n"], t["median_s"], t["p90_s"], t["test_share"]) == (3, 100.0, 200.0, round(80 / 300, 3))

    disk = rep["disk"]["languages"]
    assert disk["python"] == {"verified": 2, "found": 2, "median_bytes": 500, "total_bytes": 1000, "missing": []}
    assert disk["rust"]["found"] == 1 and disk["rust"]["total_bytes"] == 900  # image id from the pool
    assert unique_sizes(DF)[0]["sha256:ddd"] is None  # the engine did not compute SharedSize

    md = render_markdown(rep)
    for heading in ("## 1. Per repository", "### Network-bound (1", "### Not run (1)", "## 2. Totals per language",
                    "## 3. Failures by cause", "### Repositories at 0 verified (2 with a finished or network-bound row)", "## 4. PASS_TO_PASS",
                    "## 5. Time per instance", "## 6. Disk per verified instance"):
        assert heading in md
    assert "- net-1: gold FAIL_TO_PASS tests need httpbin.org" in md and "- py-3 (o/py): running" in md
    assert "| 2 | env_failed | go-1 |" in md
    assert "every language >= 70%: **not met** (go 0.0%, python 33.3%)" in md
    assert "per language where gold has any: **not met** (python 0.50)" in md


def test_targets_met_when_every_row_verifies_with_gold_lists(tmp_path):
    inst = _inst("a-1", "o/a", "python", ["t.py::a"], ["t.py::p"])
    (tmp_path / "i.jsonl").write_text(inst.model_dump_json() + "\n")
    _write(tmp_path / "w", inst, InstanceResult(instance_id="a-1", repo="o/a", outcome="verified",
                                                FAIL_TO_PASS=["t.py::a"], PASS_TO_PASS=["t.py::p"]))
    rep = build_report(tmp_path / "i.jsonl", [tmp_path / "w"], None, df=None, df_note="docker unavailable: test")
    assert [t["verdict"] for t in rep["languages"]["targets"].values()] == ["met", "met", "met"]
    assert rep["disk"] == {"available": False, "note": "docker unavailable: test", "languages": {}}
    assert "docker unavailable: test" in render_markdown(rep)


def test_core_check_compares_with_an_earlier_run(tmp_path):
    inst_file, workdirs, _, net = _world(tmp_path)
    core = tmp_path / "core.txt"
    core.write_text("py-1\ngo-1\nnet-1\n")
    w0 = tmp_path / "w0"
    by = {i.instance_id: i for i in INSTANCES}
    _write(w0, by["py-1"], _res("py-1", "verified", FAIL_TO_PASS=["t.py::a"], PASS_TO_PASS=["t.py::p1"]))
    _write(w0, by["go-1"], _res("go-1", "verified", FAIL_TO_PASS=["TestA"]))
    rep = build_report(inst_file, workdirs, None, network_file=net, core_ids=core, compare_to=w0)
    c = rep["core"]
    assert (c["ids"], c["finished"], c["verified"], c["exact"], c["network_bound"]) == (3, 3, 1, 1, ["net-1"])
    assert (c["compare_totals"]["lost"], c["compare_totals"]["same_outcome_lists_differ"]) == (1, 1)
    assert {r["instance_id"] for r in c["compare"]} == {"py-1", "go-1", "net-1"}
    assert "## 7. Core check" in render_markdown(rep)


def test_memory_arms_are_compared_over_the_ids_every_arm_finished(tmp_path):
    (tmp_path / "i.jsonl").write_text("".join(_inst(f"x-{n}", "o/x", "go", ["TestA"]).model_dump_json() + "\n"
                                              for n in (1, 2, 3)))
    ids = tmp_path / "ids.txt"
    ids.write_text("x-1\nx-2\nx-3\n")
    late = [RoundRecord(round=1, outcome="tests_not_run", attribution="toolchain: io/fs", feedback="replan: go 1.16"),
            RoundRecord(round=2, outcome="verified")]

    def row(iid: str, rounds: list[RoundRecord]) -> InstanceResult:
        return InstanceResult(instance_id=iid, repo="o/x", outcome="verified", FAIL_TO_PASS=["TestA"],
                              round=len(rounds), rounds=rounds)
    one = [RoundRecord(round=1, outcome="verified")]
    arms = {"both": tmp_path / "a1", "off": tmp_path / "a2", "after": tmp_path / "a3"}
    for name, iids in (("both", ("x-1", "x-2")), ("off", ("x-1",)), ("after", ("x-1", "x-2"))):
        for iid in iids:
            _write(arms[name], _inst(iid, "o/x", "go", ["TestA"]), row(iid, late if name == "both" else one))
    out = tmp_path / "r.json"
    argv = ["-i", str(tmp_path / "i.jsonl"), "--ids-file", str(ids), "--json", str(out)]
    for name, w in arms.items():
        argv += ["--arm", f"{name}={w}"]
    assert main(argv) == 0
    a = json.loads(out.read_text())["arms"]
    assert a["ids"] == 3 and a["common"] == ["x-1"]
    by = {s["arm"]: s for s in a["arms"]}
    assert (by["both"]["finished"], by["both"]["instances"], by["off"]["finished"]) == (2, 1, 1)
    assert (by["both"]["verified_round_ge2"], by["both"]["by_feedback"]) == (1, {"replan (toolchain)": 1})
    assert (by["off"]["verified_round_ge2"], by["both"]["rounds_per_instance"], by["off"]["rounds_per_instance"]) \
        == (0, 2.0, 1.0)


def test_cli_writes_markdown_and_the_same_numbers_as_json(tmp_path, capsys):
    inst_file, workdirs, ids, net = _world(tmp_path)
    out = tmp_path / "r.json"
    argv = ["-i", str(inst_file), "--ids-file", str(ids), "--network-bound", str(net), "--no-docker",
            "--json", str(out)]
    for w in workdirs:
        argv += ["--workdir", str(w)]
    assert main(argv) == 0
    md = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["set"]["both"] == 2 and data["disk"]["available"] is False
    assert "docker unavailable: --no-docker" in md and "| **all** | 6 |" in md


def test_a_repository_without_any_finished_row_is_named_not_dropped(tmp_path):
    a, b = _inst("a-1", "o/a", "python", ["t.py::a"]), _inst("b-1", "o/b", "ruby", ["spec/x_spec.rb"])
    (tmp_path / "i.jsonl").write_text(a.model_dump_json() + "\n" + b.model_dump_json() + "\n")
    (tmp_path / "ids.txt").write_text("a-1\nb-1\n")
    _write(tmp_path / "w", a, InstanceResult(instance_id="a-1", repo="o/a", outcome="verified", FAIL_TO_PASS=["t.py::a"]))
    rep = build_report(tmp_path / "i.jsonl", [tmp_path / "w"], tmp_path / "ids.txt", df=None)
    assert rep["languages"]["languages"]["ruby"] == {**rep["languages"]["languages"]["ruby"], "instances": 1,
                                                     "not_run": 1, "share": 0.0, "target": "not met"}
    md = render_markdown(rep)
    assert "- b-1 (o/b): not started" in md and "No finished row yet (1): o/b" in md


def test_extra_fail_to_pass_the_test_patch_adds_is_said_so_in_the_failure_groups(tmp_path):
    # gin-1957: ours adds binding::TestHeaderBinding (added by the test_patch, fails before:
    # its package does not build; passes after) to gold's one id; py-2's extra is untouched
    tp = ("diff --git a/binding/b_test.go b/binding/b_test.go\n--- a/binding/b_test.go\n+++ b/binding/b_test.go\n"
          "@@ -1,1 +1,3 @@\n package binding\n+func TestHeaderBinding(t *testing.T) {\n+}\n")
    go = Instance(instance_id="gin-1", repo="o/gin", base_commit="b" * 40, patch="p", test_patch=tp, language="go",
                  FAIL_TO_PASS=["TestContextBindHeader"])
    inst_file = tmp_path / "instances.jsonl"
    inst_file.write_text("".join(i.model_dump_json() + "\n" for i in [*INSTANCES, go]))
    w = tmp_path / "w"
    _write(w, go, InstanceResult(instance_id="gin-1", repo="o/gin", outcome="verified", timings={"total": 5.0},
                                 FAIL_TO_PASS=["TestContextBindHeader", "binding::TestHeaderBinding"]))
    by = {i.instance_id: i for i in INSTANCES}
    _write(w, by["py-2"], _res("py-2", "verified", FAIL_TO_PASS=["t.py::b", "t.py::x"], timings={"total": 9.0}))
    ids = tmp_path / "ids.txt"
    ids.write_text("gin-1\npy-2\n")
    rep = build_report(inst_file, [w], ids, network_file=None, df=None)
    rows = {r["instance_id"]: r for r in rep["rows"]}
    assert (rows["gin-1"]["f2p_extra"], rows["gin-1"]["f2p_extra_touched"]) == (1, 1)
    assert (rows["py-2"]["f2p_extra"], rows["py-2"]["f2p_extra_touched"]) == (1, 0)
    causes = {g["example"]: g["cause"] for g in rep["failures"]}
    assert "every extra a test the test_patch adds or changes" in causes["gin-1"]
    assert "test_patch adds" not in causes["py-2"]
    assert not rows["gin-1"]["exact"]  # still short of gold: counted as such


def test_a_build_that_needs_an_unreachable_source_is_network_bound_with_its_cause(tmp_path):
    # an env_failed row naming Packagist (the row's field), an older ledger line naming RubyGems only
    # in its reason, and a no_fail_to_pass row whose reason mentions a host: only the first two are
    # set apart; the whole-set line still counts them as not verified
    php, rb, py = (_inst("php-1", "o/php", "php", ["T::a"]), _inst("rb-1", "o/rb", "ruby", ["spec/a_spec.rb"]),
                   _inst("py-9", "o/py9", "python", ["t.py::a"]))
    inst_file = tmp_path / "i.jsonl"
    inst_file.write_text("".join(i.model_dump_json() + "\n" for i in (php, rb, py)))
    (tmp_path / "ids.txt").write_text("php-1\nrb-1\npy-9\n")
    w = tmp_path / "w"
    refusal = "Packagist (repo.packagist.org) is unreachable and o/php has no vendored dependencies: composer"
    _write(w, php, InstanceResult(instance_id="php-1", repo="o/php", outcome="env_failed", reason=f"php:php: {refusal}",
                                  unreachable=f"Packagist (repo.packagist.org): {refusal}"))
    _write(w, py, InstanceResult(instance_id="py-9", repo="o/py9", outcome="no_fail_to_pass",
                                 reason="no test fails before; Could not resolve host: example.org"))
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text(json.dumps({"instance_id": "rb-1", "repo": "o/rb", "outcome": "env_failed", "exact": False,
                                  "f2p_recall": 0.0, "f2p_precision": 1.0, "seconds": 0.1, "reason":
                                  "ruby:ruby: RubyGems (rubygems.org) is unreachable and o/rb has no vendored "
                                  "dependencies: bundle install cannot run"}) + "\n")
    rep = build_report(inst_file, [w], tmp_path / "ids.txt", network_file=None, df=None, ledgers=[ledger])
    rows = {r["instance_id"]: r for r in rep["rows"]}
    assert rows["php-1"]["network_bound"].startswith("the build needs Packagist (repo.packagist.org), which this host")
    assert rows["rb-1"]["network_bound"].startswith("the build needs RubyGems (rubygems.org)")
    assert rows["py-9"]["network_bound"] is None
    lt = rep["languages"]
    assert set(lt["languages"]) == {"python"} and lt["set"]["instances"] == 1
    assert lt["set"]["every"] == {"instances": 3, "both": 0, "share": 0.0}
    md = render_markdown(rep)
    assert "- php-1: the build needs Packagist" in md and "0 of 3 verified with recall and precision 1.0" in md

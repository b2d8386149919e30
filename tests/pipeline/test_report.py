"""`swemint report`: the numbers, and one self-contained HTML page with the plots."""

from __future__ import annotations

import pytest

from agents.models import Instance, InstanceResult
from pipeline.report import cause, normalise_reason, summarise, write_report
from pipeline.store import ResultStore


def _rows():
    mk = lambda i, lang, **kw: (Instance(instance_id=i, repo=f"o/{lang}", base_commit="b", patch="p", test_patch="t",
                                         language=lang), InstanceResult(instance_id=i, repo=f"o/{lang}", **kw))
    return [mk("a", "python", outcome="verified", timings={"setup": 10.0, "total": 20.0}, finished_at="1",
               llm_usage={"total": {"prompt_tokens": 100, "completion_tokens": 20}}),
            mk("b", "python", outcome="verified", reused_from="a", timings={"setup": 2.0, "total": 6.0}, finished_at="2"),
            mk("c", "go", outcome="env_failed", reason="go setup step failed (exit 1): go mod download", timings={"total": 4.0},
               finished_at="3")]


def test_summary_counts_phases_yield_reuse_and_causes():
    rows = _rows()
    s = summarise([r for _, r in rows], {i.instance_id: i for i, _ in rows})
    assert s["by_language"] == {"go": {"env_failed": 1}, "python": {"verified": 2}}
    assert s["phases"]["setup"] == {"median": 6.0, "p90": 10.0, "n": 2}
    assert s["curve"][-1] == {"seconds": 30.0, "tokens": 120, "verified": 2}
    assert s["reuse"]["python"] == {"verified": 2, "reused": 1}
    assert s["causes"] == {"env_failed: go setup step failed": 1}


def test_cause_drops_numbers_and_quotes():
    assert cause("Python 3.8 cannot be provided 'x': y") == "Python N.N cannot be provided …"


def test_like_reasons_normalise_to_one_text():
    a = normalise_reason("o__a-1: go build failed (exit 1) at 09a3650c97 in /testbed/x/y.go:12", "o__a-1", "o/a")
    b = normalise_reason("o__a-22: go build failed (exit 2) at 1234abcdef in /testbed/z.go:9", "o__a-22", "o/a")
    assert a == b == "<id>: go build failed (exit N) at <hash> in <path>:N"
    assert normalise_reason("t/test_x.py::TestA::test_b[1] failed; defaced") == "<test> failed; defaced"
    assert normalise_reason("") == "unknown"


def _stored(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    store = ResultStore(tmp_path)
    for i, r in _rows():
        store.mark_running(i)
        store.write_result(r)


def test_html_is_one_file_with_embedded_plots(tmp_path):
    _stored(tmp_path)
    html = write_report(tmp_path).read_text()
    assert html.count("<img") >= 5 and "data:image/png;base64," in html and "http" not in html.split("<body>")[1][:200]
    for title in ("Outcomes per language", "Time per phase", "Verified yield", "Reuse share", "Failure causes"):
        assert title in html


def _funnel_report(tmp_path):
    from pipeline.funnel import cost_block, funnel, write_report as write_funnel

    rows = [r for _, r in _rows()]
    run = funnel(repos_listed=2, repos_rejected=1, seen=9, rejected={"no_test_change": 4}, errors=1, accepted=3,
                 results=rows)
    run["cost"] = cost_block(30.0, 12.0, 120, run["minted"]["verified"])
    cum = funnel(repos_listed=2, repos_rejected=1, seen=20, rejected={"no_test_change": 6, "not_pr_like": 2},
                 errors=1, accepted=5, results=rows)
    cum["cost"] = cost_block(60.0, 24.0, 120, cum["minted"]["verified"])
    write_funnel(tmp_path, run, cum)


def test_funnel_rows_read_this_run_and_cumulative(tmp_path):
    from pipeline.report import funnel_rows, read_funnel

    assert read_funnel(tmp_path) is None  # `swemint mint` work directories have no funnel
    _funnel_report(tmp_path)
    got = {name: (run, cum) for name, run, cum in funnel_rows(read_funnel(tmp_path))}
    assert got["repositories discovered"] == (3, 3) and got["units seen"] == (9, 20)
    assert got["rejected: no_test_change"] == (4, 6) and got["rejected: not_pr_like"] == (0, 2)
    assert got["accepted"] == (3, 5) and got["verified"] == (2, 2) and got["outcome: env_failed"] == (1, 1)
    assert "outcome: timeout" not in got  # outcomes nobody had are left out
    assert got["wall seconds per verified task"] == (15.0, 30.0) and got["LLM tokens per verified task"] == (60.0, 60.0)


def test_html_shows_the_funnel_when_the_work_directory_has_one(tmp_path):
    _stored(tmp_path)
    assert "Yield funnel" not in write_report(tmp_path).read_text()
    _funnel_report(tmp_path)
    page = write_report(tmp_path).read_text()
    assert "<h2>Yield funnel</h2>" in page
    assert "<tr><td>rejected: no_test_change</td><td>4</td><td>6</td></tr>" in page
    assert "<tr><td>CPU-seconds per verified task</td><td>6.0</td><td>12.0</td></tr>" in page


def test_funnel_plot_and_its_stages(tmp_path):
    from pipeline.report import funnel_stages, read_funnel

    _stored(tmp_path)
    _funnel_report(tmp_path)
    assert funnel_stages(read_funnel(tmp_path)) == [("repositories discovered", 3, 3), ("units seen", 9, 20),
                                                    ("accepted", 3, 5), ("minted", 3, 3), ("verified", 2, 2)]
    assert "Yield funnel of swemint run" in write_report(tmp_path).read_text()


def test_count_axes_are_integers_and_empty_plots_are_left_out(monkeypatch):
    pytest.importorskip("matplotlib")
    import matplotlib.pyplot as plt

    from pipeline import report

    made = []
    monkeypatch.setattr(report, "_png", lambda fig: made.append(fig) or "data:")  # keep the figures to look at
    rows = [(i, r.model_copy(update={"llm_usage": None})) for i, r in _rows()]  # no LLM used
    figs = report.figures(summarise([r for _, r in rows], {i.instance_id: i for i, _ in rows}))
    assert "Verified yield against time" in figs and not any("tokens" in t for t in figs)  # no vertical line
    counted = 0
    for fig in made:
        for ax in fig.axes:
            for label, ticks in ((ax.get_ylabel(), ax.get_yticks()), (ax.get_xlabel(), ax.get_xticks())):
                if label in ("instances", "verified", "verified instances"):
                    counted += 1
                    assert all(float(t).is_integer() for t in ticks), (label, list(ticks))
        plt.close(fig)
    assert counted == 5  # per language, per repository, yield, reuse, causes
    one = [_rows()[2]]  # one failed instance: no yield curve, no reuse plot
    figs = report.figures(summarise([r for _, r in one], {i.instance_id: i for i, _ in one}))
    assert set(figs) == {"Outcomes per language", "Outcomes per repository", "Time per phase", "Failure causes"}


def test_the_page_drills_into_instances_evaluations_and_bench(tmp_path):
    import json

    _stored(tmp_path)
    store = ResultStore(tmp_path)
    (store.dir("c") / "run.log").write_text("log of c\n")
    (store.dir("c") / "trajectory.jsonl").write_text("{}\n")
    ev = tmp_path / "evaluations" / "gold"
    (ev / "gold").mkdir(parents=True)
    (ev / "gold" / "a.log").write_text("graded\n")
    (ev / "report.json").write_text(json.dumps({
        "resolved_instances": 1, "unresolved_instances": 0, "error_instances": 0, "empty_patch_instances": 0,
        "submitted_instances": 1, "unknown_ids": [],
        "instances": {"a": {"model_name_or_path": "gold", "resolved": True, "seconds": 4.0,
                            "tests_status": {"FAIL_TO_PASS": {"success": ["t1"], "failure": []}}}}}))
    (tmp_path / "bench.json").write_text(json.dumps({"aggregate": {"n": 1, "mean_f2p_recall": 1.0},
                                                     "instances": [{"instance_id": "a", "outcome": "verified",
                                                                    "f2p_recall": 1.0}]}))
    page = write_report(tmp_path).read_text()
    row = page[page.index("<tr id='c'>"):].split("</tr>")[0]
    assert "env_failed" in row and "go setup step failed (exit 1): go mod download" in row
    assert "<a href='instances/c/run.log'>run.log</a>" in row and "instances/c/trajectory.jsonl" in row
    assert page.index("<tr id='a'>") < page.index("<tr id='c'>")  # verified first
    assert "<h2>swemint eval: gold</h2>" in page and "<a href='evaluations/gold/gold/a.log'>log</a>" in page
    assert "<td>1/1</td>" in page and "<h2>swemint bench</h2>" in page and "mean_f2p_recall 1.000" in page
    # written elsewhere, the links still lead to the work directory's files
    other = tmp_path / "out" / "r.html"
    other.parent.mkdir()
    assert "<a href='../instances/c/run.log'>" in write_report(tmp_path, other).read_text()

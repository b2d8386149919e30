"""`swemint report`: the numbers, and one self-contained HTML page with the plots."""

from __future__ import annotations

import pytest

from agents.models import Instance, InstanceResult
from pipeline.report import cause, summarise, write_report
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


def test_html_is_one_file_with_embedded_plots(tmp_path):
    pytest.importorskip("matplotlib")
    store = ResultStore(tmp_path)
    for i, r in _rows():
        store.mark_running(i)
        store.write_result(r)
    html = write_report(tmp_path).read_text()
    assert html.count("<img") >= 5 and "data:image/png;base64," in html and "http" not in html.split("<body>")[1][:200]
    for title in ("Outcomes per language", "Time per phase", "Verified yield", "Reuse share", "Failure causes"):
        assert title in html

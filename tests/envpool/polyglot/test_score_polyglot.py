"""scripts/score_polyglot.py's per-instance scoring with the separator-bounded gold matcher."""

import importlib.util
from pathlib import Path

spec = importlib.util.spec_from_file_location(
    "score_polyglot", Path(__file__).resolve().parents[3] / "scripts" / "score_polyglot.py")
score_polyglot = importlib.util.module_from_spec(spec)
spec.loader.exec_module(score_polyglot)


def test_go_ids_match_gold_without_package_but_not_verbatim():
    s = score_polyglot.score_row(["github.com/gin-gonic/gin::TestContextBindHeader"], [],
                                 ["TestContextBindHeader"], [])
    assert (s["f2p_recall"], s["f2p_precision"], s["exact_form"], s["p2p_agreement"]) == (1.0, 1.0, 0.0, None)


def test_extra_ids_of_ours_lower_precision_and_missing_gold_lowers_recall():
    s = score_polyglot.score_row(["com.x.ATest#testA", "com.x.ATest#testB"], ["com.x.ATest#testC"],
                                 ["com.x.ATest#testA", "com.x.ATest#testD"], ["com.x.ATest#testC"])
    assert s["f2p_recall"] == 0.5 and s["f2p_precision"] == 0.5 and s["p2p_agreement"] == 1.0


def test_a_longer_mocha_title_is_not_the_shorter_one():
    s = score_polyglot.score_row(["suite should support max body length"], [],
                                 ["suite should support max body length (follow-redirects as well)"], [])
    assert s["f2p_recall"] == 0.0 and s["f2p_precision"] == 0.0

"""Issue references in PR texts and timeline evidence."""

from __future__ import annotations

from datetime import datetime, timezone

from pipeline.sources.linking import find_issue_refs, timeline_confirms

REPO = "acme/widgets"


def test_closing_keywords_are_strong():
    body = "Fixes #1, closes #2 and RESOLVED: #3.\nresolves acme/widgets#4"
    refs = find_issue_refs(REPO, ["Fix crash", body])
    assert refs.strong == (1, 2, 3, 4) and refs.weak == ()


def test_urls_and_other_repositories():
    refs = find_issue_refs(REPO, ["fixes https://github.com/acme/widgets/issues/7",
                                  "fixes other/repo#8 and see https://github.com/other/repo/issues/9"])
    assert refs.strong == (7,) and refs.weak == ()


def test_bare_mentions_are_weak_and_noise_is_ignored():
    refs = find_issue_refs(REPO, ["See #5 and #6", "fixes #6; color &#35; foo#12 pr #10"], own_number=10)
    assert refs.strong == (6,) and refs.weak == (5,)


def test_no_references():
    assert find_issue_refs(REPO, [None, "Bump version", ""]).all == ()


MERGED = datetime(2023, 4, 10, 12, 0, tzinfo=timezone.utc)


def test_closed_by_the_merge_commit():
    assert timeline_confirms([{"event": "closed", "commit_id": "abc"}], 11, "abc", MERGED)
    assert not timeline_confirms([{"event": "closed", "commit_id": "zzz"}], 11, "abc", MERGED)


def test_cross_reference_then_prompt_close():
    events = [{"event": "cross-referenced", "source": {"issue": {"number": 11}}},
              {"event": "closed", "commit_id": None, "created_at": "2023-04-10T12:00:04Z"}]
    assert timeline_confirms(events, 11, None, MERGED)
    late = [events[0], {"event": "closed", "commit_id": None, "created_at": "2023-04-12T12:00:00Z"}]
    assert not timeline_confirms(late, 11, None, MERGED)
    other_pr = [{"event": "cross-referenced", "source": {"issue": {"number": 99}}}, events[1]]
    assert not timeline_confirms(other_pr, 11, None, MERGED)


def test_connected_event():
    assert timeline_confirms([{"event": "connected"}, {"event": "closed"}], 11, None, MERGED)
    assert not timeline_confirms([{"event": "connected"}], 11, None, MERGED)  # still open

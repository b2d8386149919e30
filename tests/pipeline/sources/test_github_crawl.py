"""End-to-end crawls of the hand-written fake GitHub (tests/data/github) through PyGithub."""

from __future__ import annotations

import json
import logging
import re

import duckdb

from pipeline.sources import ApiCounter, crawl
from tests.pipeline.sources.support import TOKEN, make_config

EXPECTED = {
    "acme__widgets-9": "not_merged", "acme__widgets-12": "issue_not_closed",
    "acme__widgets-13": "issue_not_confirmed", "acme__widgets-14": "no_test_change",
    "acme__widgets-15": "no_code_change", "acme__widgets-16": "not_merged",
    "acme__widgets-17": "no_issue_reference", "acme__widgets-18": "low_quality",
    "acme__widgets-19": "issue_is_pull_request", "acme__widgets-20": "issue_not_found",
    "acme__widgets-21": "outside_window",
    "repo:acme/mixed": "repo_language_share", "repo:acme/quiet": "repo_issues",
}


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_pairs_and_rejects_with_reasons(server, sleeps, env, tmp_path):
    report = crawl(make_config(server), tmp_path, sleep=sleeps, environ=env)
    rows = {r["instance_id"]: r for r in read_jsonl(tmp_path / "crawl" / "instances.jsonl")}
    rejects = {r["key"]: r for r in read_jsonl(tmp_path / "crawl" / "rejects.jsonl")}

    assert sorted(rows) == ["acme__widgets-10", "acme__widgets-11"]
    assert {k: r["reason"] for k, r in rejects.items()} == EXPECTED
    assert all(r["detail"] for k, r in rejects.items() if r["reason"].startswith("repo_"))
    assert "failed: problem_length, issue_body" in rejects["acme__widgets-18"]["detail"]
    assert report.repos == ["acme/widgets"] and report.repos_rejected == 2
    assert (report.accepted, report.rejected, report.errors) == (2, 13, 0)
    assert server.count(path_contains="acme/tiny") == 0  # filtered out by the search query itself

    r10 = rows["acme__widgets-10"]
    assert r10["repo"] == "acme/widgets" and r10["base_commit"] == "a1" * 20
    assert r10["problem_statement"].startswith("Crash on empty config file\nLoading an empty")
    # only the comment made before the PR's first commit (2023-03-01T08:00Z) is a hint
    assert r10["hints_text"] == "Same here on 1.4.2; the loader returns None."
    assert r10["created_at"] == "2023-03-01T09:00:00Z" and r10["language"] == "python"
    assert r10["FAIL_TO_PASS"] == [] and r10["issue_numbers"] == [1]
    assert "src/widgets/config.py" in r10["patch"] and "tests/" not in r10["patch"]
    assert r10["test_patch"].startswith("diff --git a/tests/test_config.py")
    # a weak mention (#2) counts because the timeline shows PR 11's merge commit closed it
    assert rows["acme__widgets-11"]["issue_numbers"] == [2]
    assert "tests/data/names.csv" in rows["acme__widgets-11"]["test_patch"]


def test_pagination_follows_link_headers(server, sleeps, env, tmp_path):
    crawl(make_config(server), tmp_path, sleep=sleeps, environ=env)
    pages = [r["path"] for r in server.requests if r["path"].startswith("/repos/acme/widgets/pulls?")]
    assert len(pages) == 3  # 13 closed PRs, 5 per page
    assert "page=2" in pages[1] and "page=3" in pages[2]


def test_repeat_crawl_costs_only_conditional_listing_calls(server, sleeps, env, tmp_path):
    cfg = make_config(server)
    crawl(cfg, tmp_path, sleep=sleeps, environ=env)
    listing = [r["path"] for r in server.requests if not re.search(r"/(pulls|issues)/\d", r["path"])]
    server.reset_log()
    again = crawl(cfg, tmp_path, sleep=sleeps, environ=env)
    # nothing is examined again; the discovery and listing calls are repeated, all answered 304
    assert again.examined == 0 and again.accepted == 0
    assert [r["path"] for r in server.requests] == listing
    assert again.api["requests"] == server.count(status=304) == len(listing)
    assert again.api["charged"] == 0
    assert len((tmp_path / "crawl" / "instances.jsonl").read_text().splitlines()) == 2


def test_revisit_is_answered_from_the_cache(server, sleeps, env, tmp_path):
    first = crawl(make_config(server), tmp_path, sleep=sleeps, environ=env)
    server.reset_log()
    again = crawl(make_config(server, github={"pairs": {"revisit": True}}), tmp_path,
                  sleep=sleeps, environ=env)
    assert again.examined == first.examined and again.accepted == 2
    assert server.count(status=200) == 0 and server.count(status=404) == 1  # issue #404
    assert again.api["not_modified"] == first.api["requests"] - 1


def test_if_modified_since_without_etags(sleeps, env, tmp_path):
    from tests.fakes.github_server import FakeGitHub

    with FakeGitHub(etags=False) as srv:
        cfg = make_config(srv, github={"discovery": None, "repos": ["acme/widgets"]})
        crawl(cfg, tmp_path, sleep=sleeps, environ=env)
        srv.reset_log()
        again = crawl(cfg, tmp_path, sleep=sleeps, environ=env)
        assert again.api["not_modified"] >= 1  # the repository (it has updated_at) and pages
        assert srv.count(status=304, path_contains="/repos/acme/widgets") >= 1


def test_rate_limits_are_honoured_without_waiting(server, sleeps, env, tmp_path):
    server.fail("primary", "/pulls?", reset_in=30)
    server.fail("secondary", "/issues/1", retry_after=7)
    server.fail("server_error", "/pulls/10")
    counter = ApiCounter()
    report = crawl(make_config(server), tmp_path, sleep=sleeps, environ=env, counter=counter)
    assert report.accepted == 2 and report.errors == 0
    assert counter.primary_waits == 1 and counter.secondary_waits == 1 and counter.retries == 3
    assert 29 <= sleeps[0] <= 32  # until X-RateLimit-Reset (+1 s)
    assert 7 in sleeps and 0.5 in sleeps  # Retry-After; exponential backoff after the 502
    assert server.count(status=403) == server.count(status=429) == server.count(status=502) == 1


def test_transport_sees_every_request(server, sleeps, env, tmp_path):
    """Guards the PyGithub hook: nothing may bypass the counting, caching transport."""
    report = crawl(make_config(server), tmp_path, sleep=sleeps, environ=env)
    assert report.api["requests"] == server.count() > 0


def test_token_is_sent_but_never_logged_or_written(server, sleeps, env, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")  # PyGithub's request/response debug log
    server.fail("server_error", "/pulls/10", times=10)  # retries, then an infra_error row
    server.fail("secondary", "/search/", retry_after=1)
    report = crawl(make_config(server), tmp_path, sleep=sleeps, environ=env)
    assert report.errors == 1  # PR 10 after its attempts ran out
    assert server.auth_headers == {f"token {TOKEN}"}
    assert caplog.records and any(r.name.startswith("github") for r in caplog.records)
    assert "token (oauth token removed)" in caplog.text  # headers were logged, masked
    assert TOKEN not in caplog.text
    assert all(TOKEN not in r.getMessage() for r in caplog.records)
    for path in (tmp_path / "crawl").rglob("*"):
        if path.is_file():
            assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in report.model_dump_json()


def test_infra_error_is_a_row_and_retried_next_run(server, sleeps, env, tmp_path):
    server.fail("server_error", "/pulls/10", times=6)  # max_attempts = 6
    first = crawl(make_config(server), tmp_path, sleep=sleeps, environ=env)
    rejects = {r["key"]: r for r in read_jsonl(tmp_path / "crawl" / "rejects.jsonl")}
    assert rejects["acme__widgets-10"]["reason"] == "infra_error" and first.errors == 1
    second = crawl(make_config(server), tmp_path, sleep=sleeps, environ=env, since_last=True)
    assert second.accepted == 1 and second.errors == 0
    rows = read_jsonl(tmp_path / "crawl" / "instances.jsonl")
    assert sorted(r["instance_id"] for r in rows) == ["acme__widgets-10", "acme__widgets-11"]


def test_explicit_go_repository_split(server, sleeps, env, tmp_path):
    cfg = make_config(server, github={"discovery": None, "repos": ["acme/gizmo"]})
    report = crawl(cfg, tmp_path, sleep=sleeps, environ=env)
    (row,) = read_jsonl(tmp_path / "crawl" / "instances.jsonl")
    assert report.repos == ["acme/gizmo"] and row["instance_id"] == "acme__gizmo-3"
    assert "pkg/gizmo/parse.go" in row["patch"] and "_test.go" not in row["patch"]
    assert "parse_test.go" in row["test_patch"] and "testdata/crlf.txt" in row["test_patch"]
    assert row["language"] == "go" and row["issue_numbers"] == [1]  # "Closes: #1"


def test_watermarks_are_stored_per_repository(server, sleeps, env, tmp_path):
    crawl(make_config(server), tmp_path, sleep=sleeps, environ=env)
    db = duckdb.connect(str(tmp_path / "crawl" / "state.duckdb"), read_only=True)
    marks = db.execute("SELECT repo, updated_at FROM watermarks").fetchall()
    db.close()
    assert [(r, str(t)) for r, t in marks] == [("acme/widgets", "2023-05-25 08:00:00")]


def test_missing_repository_and_failing_search_are_rows(server, sleeps, env, tmp_path):
    server.fail("server_error", "/search/repositories", times=6)
    cfg = make_config(server, github={"repos": ["acme/nope", "acme/gizmo"]})
    report = crawl(cfg, tmp_path, sleep=sleeps, environ=env)
    rejects = {r["key"]: r for r in read_jsonl(tmp_path / "crawl" / "rejects.jsonl")}
    assert rejects["repo:acme/nope"]["reason"] == "repo_not_found"
    assert rejects["discovery"]["reason"] == "infra_error" and "502" in rejects["discovery"]["detail"]
    assert report.repos == ["acme/gizmo"] and report.accepted == 1

"""The HTTP transport alone (a plain requests Session against the fake server)."""

from __future__ import annotations

import pytest
import requests

from pipeline.sources.httpcache import HttpCache
from pipeline.sources.crawl_config import ApiConfig
from pipeline.sources.source_errors import RateLimitExhausted
from pipeline.sources.transport import GitHubTransport


def _session(srv, tmp_path, sleeps, cache=True, **api):
    t = GitHubTransport(ApiConfig(base_url=srv.base_url, backoff_initial=0.25, **api),
                        HttpCache(tmp_path / "cache") if cache else None, sleep=sleeps)
    s = requests.Session()
    s.mount("http://", t)
    return s, t


def test_304_is_served_from_the_cache(server, tmp_path, sleeps):
    s, t = _session(server, tmp_path, sleeps)
    url = f"{server.base_url}/repos/acme/widgets/pulls?state=closed&per_page=5"
    first = s.get(url)
    second = s.get(url)
    assert first.status_code == second.status_code == 200
    assert second.json() == first.json() and second.headers["Link"] == first.headers["Link"]
    assert [r["status"] for r in server.requests] == [200, 304]
    assert t.counter.not_modified == 1 and t.counter.charged == 1


def test_cache_key_includes_accept(server, tmp_path, sleeps):
    s, _ = _session(server, tmp_path, sleeps)
    url = f"{server.base_url}/repos/acme/widgets/pulls/10"
    as_json = s.get(url).json()
    diff = s.get(url, headers={"Accept": "application/vnd.github.diff"}).text
    assert as_json["number"] == 10 and diff.startswith("diff --git")
    assert s.get(url, headers={"Accept": "application/vnd.github.diff"}).text == diff
    assert [r["status"] for r in server.requests] == [200, 200, 304]


def test_cache_survives_a_new_transport(server, tmp_path, sleeps):
    url = f"{server.base_url}/repos/acme/widgets"
    _session(server, tmp_path, sleeps)[0].get(url)
    s2, t2 = _session(server, tmp_path, sleeps)
    assert s2.get(url).json()["full_name"] == "acme/widgets"
    assert t2.counter.not_modified == 1


def test_server_errors_and_dropped_connections_are_retried(server, tmp_path, sleeps):
    s, t = _session(server, tmp_path, sleeps, cache=False)
    server.fail("server_error", "/repos/acme/widgets", times=2)
    server.fail("drop", "/repos/acme/widgets")
    assert s.get(f"{server.base_url}/repos/acme/widgets").status_code == 200
    assert t.counter.retries == 3 and sleeps == [0.25, 0.5, 1.0]


def test_retries_run_out_and_the_last_answer_is_returned(server, tmp_path, sleeps):
    s, t = _session(server, tmp_path, sleeps, cache=False, max_attempts=3)
    server.fail("server_error", "/repos/", times=5)
    assert s.get(f"{server.base_url}/repos/acme/widgets").status_code == 502
    assert t.counter.requests == 3


def test_primary_rate_limit_waits_until_reset(server, tmp_path, sleeps):
    s, t = _session(server, tmp_path, sleeps, cache=False)
    server.fail("primary", reset_in=120)
    assert s.get(f"{server.base_url}/repos/acme/widgets").status_code == 200
    assert len(sleeps) == 1 and 119 <= sleeps[0] <= 122 and t.counter.primary_waits == 1


def test_secondary_rate_limit_honours_retry_after(server, tmp_path, sleeps):
    s, t = _session(server, tmp_path, sleeps, cache=False)
    server.fail("secondary", retry_after=42)
    assert s.get(f"{server.base_url}/repos/acme/widgets").status_code == 200
    assert sleeps == [42.0] and t.counter.secondary_waits == 1


def test_too_long_a_wait_raises(server, tmp_path, sleeps):
    s, _ = _session(server, tmp_path, sleeps, cache=False, max_rate_limit_wait=60)
    server.fail("primary", reset_in=3600)
    with pytest.raises(RateLimitExhausted) as e:
        s.get(f"{server.base_url}/repos/acme/widgets")
    assert e.value.wait_s > 3000 and sleeps == []


def test_min_interval_paces_requests(server, tmp_path, sleeps):
    now = [1000.0]
    t = GitHubTransport(ApiConfig(min_interval=0.25), None, clock=lambda: now[0], sleep=sleeps)
    s = requests.Session()
    s.mount("http://", t)
    for _ in range(3):
        s.get(f"{server.base_url}/repos/acme/widgets")
    assert sleeps == [0.25, 0.25]  # the fake clock never moves: each later request waits fully


def test_secondary_limit_as_403_with_retry_after(server, tmp_path, sleeps):
    s, t = _session(server, tmp_path, sleeps, cache=False)
    server.fail("secondary", status=403, retry_after=5)
    assert s.get(f"{server.base_url}/repos/acme/widgets").status_code == 200
    assert sleeps == [5.0] and t.counter.secondary_waits == 1 and server.count(status=403) == 1


def test_quota_used_up_makes_the_next_request_wait(server, tmp_path, sleeps):
    s, t = _session(server, tmp_path, sleeps, cache=False)
    server.remaining = 1  # the next answer says X-RateLimit-Remaining: 0
    assert s.get(f"{server.base_url}/repos/acme/widgets").status_code == 200 and sleeps == []
    server.remaining = 5000
    assert s.get(f"{server.base_url}/repos/acme/widgets").status_code == 200
    assert len(sleeps) == 1 and 3590 <= sleeps[0] <= 3602 and t.counter.primary_waits == 1
    assert server.count(status=403) == 0  # waited instead of running into the limit


def test_client_installs_the_transport_for_https_and_reads_the_token():
    from github.Requester import HTTPSRequestsConnectionClass

    from pipeline.sources.client import install_transport, make_github, read_token
    from pipeline.sources.source_errors import TransportUnavailable

    api = ApiConfig()
    t = GitHubTransport(api)
    gh = make_github(api, t, environ={})
    conn_cls = gh.requester._Requester__connectionClass  # the hook this module relies on
    assert issubclass(conn_cls, HTTPSRequestsConnectionClass)
    conn = conn_cls("api.github.com", 443)
    assert conn.session.get_adapter("https://api.github.com/repos") is t
    assert read_token(api, {"GITHUB_TOKEN": "  "}) is None and read_token(api, {"GITHUB_TOKEN": "x"}) == "x"
    with pytest.raises(TransportUnavailable):
        install_transport(object(), t)  # type: ignore[arg-type]

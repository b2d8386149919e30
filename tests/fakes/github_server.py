"""A fake GitHub REST API on 127.0.0.1 for crawler tests and benchmarks (no network needed).

`FakeGitHub(world)` serves, in GitHub's JSON shapes, what `pipeline.sources` reads:
`/search/repositories`, `/search/issues` (counts), `/repos/{o}/{r}`, `.../languages`,
`.../pulls` (state/sort/direction, `Link` pagination), `.../pulls/{n}` (JSON, or the diff with
`Accept: application/vnd.github.diff`), `.../pulls/{n}/files`, `.../pulls/{n}/commits`,
`.../issues/{n}`, `.../issues/{n}/comments`, `.../issues/{n}/timeline`, `.../commits/{sha}`.

Every 200 carries a weak `ETag` (and `Last-Modified` when the body has `updated_at`); a
matching `If-None-Match` / `If-Modified-Since` gets a 304. Faults are queued with `fail()`:
`primary` (403, `X-RateLimit-Remaining: 0`, reset in `reset_in` s), `secondary` (429 with
`Retry-After`), `server_error` (502), `drop` (connection closed without an answer). Every
request is logged (`requests`, `count()`), and the `Authorization` headers seen are kept.

A *world* is `{"owner/name": {"repo": {...}, "languages": {...}, "counts": {"issues": N,
"pulls": N}, "pulls": [...], "issues": [...]}}`: GitHub objects without their URL fields
(the server adds them); pulls carry `_diff` (text or list of lines) and `_commits`, issues
`_comments` and `_timeline`. `load_world(dir)` reads `tests/data/github/*.json`.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from dataclasses import dataclass
from datetime import datetime
from email.utils import formatdate, parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

FIXTURES = Path(__file__).resolve().parent.parent / "data" / "github"


def load_world(directory: Path = FIXTURES) -> dict:
    """The world made of every `owner__name.json` in `directory`."""
    world = {}
    for path in sorted(directory.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        world[data["repo"]["full_name"]] = data
    return world


@dataclass
class Fault:
    """A queued failure: `kind` primary | secondary | server_error | drop, applied to the next
    `times` requests whose path contains `path_contains`. A secondary limit answers `status`
    (429, or 403 as GitHub also does) with `Retry-After: retry_after`."""

    kind: str
    path_contains: str = ""
    times: int = 1
    retry_after: int = 7
    reset_in: int = 30
    status: int = 429


def _strip(obj: dict) -> dict:
    return {k: v for k, v in obj.items() if not k.startswith("_")}


def _diff_text(pull: dict) -> str:
    d = pull.get("_diff", "")
    return "\n".join(d) + "\n" if isinstance(d, list) else d


class FakeGitHub:
    """The server; use as a context manager (`with FakeGitHub(world) as gh: gh.base_url`).

    `etags=False` serves only `Last-Modified` validators (to exercise If-Modified-Since).
    """

    def __init__(self, world: dict | None = None, *, etags: bool = True):
        self.world = load_world() if world is None else world
        self.etags = etags
        self.faults: list[Fault] = []
        self.requests: list[dict] = []
        self.auth_headers: set[str] = set()
        self.remaining = 5000
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> FakeGitHub:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- test helpers -----------------------------------------------------------------------
    def fail(self, kind: str, path_contains: str = "", times: int = 1, **kw) -> None:
        """Queue a fault (see `Fault`)."""
        with self.lock:
            self.faults.append(Fault(kind, path_contains, times, **kw))

    def count(self, status: int | None = None, path_contains: str = "") -> int:
        """Requests seen, optionally only with this status / path substring."""
        with self.lock:
            return sum(1 for r in self.requests if (status is None or r["status"] == status)
                       and path_contains in r["path"])

    def reset_log(self) -> None:
        """Forget the request log."""
        with self.lock:
            self.requests.clear()

    # -- rendering --------------------------------------------------------------------------
    def render_repo(self, full: str) -> dict:
        r = _strip(self.world[full]["repo"])
        owner, name = full.split("/")
        base = f"{self.base_url}/repos/{full}"
        return {"id": abs(hash(full)) % 10**8, "node_id": f"R_{name}", "name": name,
                "full_name": full, "private": False, "fork": False, "archived": False,
                "default_branch": "main", "owner": {"login": owner, "id": 1, "type": "Organization"},
                "html_url": f"https://github.example/{full}", "url": base,
                "languages_url": f"{base}/languages", "pulls_url": f"{base}/pulls{{/number}}",
                "issues_url": f"{base}/issues{{/number}}", **r}

    def render_pull(self, full: str, p: dict) -> dict:
        n = p["number"]
        base = f"{self.base_url}/repos/{full}"
        out = {"id": 10**6 + n, "node_id": f"PR_{n}", "state": "closed", "draft": False,
               "user": {"login": "dev", "id": 7}, "url": f"{base}/pulls/{n}",
               "html_url": f"https://github.example/{full}/pull/{n}",
               "diff_url": f"https://github.example/{full}/pull/{n}.diff",
               "issue_url": f"{base}/issues/{n}", "commits_url": f"{base}/pulls/{n}/commits",
               **_strip(p)}
        out["base"] = {"ref": "main", "label": f"{full.split('/')[0]}:main", **p.get("base", {})}
        out["head"] = {"ref": f"fix-{n}", "label": f"dev:fix-{n}", **p.get("head", {"sha": "f" * 40})}
        return out

    def render_issue(self, full: str, i: dict) -> dict:
        n = i["number"]
        base = f"{self.base_url}/repos/{full}"
        return {"id": 2 * 10**6 + n, "node_id": f"I_{n}", "user": {"login": "reporter", "id": 8},
                "labels": [], "url": f"{base}/issues/{n}", "comments_url": f"{base}/issues/{n}/comments",
                "html_url": f"https://github.example/{full}/issues/{n}",
                "comments": len(i.get("_comments", [])), **_strip(i)}

    def _pull_as_issue(self, full: str, p: dict) -> dict:
        issue = {k: p.get(k) for k in ("number", "title", "body", "state", "created_at",
                                       "updated_at", "closed_at")}
        issue["pull_request"] = {"url": f"{self.base_url}/repos/{full}/pulls/{p['number']}"}
        return self.render_issue(full, issue)

    def render_event(self, full: str, e: dict) -> dict:
        e = dict(e)
        src = e.get("source", {}).get("issue")
        if src is not None:
            n = src["number"]
            issue = {"number": n, "title": src.get("title", f"#{n}"), "state": "closed",
                     "url": f"{self.base_url}/repos/{full}/issues/{n}"}
            if src.get("pull_request", True):
                issue["pull_request"] = {"url": f"{self.base_url}/repos/{full}/pulls/{n}"}
            e["source"] = {"type": "issue", "issue": issue}
        return {"actor": {"login": "dev", "id": 7}, **e}


def _http_date(iso: str) -> str:
    return formatdate(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp(), usegmt=True)


def _last_modified(body) -> str | None:
    items = body if isinstance(body, list) else [body] if isinstance(body, dict) else []
    stamps = [x["updated_at"] for x in items if isinstance(x, dict) and x.get("updated_at")]
    return _http_date(max(stamps)) if stamps else None


def _handler(server: FakeGitHub):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # else headers and body wait on delayed ACKs (40 ms)

        def log_message(self, *args) -> None:  # quiet
            pass

        def do_GET(self) -> None:
            auth = self.headers.get("Authorization")
            if auth:
                with server.lock:
                    server.auth_headers.add(auth)
            fault = self._fault()
            if fault == "drop":
                self._log(0)
                self.close_connection = True
                return
            if fault:
                return
            status, body, extra = route(server, self.path, self.headers)
            self._answer(status, body, extra)

        def _fault(self) -> str | None:
            with server.lock:
                f = next((f for f in server.faults if f.times > 0 and f.path_contains in self.path), None)
                if f is None:
                    return None
                f.times -= 1
            if f.kind == "drop":
                return "drop"
            if f.kind == "primary":
                self._send(403, {"message": "API rate limit exceeded for user ID 7.",
                                 "documentation_url": "https://docs.github.com/rest/rate-limit"},
                           {"X-RateLimit-Remaining": "0",
                            "X-RateLimit-Reset": str(int(time.time()) + f.reset_in)})
            elif f.kind == "secondary":
                self._send(f.status, {"message": "You have exceeded a secondary rate limit."},
                           {"Retry-After": str(f.retry_after)})
            else:
                self._send(502, {"message": "Server Error"}, {})
            return f.kind

        def _answer(self, status: int, body, extra: dict) -> None:
            if status != 200:
                self._send(status, body, extra)
                return
            raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            etag = 'W/"' + hashlib.sha1(raw).hexdigest() + '"'
            last_mod = _last_modified(body)
            inm, ims = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
            headers = dict(extra)
            if server.etags:
                headers["ETag"] = etag
            if last_mod:
                headers["Last-Modified"] = last_mod
            unchanged_since = bool(inm is None and ims and last_mod and
                                   parsedate_to_datetime(last_mod) <= parsedate_to_datetime(ims))
            if (server.etags and inm == etag) or unchanged_since:
                self._send(304, None, headers)
                return
            self._send(200, raw, headers)

        def _send(self, status: int, body, headers: dict) -> None:
            if status != 304:
                with server.lock:
                    server.remaining = max(0, server.remaining - 1)
            raw = b"" if body is None else body if isinstance(body, bytes) else json.dumps(body).encode()
            self._log(status)  # before answering: a client may look at the log right after
            self.send_response(status)
            hdrs = {"Content-Type": "application/json; charset=utf-8", "X-RateLimit-Limit": "5000",
                    "X-RateLimit-Remaining": str(server.remaining),
                    "X-RateLimit-Reset": str(int(time.time()) + 3600), **headers}
            for k, v in hdrs.items():
                self.send_header(k, v)
            if status != 304:
                self.send_header("Content-Length", str(len(raw)))
            self.end_headers()
            if status != 304:
                self.wfile.write(raw)

        def _log(self, status: int) -> None:
            with server.lock:
                server.requests.append({"method": self.command, "path": self.path, "status": status,
                                        "accept": self.headers.get("Accept", "")})

    return Handler


def paginate(server: FakeGitHub, path: str, query: dict, items: list) -> tuple[list, dict]:
    """One page of `items` by `per_page` / `page`, and a `Link` header (first/prev/next/last)."""
    per_page = max(1, min(100, int(query.get("per_page", ["30"])[0])))
    page = max(1, int(query.get("page", ["1"])[0]))
    last = max(1, -(-len(items) // per_page))
    flat = {k: v[0] for k, v in query.items()}

    def url(p: int) -> str:
        return f"{server.base_url}{path}?{urlencode({**flat, 'per_page': per_page, 'page': p})}"

    rels = []
    if page > 1:
        rels += [f'<{url(1)}>; rel="first"', f'<{url(page - 1)}>; rel="prev"']
    if page < last:
        rels += [f'<{url(page + 1)}>; rel="next"', f'<{url(last)}>; rel="last"']
    return items[(page - 1) * per_page: page * per_page], ({"Link": ", ".join(rels)} if rels else {})


def split_path(raw: str) -> tuple[str, dict]:
    """(path, parsed query) of a request target."""
    parts = urlsplit(raw)
    return re.sub(r"/+$", "", parts.path) or "/", parse_qs(parts.query)


# -- routes ---------------------------------------------------------------------------------

_NOT_FOUND = (404, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}, {})


def _search_repos(server: FakeGitHub, q: str) -> list[dict]:
    def ok(repo: dict) -> bool:
        for tok in q.split():
            key, _, val = tok.partition(":")
            val = val.strip('"')
            if key == "language" and (repo.get("language") or "").lower() != val.lower():
                return False
            if key in ("stars", "forks"):
                have = repo.get("stargazers_count" if key == "stars" else "forks_count", 0)
                m = re.match(r"(>=|>|<=|<)?(\d+)", val)
                op, num = (m.group(1) or ">="), int(m.group(2)) if m else 0
                if not {">=": have >= num, ">": have > num, "<=": have <= num, "<": have < num}[op]:
                    return False
            if key == "archived" and str(repo.get("archived", False)).lower() != val.lower():
                return False
        return True

    repos = [server.render_repo(f) for f in server.world]
    return sorted((r for r in repos if ok(r)), key=lambda r: -r.get("stargazers_count", 0))


def _search_issues(server: FakeGitHub, q: str) -> list[dict]:
    full = next((t[5:] for t in q.split() if t.startswith("repo:")), None)
    data = server.world.get(full or "")
    if data is None:
        return []
    want_pr = "is:pr" in q or "type:pr" in q
    real = data.get("pulls" if want_pr else "issues", [])
    total = data.get("counts", {}).get("pulls" if want_pr else "issues", len(real))
    return [{"number": i + 1, "title": f"item {i + 1}"} for i in range(total)]


def route(server: FakeGitHub, target: str, headers) -> tuple[int, object, dict]:
    """(status, body, extra headers) for GET `target` (path and query)."""
    path, query = split_path(target)
    q = query.get("q", [""])[0]
    if path == "/search/repositories":
        page, link = paginate(server, path, query, _search_repos(server, q))
        total = len(_search_repos(server, q))
        return 200, {"total_count": total, "incomplete_results": False, "items": page}, link
    if path == "/search/issues":
        found = _search_issues(server, q)
        page, link = paginate(server, path, query, found)
        return 200, {"total_count": len(found), "incomplete_results": False, "items": page}, link
    m = re.match(r"^/repos/([^/]+/[^/]+)(/.*)?$", path)
    if not m or m.group(1) not in server.world:
        return _NOT_FOUND
    full, rest = m.group(1), m.group(2) or ""
    data = server.world[full]
    pulls = {p["number"]: p for p in data.get("pulls", [])}
    issues = {i["number"]: i for i in data.get("issues", [])}
    if rest == "":
        return 200, server.render_repo(full), {}
    if rest == "/languages":
        return 200, data.get("languages", {}), {}
    if rest == "/pulls":
        state = query.get("state", ["open"])[0]
        items = [p for p in pulls.values() if state == "all" or p.get("state", "closed") == state]
        sort = query.get("sort", ["created"])[0]
        key = {"updated": "updated_at", "created": "created_at"}.get(sort, "created_at")
        items.sort(key=lambda p: (p[key], p["number"]), reverse=query.get("direction", ["desc"])[0] == "desc")
        page, link = paginate(server, path, query, [server.render_pull(full, p) for p in items])
        return 200, page, link
    m = re.match(r"^/pulls/(\d+)(/files|/commits)?$", rest)
    if m:
        p = pulls.get(int(m.group(1)))
        if p is None:
            return _NOT_FOUND
        if m.group(2) == "/commits":
            page, link = paginate(server, path, query, p.get("_commits", []))
            return 200, page, link
        if m.group(2) == "/files":
            page, link = paginate(server, path, query, _files(_diff_text(p)))
            return 200, page, link
        if "diff" in headers.get("Accept", ""):
            return 200, _diff_text(p), {"Content-Type": "application/vnd.github.diff; charset=utf-8"}
        return 200, server.render_pull(full, p), {}
    m = re.match(r"^/issues/(\d+)(/comments|/timeline)?$", rest)
    if m:
        n = int(m.group(1))
        issue = issues.get(n)
        if issue is None:
            if n in pulls and not m.group(2):  # a PR number asked as an issue
                return 200, server._pull_as_issue(full, pulls[n]), {}
            return _NOT_FOUND
        if m.group(2) == "/comments":
            page, link = paginate(server, path, query, [
                {"id": 3 * 10**6 + n * 100 + k, "user": {"login": c.get("user", "someone"), "id": 9},
                 "url": f"{server.base_url}/repos/{full}/issues/comments/{n * 100 + k}",
                 "issue_url": f"{server.base_url}/repos/{full}/issues/{n}",
                 "updated_at": c.get("created_at"), **{k2: v for k2, v in c.items() if k2 != "user"}}
                for k, c in enumerate(issue.get("_comments", []))])
            return 200, page, link
        if m.group(2) == "/timeline":
            page, link = paginate(server, path, query,
                                  [server.render_event(full, e) for e in issue.get("_timeline", [])])
            return 200, page, link
        return 200, server.render_issue(full, issue), {}
    m = re.match(r"^/commits/([0-9a-f]{7,40})$", rest)
    if m:
        for p in pulls.values():
            for c in p.get("_commits", []):
                if c["sha"].startswith(m.group(1)):
                    return 200, c, {}
    return _NOT_FOUND


def _files(diff: str) -> list[dict]:
    """GitHub's `pulls/{n}/files` entries derived from a diff."""
    out = []
    for section in re.split(r"(?m)^(?=diff --git )", diff):
        m = re.match(r"diff --git a/(\S+) b/(\S+)", section)
        if not m:
            continue
        body = section.split("\n@@", 1)
        lines = section.splitlines()
        adds = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
        dels = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
        status = ("added" if "new file mode" in section else
                  "removed" if "deleted file mode" in section else "modified")
        out.append({"filename": m.group(2), "status": status, "additions": adds, "deletions": dels,
                    "changes": adds + dels, "patch": "@@" + body[1] if len(body) > 1 else ""})
    return out

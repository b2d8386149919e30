"""A scripted OpenAI-compatible chat server on 127.0.0.1, so LLM tests use the real litellm client.

`ScriptedOpenAI(script)` answers `POST /v1/chat/completions` (and `/chat/completions`) with the
next `Reply` of its script, in order, one per request:

    with ScriptedOpenAI([rate_limited(retry_after=1), text('{"ok": true}')]) as srv:
        gateway = LLMGateway(LLMConfig(model="openai/fake", api_base=srv.base_url, ...))
        ...
        assert srv.count() == 2

Builders for the replies the tests need: `text` (content, with token usage), `tool_call`
(one or more `run_shell`-style calls), `rate_limited` (429 with `Retry-After`),
`context_overflow` (400 `context_length_exceeded`, OpenAI's shape), `server_error` (500),
`auth_error` (401) and `error` for any other status. A `delay` (seconds) makes a reply slow, to
provoke client timeouts. When the script is used up the server answers 400 `script_exhausted`
(a non-transient error, so a test that makes too many calls fails at once instead of retrying).

Every request is recorded (`requests`: path, headers, JSON body, status answered), so tests can
count calls and check the `Authorization` header. The handler never logs (the key is in a header).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

PATHS = ("/v1/chat/completions", "/chat/completions")


@dataclass
class Reply:
    """One scripted answer: HTTP `status`, JSON `body`, extra `headers`, and `delay` seconds."""

    status: int = 200
    body: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


def _completion(message: dict[str, Any], finish_reason: str, prompt_tokens: int,
                completion_tokens: int) -> dict[str, Any]:
    return {
        "id": "chatcmpl-scripted", "object": "chat.completion", "created": int(time.time()),
        "model": "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def text(content: str, *, prompt_tokens: int = 100, completion_tokens: int = 20, delay: float = 0.0) -> Reply:
    """A 200 with an assistant message whose content is `content`."""
    msg = {"role": "assistant", "content": content}
    return Reply(body=_completion(msg, "stop", prompt_tokens, completion_tokens), delay=delay)


def tool_call(*commands: str | dict, name: str = "run_shell", content: str | None = None,
              prompt_tokens: int = 100, completion_tokens: int = 20) -> Reply:
    """A 200 whose assistant message calls tool `name` once per command, `{"command": cmd}`.
    A command given as a dict is sent as the arguments object itself (to test odd arguments)."""
    calls = []
    for i, cmd in enumerate(commands):
        args = cmd if isinstance(cmd, dict) else {"command": cmd}
        calls.append({"id": f"call_{i}", "type": "function",
                      "function": {"name": name, "arguments": json.dumps(args)}})
    msg = {"role": "assistant", "content": content, "tool_calls": calls}
    return Reply(body=_completion(msg, "tool_calls", prompt_tokens, completion_tokens))


def error(status: int, message: str, *, code: str | None = None, type_: str = "invalid_request_error",
          headers: dict[str, str] | None = None) -> Reply:
    """An error answer in OpenAI's shape: `{"error": {"message", "type", "code", "param"}}`."""
    body = {"error": {"message": message, "type": type_, "code": code, "param": None}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


def rate_limited(retry_after: float = 1) -> Reply:
    """429 with `Retry-After: retry_after` (seconds)."""
    return error(429, "Rate limit reached, please retry later.", code="rate_limit_exceeded",
                 type_="requests", headers={"Retry-After": str(retry_after)})


def context_overflow() -> Reply:
    """400 `context_length_exceeded`, as OpenAI answers a prompt longer than the context window."""
    return error(400, "This model's maximum context length is 8192 tokens. However, your messages "
                 "resulted in 9000 tokens. Please reduce the length of the messages.",
                 code="context_length_exceeded")


def server_error() -> Reply:
    """500 Internal Server Error."""
    return error(500, "The server had an error while processing your request.", type_="server_error")


def auth_error(message: str = "Incorrect API key provided.") -> Reply:
    """401 invalid_api_key (a message may echo the key, as some servers do)."""
    return error(401, message, code="invalid_api_key")


class ScriptedOpenAI:
    """The server; a context manager. `base_url` ends in `/v1` (give it as `api_base`)."""

    def __init__(self, script: list[Reply] | None = None):
        self.script: list[Reply] = list(script or [])
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def push(self, *replies: Reply) -> None:
        """Append replies to the script."""
        with self.lock:
            self.script.extend(replies)

    def count(self, status: int | None = None) -> int:
        """Chat requests received, optionally only those answered with `status`."""
        with self.lock:
            return sum(1 for r in self.requests if status is None or r["status"] == status)

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies of the requests, in order."""
        with self.lock:
            return [r["body"] for r in self.requests]

    def _next(self) -> Reply:
        with self.lock:
            if self.script:
                return self.script.pop(0)
        return error(400, "scripted server: script exhausted", code="script_exhausted")


def _handler(server: ScriptedOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def log_message(self, *args: object) -> None:  # quiet: headers carry the key
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = self.path.split("?", 1)[0]
            if path not in PATHS:
                self._send(Reply(status=404, body={"error": {"message": f"no route {path}"}}), path, raw)
                return
            self._send(server._next(), path, raw)

        def _send(self, reply: Reply, path: str, raw: bytes) -> None:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {"_unparsed": raw.decode("utf-8", "replace")}
            with server.lock:
                server.requests.append({"path": path, "headers": dict(self.headers.items()),
                                        "body": body, "status": reply.status, "time": time.time()})
            if reply.delay:
                time.sleep(reply.delay)
            data = json.dumps(reply.body).encode()
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in reply.headers.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout test)
                pass

    return Handler

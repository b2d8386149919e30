"""A PyGithub client whose every request goes through `GitHubTransport`.

PyGithub sends requests through a per-`Requester` connection object holding a
`requests.Session`. Its only public hook, `Requester.injectConnectionClasses`, is process-wide
(it would reroute every other `Github` client too) and turns connection reuse off, so we set
the connection class of *this* client's Requester instead: a subclass of PyGithub's own that
mounts our adapter on its session. That touches one name-mangled attribute
(`_Requester__connectionClass`); `install_transport` checks it exists and raises
`TransportUnavailable` otherwise, and a test checks that the server sees exactly the requests
the transport counted, so a PyGithub upgrade cannot silently bypass the cache or rate limits.
Avoid `lazy=` arguments and `withAuth`: they copy the Requester without our connection class.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib.metadata import version

import github
from github import Github
from github.Requester import HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass, Requester

from pipeline.sources.crawl_config import ApiConfig
from pipeline.sources.source_errors import TransportUnavailable
from pipeline.sources.transport import GitHubTransport

USER_AGENT = "swemint-crawler"
_ATTR = "_Requester__connectionClass"


def install_transport(requester: Requester, transport: GitHubTransport) -> None:
    """Make `requester` send everything through `transport` (see the module docstring).

    Raises TransportUnavailable when PyGithub's Requester no longer has the attribute we set.
    """
    if not hasattr(requester, _ATTR):
        raise TransportUnavailable(f"PyGithub {version('PyGithub')}: Requester has no {_ATTR}; "
                                   "pin pygithub to a 2.x release this module supports")
    base = getattr(requester, _ATTR)
    if not issubclass(base, (HTTPRequestsConnectionClass, HTTPSRequestsConnectionClass)):
        base = HTTPSRequestsConnectionClass if requester.scheme == "https" else HTTPRequestsConnectionClass

    class _TransportConnection(base):  # type: ignore[valid-type, misc]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.session.mount("http://", transport)
            self.session.mount("https://", transport)

    setattr(requester, _ATTR, _TransportConnection)


def read_token(api: ApiConfig, environ: Mapping[str, str] | None = None) -> str | None:
    """The token from environment variable `api.token_env` (None when unset or empty)."""
    value = (os.environ if environ is None else environ).get(api.token_env, "").strip()
    return value or None


def make_github(api: ApiConfig, transport: GitHubTransport,
                environ: Mapping[str, str] | None = None) -> Github:
    """A `github.Github` for `api.base_url` using `transport`, authenticated with the token read
    from the environment (anonymous when unset). PyGithub's own retry and throttle are off:
    the transport does both. Raises TransportUnavailable (see `install_transport`)."""
    token = read_token(api, environ)
    gh = Github(auth=github.Auth.Token(token) if token else None, base_url=api.base_url.rstrip("/"),
                timeout=api.timeout, user_agent=USER_AGENT, per_page=api.per_page, retry=None,
                seconds_between_requests=None, seconds_between_writes=None)
    install_transport(gh.requester, transport)
    return gh

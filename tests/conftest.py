"""Shared fixtures: a Docker client and the smallest test images.

Docker tests skip only for developer convenience: with env `CI` set, a missing engine or image
is a failure, so CI always runs them.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import pytest

from envpool.errors import InfraError
from tests.session import ENV_REPOSITORY, SESSION, remove_session_runs

# The low-disk guard (mint.limits.min_free_disk_bytes, 10 GiB by default) measures the host, not
# the test: without this, every test that mints (fake or real) turns `infra_error` on a machine
# with less free space. Set before any test starts a command, so subprocesses inherit it;
# tests about the guard set the limit themselves with `--set`, which wins over SWEMINT_SET.
os.environ["SWEMINT_SET"] = " ".join(
    [os.environ.get("SWEMINT_SET", ""), "mint.limits.min_free_disk_bytes=0"]).strip()


class Sleeps(list):
    """A fake `sleep` recording the seconds asked for (no test waits for a back-off)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture
def image_store():
    """A `FakeImageStore` as the active image store (`envpool.imagestore.use_store`): toolchain
    images are made in memory (their scripts recorded in `built`), nothing needs Docker."""
    from envpool.fake_images import FakeImageStore
    from envpool.imagestore import use_store

    store = FakeImageStore()
    with use_store(store):
        yield store


@pytest.fixture
def sleeps() -> Sleeps:
    """A `Sleeps` to pass where code takes an injectable `sleep` (retries, rate limits)."""
    return Sleeps()


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason} (CI is set: docker tests must run)")
    pytest.skip(reason)


def find_image(client, repository: str, tag_prefix: str) -> str | None:
    """Newest local image `repository:<tag_prefix>*` (looked up by repository name), or None."""
    found = []
    for img in client.images.list(name=repository):
        for ref in img.tags:
            repo, _, tag = ref.rpartition(":")
            if repo == repository and tag.startswith(tag_prefix):
                found.append((img.attrs.get("Created", ""), ref))
    return max(found)[1] if found else None


def ensure_test_image(client, build: Callable[[], str], repository: str, tag_prefix: str) -> str:
    """Tag of a test image: `build()` (returns at once when the image exists, else builds it);
    when that fails, any local `repository:tag_prefix*`; else skip (fail under CI)."""
    try:
        return build()
    except InfraError as e:
        ref = find_image(client, repository, tag_prefix)
        if ref:
            return ref
        _unavailable(f"no {repository}:{tag_prefix}* image and building one failed: {e}")
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def docker_client(tmp_path_factory):
    """A docker SDK client that answers; skips when none does (fails when env CI is set). At the
    session's end the images under `ENV_REPOSITORY` go, and so do the containers and images of
    this session's runs (`tests.session.remove_session_runs`: `SESSION` in the run id, or the
    `wd-*` run id of a work directory under the session's temporary directory)."""
    from envpool.docker_sandbox import docker_client as make_client

    try:
        client = make_client()
    except InfraError as e:
        _unavailable(f"no Docker engine: {e}")
    _remove_dead_sessions_containers(client)
    yield client
    _remove_session_images(client)
    try:
        remove_session_runs(client, tmp_path_factory.getbasetemp())
    except Exception as e:  # noqa: BLE001 - an engine hiccup at the end fails no test
        print(f"removing this session's runs failed: {e}")


def _remove_dead_sessions_containers(client) -> None:
    """Remove containers of earlier test sessions whose pytest process is gone (a session killed
    by a signal runs no finalizer): their run ids carry `tests.session.SESSION` (`<pid>-<hex6>`)."""
    import re

    for c in client.containers.list(all=True, filters={"label": "swemint.run"}, ignore_removed=True):
        rid = c.labels.get("swemint.run", "")
        m = re.match(r"(?:test|pytest)-(?:[a-z-]*?-)?(\d+)-[0-9a-f]{6}(?:-|$)", rid)  # tests' ids only
        if not m or SESSION in rid:
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # that session is still running
        except ProcessLookupError:
            pass
        except (PermissionError, ValueError, OverflowError):
            continue
        try:
            c.remove(force=True)
        except Exception:  # noqa: BLE001 - gone meanwhile
            pass


def _remove_session_images(client) -> None:
    """Remove the images this session committed under `tests.session.ENV_REPOSITORY`."""
    for img in client.images.list(name=ENV_REPOSITORY):
        try:
            client.images.remove(img.id, force=True)
        except Exception:  # noqa: BLE001 - in use or gone: the next session's name differs anyway
            pass


@pytest.fixture(scope="session")
def debian_image(docker_client) -> str:
    """Tag of the minimal Debian bookworm base image (bash, coreutils, curl, procps, git)."""
    from envpool.images import ensure_debian_base

    return ensure_test_image(docker_client, lambda: ensure_debian_base("bookworm", engine=docker_client),
                             "swemint/debian", "bookworm-")


@pytest.fixture(scope="session")
def python_image(docker_client) -> str:
    """Tag of the Python 3.11 toolchain image (python3, pip, venv, uv, git, curl)."""
    from envpool.images import ensure_python_image

    return ensure_test_image(docker_client, lambda: ensure_python_image("3.11", engine=docker_client),
                             "swemint/python", "3.11-")

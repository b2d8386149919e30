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


@pytest.fixture(scope="session", autouse=True)
def one_build_per_image_across_workers(tmp_path_factory):
    """Under pytest-xdist (`scripts/test.sh` runs the docker tests two at a time) the workers share
    one Docker engine but no work directory, so a toolchain image two of them need at once (on a
    fresh CI host none exists yet) would be built twice side by side. A build lock without a
    `shared_dir` (`envpool.image_registry.cluster_lock`: a thread lock, one process) takes in
    this session a file lock in a folder the run's workers share (the parent of each worker's
    basetemp): one worker builds, the other waits and finds the image. Nothing changes outside
    xdist or for a lock given a `shared_dir`."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        yield
        return
    import envpool.image_registry as registry

    shared = tmp_path_factory.getbasetemp().parent / "image-build-locks"
    original = registry.cluster_lock

    def across_workers(shared_dir, key: str, timeout: float = 7200.0):
        return original(shared if shared_dir is None else shared_dir, key, timeout)

    patch = pytest.MonkeyPatch()
    patch.setattr(registry, "cluster_lock", across_workers)
    yield
    patch.undo()


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


SLOWEST_FIRST = (
    "tests/pipeline/test_cluster.py",
    "tests/agents/test_cost_docker.py",
    "tests/agents/ecosystems/test_node_docker.py",
    "tests/agents/ecosystems/test_cfamily_moves_docker.py",
    "tests/agents/test_tiers_docker.py",
    "tests/agents/test_loop_docker.py",
    "tests/agents/ecosystems/test_ci_services_docker.py",
    "tests/agents/test_compile_once_docker.py",
    "tests/agents/ecosystems/test_java_docker.py",
    "tests/agents/test_minter_docker.py",
    "tests/agents/ecosystems/test_java_moves_docker.py",
    "tests/agents/ecosystems/test_cfamily_gtest_suites_docker.py",
    "tests/agents/ecosystems/test_python_newest_docker.py",
    "tests/agents/ecosystems/test_cfamily_docker.py",
    "tests/agents/ecosystems/test_java_ant_docker.py",
    "tests/agents/ecosystems/test_drivers_docker.py",
    "tests/envpool/test_pytest_runner_docker.py",
    "tests/envpool/test_userns.py",
    "tests/agents/llm/test_llm_plans_e2e.py",
    "tests/agents/ecosystems/test_golang_docker.py",
    "tests/pipeline/test_resume.py",
    "tests/agents/ecosystems/test_rust_docker.py",
    "tests/envpool/test_docker_sandbox.py",
)
"""Test files whose docker tests take longest, longest first (per-file sums of their tests'
durations, two xdist workers on the shared 2-core host, 2026-12-07: test_cost_docker 1182 s,
test_node_docker 983, test_cluster 886 with its three-node test cut off at 600, test_cfamily_moves
649, test_tiers 630, ... test_rust 55; the files that run did not reach placed by older
one-at-a-time logs). Under pytest-xdist (`scripts/test.sh`: two workers,
`--dist loadfile --no-loadscope-reorder`, files handed out in collection order) these files are
collected first, so the longest start first and the short ones fill the ends of the workers'
queues; a file missing here only starts later. Outside xdist the order is pytest's own."""


def pytest_collection_modifyitems(config, items) -> None:
    """Under an xdist worker, put the items of `SLOWEST_FIRST`'s files first, in that order
    (a stable sort: every other item keeps its place, and so does each file's own order)."""
    if not hasattr(config, "workerinput"):
        return
    rank = {path: i for i, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::", 1)[0], len(rank)))

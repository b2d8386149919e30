"""A Debian mirror apt could not use is the infrastructure's failure (`envpool.aptmirror`): apt's
words for it (`mirror_failure`, data read once), and the envpool steps that run apt tried again
while it fails so -- a toolchain image's layer (`layer_with_retry` under `ImageConfig.mirror`) and
a command in a sandbox (`exec_apt`: the grading tools' python3, `envpool.evalscript.ensure_python3`)
-- while any other failure is attempted once."""

from __future__ import annotations

import pytest

from envpool import aptmirror
from envpool.aptmirror import AptMirrorError, MirrorRetry, exec_apt, mirror_failure
from envpool.errors import InfraError
from envpool.evalscript import ENSURE_PYTHON3, ensure_python3
from envpool.fake import FakeSandboxFactory
from envpool.fake_images import FakeImageStore
from envpool.images import ImageConfig
from envpool.imagestore import use_store
from envpool.sandbox import SandboxSpec
from envpool.toolchains import cfamily_image

MIRROR_SYNC = ("E: Failed to fetch http://deb.debian.org/debian/dists/trixie/main/Contents-amd64.gz  File has "
               "unexpected size (12698511 != 12699567). Mirror sync in progress? [IP: 203.0.113.80 80]\n"
               "   Hashes of expected file:\n    - Filesize:12699567 [weak]\n"
               "E: Some index files failed to download. They have been ignored, or old ones used instead.\n")
HASH_SUM = ("E: Failed to fetch http://deb.debian.org/debian/pool/main/i/icu/libicu-dev_76.1-4_amd64.deb  "
            "Hash Sum mismatch\n   Hashes of expected file:\n"
            "E: Unable to fetch some archives, maybe run apt-get update or try with --fix-missing?\n")
NO_PACKAGE = "Reading package lists...\nE: Unable to locate package libnosuch-dev\n"
UCOL = "tsl/src/x.c:39:\n/usr/include/postgresql/17/server/utils/pg_locale.h:24:10: fatal error: unicode/ucol.h: " \
       "No such file or directory\ncompilation terminated.\n"
FAST = MirrorRetry(mirror_backoff=0)


@pytest.mark.parametrize("text", [
    MIRROR_SYNC, HASH_SUM,
    "W: Failed to fetch http://deb.debian.org/debian/dists/bookworm/InRelease  Temporary failure resolving "
    "'deb.debian.org'\nE: Unable to locate package libicu-dev\n",
    "Err:1 http://deb.debian.org/debian bookworm/main amd64 tcl amd64 8.6.13  Could not connect to deb.debian.org:80 "
    "(151.101.2.132), connection timed out\n",
    "E: Failed to fetch http://deb.debian.org/debian/pool/main/t/tcl8.6/tcl8.6_8.6.13.deb  404  Not Found "
    "[IP: 151.101.2.132 80]\n",
])
def test_apt_s_words_for_a_mirror_it_could_not_use_are_found(text):
    assert mirror_failure(text)


@pytest.mark.parametrize("text", [
    "E: Unable to locate package libnosuch-dev\n",
    "E: Package 'tclx' has no installation candidate\n",
    UCOL,
    # a third-party source a CI adds, unreachable here: the build's failure (`unreachable`), not the mirror's
    "W: Failed to fetch https://packagecloud.io/timescale/timescaledb/debian/dists/trixie/InRelease  Temporary "
    "failure resolving 'packagecloud.io'\n",
    "fatal: unable to access 'https://github.com/x/y/': Could not resolve host: github.com\n",
])
def test_other_failures_are_not_the_mirror_s(text):
    assert mirror_failure(text) is None


def test_the_data_file_is_read_once_per_process():
    aptmirror.mirror_data.cache_clear()
    for text in (MIRROR_SYNC, HASH_SUM, UCOL, None):
        mirror_failure(text)
    info = aptmirror.mirror_data.cache_info()
    assert info.misses == 1 and info.hits == 3


class FlakyStore(FakeImageStore):
    """An image store whose first `layer` builds fail with `errors` (one each), then build."""

    def __init__(self, errors: list[str], **kw):
        super().__init__(**kw)
        self.errors = list(errors)
        self.attempts = 0

    def layer(self, parent, tag, script, labels, timeout=1800):
        self.attempts += 1
        self.layer_error = self.errors.pop(0) if self.errors else None
        return super().layer(parent, tag, script, labels, timeout)


def _cfamily(store: FakeImageStore, **mirror):
    with use_store(store):
        return cfamily_image.ensure_image("12", ImageConfig(route="debootstrap", mirror={"mirror_backoff": 0, **mirror}))


def test_a_toolchain_layer_the_mirror_fails_once_is_built_on_the_second_attempt():
    store = FlakyStore([MIRROR_SYNC])
    choice = _cfamily(store)
    assert store.attempts == 2 and choice.image in store
    assert [k for k, *_ in store.built] == ["bootstrap", "layer"]


def test_a_toolchain_layer_that_fails_for_another_reason_is_attempted_once():
    store = FlakyStore([NO_PACKAGE])
    with pytest.raises(InfraError, match="Unable to locate package") as e:
        _cfamily(store)
    assert store.attempts == 1 and not isinstance(e.value, AptMirrorError)


def test_a_toolchain_layer_the_mirror_keeps_failing_is_an_apt_mirror_error_after_every_attempt():
    store = FlakyStore([HASH_SUM] * 5)
    with pytest.raises(AptMirrorError, match="Hash Sum mismatch") as e:
        _cfamily(store, mirror_attempts=2)
    assert store.attempts == 2 and "2 attempt(s)" in str(e.value) and isinstance(e.value, InfraError)


def _sandbox(f: FakeSandboxFactory):
    return f.start(SandboxSpec(image="base"))


def test_an_apt_command_the_mirror_fails_once_is_run_again():
    f = FakeSandboxFactory()
    answers = [(100, HASH_SUM), (0, "ok")]
    f.on(r"apt-get", lambda cmd, sb: answers.pop(0))
    sb = _sandbox(f)
    r = ensure_python3(sb, 60, FAST)
    assert r.ok and [c.command for c in sb.calls] == [ENSURE_PYTHON3, ENSURE_PYTHON3]
    assert all(c.timeout == 60 and c.log_label == "grading-tools" for c in sb.calls)


def test_an_apt_command_that_fails_for_another_reason_is_run_once():
    f = FakeSandboxFactory()
    f.on(r"apt-get", (100, NO_PACKAGE))
    sb = _sandbox(f)
    r = exec_apt(sb, "apt-get install -y libnosuch-dev", FAST, timeout=30)
    assert not r.ok and len(sb.calls) == 1


def test_an_apt_command_the_mirror_keeps_failing_returns_the_last_failure_after_every_attempt():
    f = FakeSandboxFactory()
    f.on(r"apt-get", (100, MIRROR_SYNC))
    sb = _sandbox(f)
    waits: list[float] = []
    r = exec_apt(sb, "apt-get update", MirrorRetry(mirror_attempts=3, mirror_backoff=1), sleep=waits.append)
    assert not r.ok and len(sb.calls) == 3 and waits == [1, 2]

"""The setup commands of a Go plan: the compile step of the selected packages, the guard on
modules a patch overlay needs, the per-module runs and the offline module proxy of test runs."""

from __future__ import annotations

import posixpath
import re
import shlex
from envpool.quoting import shell_word
from agents.ecosystems.golang.go_tests import run_pattern


OFFLINE_PROXY = ('m=$(go env GOMODCACHE 2>/dev/null); [ -n "$m" ] || m="$(go env GOPATH | cut -d: -f1)/pkg/mod"; '
                 'export GOPROXY="file://$m/cache/download"; ')
"""Test runs resolve modules from the module cache setup filled (Go's download cache is a
GOPROXY tree), never the network: a version query the module graph needs -- a required version
that go.mod `exclude`s (prometheus-9248: google.golang.org/api), a `@latest` -- is answered by the
versions setup downloaded, where the default proxy fails offline (``Get .../@v/list: dial tcp``)."""


MAX_INLINE_PATCH = 90_000
"""Bytes of base64 patch text a setup command may carry (one argv string is capped at 128 KiB)."""


DEP_ERROR = re.compile(r"^(?:\S*/)?pkg/mod/(\S+?)@(v[^/\s]+)/(\S+?\.go):\d+:\d+: (.*)$", re.M)
"""A compile error inside the module cache: (module, version, file in it, message)."""


SAFE_MODULE_PATH = re.compile(r"[A-Za-z0-9._~+!/-]{1,300}")
"""Characters of a module path (and a file path in it) as Go's module cache spells them."""


SAFE_VERSION = re.compile(r"v[0-9A-Za-z.+-]{1,100}")


GUARD_ERROR = re.compile(r'cannot use "[^"]*" \(untyped string constant\) as int value')
"""quic-go's (and others') deliberate version guard: ``var _ int = "can't be built on Go 1.N"``."""


STUB_ROOT = "/opt/swemint/go-stubs"
"""Where `download_step` writes the empty modules standing in for versions the proxy does not serve."""

UNSERVED = (r"^go: ([^@ ]+)@[^ ]+( \(replaced by [^ ]+\))?: reading [a-z]+://[^ ]+: "
            r"(403|404|410|no such file or directory)")
"""A `go mod download` line for a module version the proxy refuses (``403 ... This module version
is not available``: a fork that exists only on its Git host, a purged pseudo-version; 404/410;
a file:// proxy without it): group 1 the module path go.mod requires (the left side of its
`replace`, when the failing version is a replacement's)."""


def download_step(module_dir: str) -> str:
    """Shell running ``go mod download`` in the module at `module_dir` (class S23: a required
    module version the module proxy does not serve, e.g. a ``replace`` to a fork that lives
    only on GitHub, unreachable from here). When the download fails only on such versions
    (`UNSERVED`), each is replaced by an empty local module (``go mod edit -replace
    <module>=STUB_ROOT/<name>``, its go.mod naming the module) and the download runs again (up
    to 10 times: `go mod download` stops at the first such version, ragflow needed 4): every package that does not import the missing module builds and is tested, a
    package that does fails to build on both sides (no test of it is graded). Each substitute
    is printed (``swemint: substitute ...``). Any other failure fails the step as before."""
    cd = _cd(module_dir)
    sed = shlex.quote(f"s#{UNSERVED}.*#\\1#p")
    return (f"{cd} && for i in 1 2 3 4 5 6 7 8 9 10; do go mod download > /tmp/swemint-gomod.log 2>&1 && break; "
            "cat /tmp/swemint-gomod.log; "
            f"gone=$(sed -nE {sed} /tmp/swemint-gomod.log | sort -u); [ -n \"$gone\" ] || exit 1; "
            "for m in $gone; do "
            f"d={STUB_ROOT}/$(printf %s \"$m\" | tr -c 'A-Za-z0-9._-' _); mkdir -p \"$d\" && "
            "printf 'module %s\\n' \"$m\" > \"$d/go.mod\" && go mod edit -replace=\"$m=$d\" && "
            "echo \"swemint: substitute $m: the module proxy does not serve its version, replaced by an "
            "empty local module ($d); packages importing it do not build\"; done; done; "
            "cat /tmp/swemint-gomod.log; go mod download")


def compile_step(flags: str, pkgs: str) -> str:
    """Shell compiling the test binaries of `pkgs` once (``go test -run '^$'``). Lenient when the
    repository's own code does not build (its tests then fail on that side), but exit 1 when a
    *dependency* does not (an error under ``pkg/mod/``), or a test binary does not link for a
    system library the image lacks (cgo's ``ld: cannot find -lstdc++``, S25): that is the
    environment's fault, and `repair` (or Debian's index, for the library) may fix it."""
    # `|| rc=$?` keeps the step lenient under `set -e` (the published setup.sh runs with -e)
    return (f"rc=0; out=$(go test {flags} -run '^$' {pkgs} 2>&1) || rc=$?; printf '%s\\n' \"$out\"; "
            "if [ $rc -ne 0 ]; then if printf '%s\\n' \"$out\" | grep -Eq '^(\\S*/)?pkg/mod/\\S+\\.go:[0-9]+:'; then "
            "echo 'swemint: a dependency does not build with this Go'; exit 1; fi; "
            "if printf '%s\\n' \"$out\" | grep -Eq 'ld[^ ]*: cannot find -l[A-Za-z0-9_.+-]+'; then "
            "echo 'swemint: a test binary does not link: the image lacks a system library (cgo)'; exit 1; fi; "
            "echo 'swemint: some test binaries do not build at the base commit (their tests fail on that side)'; fi")


def overlay_guard(output: str) -> list[str] | None:
    """Commands that blank a dependency's version-guard file (`GUARD_ERROR`) through a Go build
    overlay (``-overlay``, Go >= 1.16, kept in the image's go env), or None when the output has
    no such error. Used when the Go the module's era needs is not installable here (caddy of
    mid-2022 pins quic-go v0.26, which refuses Go 1.19; Go 1.16-1.18 are not available)."""
    for m in DEP_ERROR.finditer(output):
        mod, ver, rel, msg = m.groups()
        if not GUARD_ERROR.search(msg):
            continue
        if not (SAFE_MODULE_PATH.fullmatch(mod) and SAFE_MODULE_PATH.fullmatch(rel) and SAFE_VERSION.fullmatch(ver)):
            continue  # not a path Go writes into its module cache: text from the build, never a command
        path = f"$(go env GOMODCACHE)/{mod}@{ver}/{rel}"
        return [
            "mkdir -p /root/.config/go/overlay && "
            f"f={path} && r=/root/.config/go/overlay/$(printf '%s' \"$f\" | md5sum | cut -c1-12).go && "
            "grep -m1 '^package ' \"$f\" > \"$r\" && printf '%s\\t%s\\n' \"$f\" \"$r\" >> /root/.config/go/overlay.tsv && "
            "awk -F'\\t' 'BEGIN{printf \"{\\\"Replace\\\":{\"} {printf \"%s\\\"%s\\\":\\\"%s\\\"\", (NR>1?\",\":\"\"), $1, $2} "
            "END{print \"}}\"}' /root/.config/go/overlay.tsv > /root/.config/go/overlay.json && "
            "go env -w GOFLAGS=\"$(go env GOFLAGS | sed -E 's/ ?-overlay=[^ ]*//') -overlay=/root/.config/go/overlay.json\" && "
            f"echo 'swemint: version guard {mod}@{ver}/{rel} blanked by a build overlay' && go env GOFLAGS"]
    return None


def _abs(module_dir: str, pkg: str) -> str:
    """Repository-relative folder of package `pkg` ("./x" or ".") of the module at `module_dir`."""
    d = posixpath.normpath(posixpath.join(module_dir or ".", pkg))
    return "" if d == "." else d


def _module_runs(mdir: str, pkgs: list[str], tests: dict[str, set[str] | None], flags: str) -> list[str]:
    """`go test -json` invocations for the packages `pkgs` of the module at `mdir`: packages
    with known touched tests run those alone (``-run '^(TestA|TestB)$'``), one invocation each;
    the others together."""
    whole, runs = [], []
    for p in pkgs:
        names = tests.get(_abs(mdir, p)) if p != "./..." else None
        if names:
            pat = shlex.quote(run_pattern(sorted(names)))
            runs.append(f"({_cd(mdir)} && go test -json {flags} -run {pat} {shlex.quote(p)})")
        else:
            whole.append(shlex.quote(p))
    if whole:
        runs.insert(0, f"({_cd(mdir)} && go test -json {flags} {' '.join(whole)})")
    return runs


def _cd(module_dir: str) -> str:
    return f"cd {shell_word('/testbed/' + module_dir)}" if module_dir else "cd /testbed"


"""S23: a required Go module version the module proxy does not serve (a ``replace`` to a fork that
lives only on its Git host, a purged pseudo-version) no longer fails the whole Go plan: the
download step replaces it by an empty local module, so every package that does not import it
builds and is tested; a package that imports it does not build (on both sides).

The module is one the test writes (two packages: `ok` imports only the standard library, `uses`
imports the unserved module), downloaded by the host's real `go` from an empty file:// proxy
(the proxy that serves nothing stands for one that refuses the version: 403/404/410). Without
the rule the step fails (`go mod download` exit 1) and nothing is tested.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from agents.ecosystems.golang.go_setup import UNSERVED, download_step

GO = shutil.which("go")

GO_MOD = """module example.com/app

go 1.21

require example.com/gone v1.0.0

replace example.com/gone => example.com/fork v1.0.1
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)


def _env(tmp: Path) -> dict[str, str]:
    (tmp / "proxy").mkdir(exist_ok=True)
    return {**os.environ, "GOFLAGS": "-mod=mod", "GOPROXY": f"file://{tmp}/proxy", "GOSUMDB": "off",
            "GOTOOLCHAIN": "local", "GOPATH": str(tmp / "gopath"), "GOCACHE": str(tmp / "gocache")}


def _step(tmp: Path, repo: Path) -> str:
    return download_step("").replace("cd /testbed", f"cd {repo}", 1).replace("/opt/swemint", str(tmp / "opt"))


def test_unserved_line_names_the_required_module():
    import re

    rx = re.compile(UNSERVED, re.M)
    line = ("go: github.com/a/msg@v0.0.0-20260407083308-985c3a1a76b7 (replaced by github.com/b/msg@"
            "v0.0.0-20260407083308-985c3a1a76b7): reading https://proxy.golang.org/github.com/b/msg/@v/"
            "v0.0.0-20260407083308-985c3a1a76b7.mod: 403 Forbidden")
    assert rx.search(line).group(1) == "github.com/a/msg"
    assert rx.search("go: example.com/x@v1.2.0: reading https://proxy.golang.org/example.com/x/@v/v1.2.0.mod: "
                     "410 Gone").group(1) == "example.com/x"
    # a network failure is not a refusal: no substitute for it
    assert not rx.search("go: example.com/x@v1.2.0: Get \"https://proxy.golang.org/example.com/x/@v/v1.2.0.mod\": "
                         "dial tcp: lookup proxy.golang.org: no such host")


@pytest.mark.skipif(GO is None, reason="no go on this host")
def test_unserved_module_is_stubbed_and_the_other_packages_build(tmp_path):
    repo = tmp_path / "repo"
    _write(repo, {
        "go.mod": GO_MOD,
        "ok/ok.go": "package ok\n\nfunc Two() int { return 2 }\n",
        "ok/ok_test.go": 'package ok\n\nimport "testing"\n\nfunc TestTwo(t *testing.T) {\n\tif Two() != 2 {\n\t\tt.Fatal("two")\n\t}\n}\n',
        "uses/uses.go": 'package uses\n\nimport _ "example.com/gone"\n',
    })
    env = _env(tmp_path)
    plain = subprocess.run(["go", "mod", "download"], cwd=repo, env=env, capture_output=True, text=True)
    assert plain.returncode != 0 and "example.com/fork" in plain.stderr  # the class: the whole download fails

    r = subprocess.run(["sh", "-c", _step(tmp_path, repo)], env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "swemint: substitute example.com/gone" in r.stdout
    stub = tmp_path / "opt" / "go-stubs" / "example.com_gone"
    assert (stub / "go.mod").read_text() == "module example.com/gone\n"
    assert f"example.com/gone => {stub}" in (repo / "go.mod").read_text()

    ok = subprocess.run(["go", "test", "-count=1", "./ok"], cwd=repo, env=env, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    uses = subprocess.run(["go", "build", "./uses"], cwd=repo, env=env, capture_output=True, text=True)
    assert uses.returncode != 0  # its importer does not build: no test of it is graded


@pytest.mark.skipif(GO is None, reason="no go on this host")
def test_other_download_failures_still_fail_the_step(tmp_path):
    repo = tmp_path / "repo"
    _write(repo, {"go.mod": "module example.com/app\n\ngo 1.21\n\nnot a directive\n"})
    r = subprocess.run(["sh", "-c", _step(tmp_path, repo)], env=_env(tmp_path), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0
    assert "substitute" not in r.stdout
    assert not (tmp_path / "opt").exists()


@pytest.mark.skipif(GO is None, reason="no go on this host")
def test_a_served_module_is_downloaded_as_before(tmp_path):
    repo = tmp_path / "repo"
    _write(repo, {"go.mod": "module example.com/app\n\ngo 1.21\n", "a.go": "package app\n"})
    before = (repo / "go.mod").read_text()
    r = subprocess.run(["sh", "-c", _step(tmp_path, repo)], env=_env(tmp_path), capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert (repo / "go.mod").read_text() == before and "substitute" not in r.stdout


# -- S25: a cgo test binary that does not link for a system library is the environment's fault --------

CGO = 'package lib\n\n/*\n#cgo LDFLAGS: -lswemintnosuch\nint one(void) { return 1; }\n*/\nimport "C"\n\nfunc One() int { return int(C.one()) }\n'
CGO_TEST = 'package lib\n\nimport "testing"\n\nfunc TestOne(t *testing.T) {\n\tif One() != 1 {\n\t\tt.Fatal("one")\n\t}\n}\n'


@pytest.mark.skipif(GO is None or shutil.which("gcc") is None, reason="no go or gcc on this host")
def test_a_test_binary_that_lacks_a_system_library_fails_the_compile_step(tmp_path):
    """S25 (genset A ollama-17883/-17897: ``/usr/bin/ld: cannot find -lstdc++`` for a cgo package
    with C++ sources): the lenient compile step used to pass ("some test binaries do not build at
    the base commit"), so the package's tests were absent on both sides and the row ended
    tests_not_run with nothing to repair. Now the step fails naming the missing library, and the
    Go recipe's repair installs g++ for libstdc++; a package whose own code does not compile stays
    lenient."""
    from agents.ecosystems.golang import ECOSYSTEM
    from agents.ecosystems.golang.go_setup import compile_step

    repo = tmp_path / "repo"
    _write(repo, {"go.mod": "module example.com/app\n\ngo 1.21\n", "lib/lib.go": CGO, "lib/lib_test.go": CGO_TEST,
                  "own/own.go": "package own\n\nfunc Two() int { return 2 }\n",
                  "own/own_test.go": 'package own\n\nimport "testing"\n\nfunc TestTwo(t *testing.T) { Three() }\n'})
    env = {**_env(tmp_path), "CGO_ENABLED": "1"}
    r = subprocess.run(["sh", "-c", f"cd {repo} && " + compile_step("-count=1", "./lib")], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "cannot find -lswemintnosuch" in r.stdout and "lacks a system library" in r.stdout
    own = subprocess.run(["sh", "-c", f"cd {repo} && " + compile_step("-count=1", "./own")], env=env,
                         capture_output=True, text=True, timeout=300)
    assert own.returncode == 0 and "do not build at the base commit" in own.stdout

    fix = ECOSYSTEM.repair(None, "go test", "/usr/bin/ld: cannot find -lstdc++: No such file or directory", set())
    assert fix and "install" in fix[0] and " g++ " in fix[0]

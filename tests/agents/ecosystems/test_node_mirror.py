"""S26: an npm project whose .npmrc and lock file name a registry *mirror* this host does not reach
(genset A ragflow's web/: registry.npmmirror.com in web/.npmrc and every ``resolved`` URL of
web/package-lock.json): ``npm ci`` failed on getaddrinfo ENOTFOUND and the row went on to other
ecosystems. The repair points the project's npm config at the public registry and lets npm rewrite
the mirror's host in the lock file's URLs (the integrity hashes still check the tarballs).

The project is one the test writes (one dependency, is-number 7.0.0, its lock entry resolved at an
unreachable mirror ``registry.swemint-mirror.invalid``), installed by the host's real npm from the
public registry; skipped when the host has no npm or does not reach registry.npmjs.org."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from agents.ecosystems.base import PolyPlan
from agents.ecosystems.node import ECOSYSTEM

INTEGRITY = "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng=="
MIRROR = "registry.swemint-mirror.invalid"


def _plan(folder: str = "") -> PolyPlan:
    return PolyPlan(ecosystem="node", toolchain="node 20", image="i", setup_commands=[], test_command="true",
                    parser="jest_json", state={"folder": folder} if folder else {})


def test_the_repair_names_the_mirror_and_keeps_the_folder():
    out = (f"npm error network request to https://{MIRROR}/zwitch/-/zwitch-2.0.4.tgz failed, reason: "
           f"getaddrinfo ENOTFOUND {MIRROR}\n")
    fix = ECOSYSTEM.repair(_plan("web"), "cd web && npm ci --no-audit --no-fund", out, set())
    assert fix[:2] == ["cd web && npm config set registry https://registry.npmjs.org/ --location=project",
                       f"cd web && npm config set replace-registry-host {MIRROR} --location=project"]
    # the public registry itself unreachable is the network's failure: no substitute
    pub = out.replace(MIRROR, "registry.npmjs.org")
    fix = ECOSYSTEM.repair(_plan(), "npm ci --no-audit --no-fund", pub, set())
    assert not fix or "replace-registry-host" not in " ".join(fix)


def _reachable() -> bool:
    if shutil.which("npm") is None:
        return False
    try:
        return subprocess.run(["npm", "view", "is-number@7.0.0", "version"], capture_output=True, text=True,
                              timeout=60).stdout.strip() == "7.0.0"
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.mark.skipif(not _reachable(), reason="no npm, or registry.npmjs.org not reachable from this host")
def test_npm_ci_installs_from_the_public_registry_after_the_repair(tmp_path):
    pkg = {"name": "calc", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}}
    lock = {"name": "calc", "version": "1.0.0", "lockfileVersion": 3, "requires": True, "packages": {
        "": {"name": "calc", "version": "1.0.0", "dependencies": {"is-number": "7.0.0"}},
        "node_modules/is-number": {"version": "7.0.0", "resolved": f"https://{MIRROR}/is-number/-/is-number-7.0.0.tgz",
                                   "integrity": INTEGRITY, "license": "MIT", "engines": {"node": ">=0.12.0"}}}}
    (tmp_path / "package.json").write_text(json.dumps(pkg))
    (tmp_path / "package-lock.json").write_text(json.dumps(lock))
    (tmp_path / ".npmrc").write_text(f"registry=https://{MIRROR}/\n")
    env = {"PATH": "/usr/bin:/bin:/usr/local/bin", "HOME": str(tmp_path / "home"),
           "npm_config_cache": str(tmp_path / "cache"), "npm_config_fetch_retries": "0"}
    ci = ["npm", "ci", "--no-audit", "--no-fund"]
    first = subprocess.run(ci, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode != 0 and "ENOTFOUND" in first.stdout + first.stderr  # the class
    fix = ECOSYSTEM.repair(_plan(), "npm ci --no-audit --no-fund", first.stdout + first.stderr, set())
    for cmd in fix:
        assert subprocess.run(["sh", "-c", cmd], cwd=tmp_path, env=env, timeout=60).returncode == 0
    again = subprocess.run(ci, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (tmp_path / "node_modules/is-number/package.json").exists()
    assert MIRROR in (tmp_path / "package-lock.json").read_text()  # the lock file itself is not rewritten

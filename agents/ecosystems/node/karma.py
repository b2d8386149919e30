"""Browser test runner: karma, in Debian's headless Chromium (or Firefox ESR).

Detection (`karma_setup`, pure): ``karma`` among the package's dependencies, a karma config file
(``karma.conf.js`` and the like; the one a ``karma start <file>`` script names first) and a
launcher plugin -- ``karma-chrome-launcher`` (Debian ``chromium``, ``CHROME_BIN``) preferred to
``karma-firefox-launcher`` (``firefox-esr``, ``FIREFOX_BIN``). The analysis gives karma the
touched spec files that no Node runner's script covers (a mocha script's spec globs).

Run: setup installs the browser (apt) and writes swemint's wrapper config
(`recipes/karma-swemint.conf.js`) into the image; the test command runs ``karma start
<wrapper> --single-run`` which loads the project's config and then sets one headless browser
(Chrome with ``--no-sandbox``: the container runs as root), ``singleRun``, and swemint's
reporter, a JSON file per run (parser ``karma_json``: `envpool.testrun.polyglot.karma_json`). Which
tests run: the project's ``files`` entries whose pattern matches a touched spec are replaced by
the touched specs (other entries -- polyfills, setup files -- stay); when no entry matches, the
whole configured suite runs. Environment assignments of the project's karma script
(``cross-env BABEL_NO_MODULES=true karma start ...``) are kept, except those in
``karma.drop_env`` (coverage, minified builds).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path, PurePosixPath

from agents.ecosystems.debian import apt_install
from agents.ecosystems.node.manifest import package_deps, package_scripts, recipe

WRAPPER_PATH = "/opt/swemint-node/karma.conf.js"
"""Where setup writes swemint's karma wrapper config in the image."""
_CONFIG_NAMES = ("karma.conf.js", "karma.conf.cjs", "karma.conf.ts", "karma.config.js", "karma.config.cjs",
                 "karma.conf.coffee", "test/karma.conf.js", "test/karma.config.js")
_START = re.compile(r"(?:^|[\s;&|(])karma\s+start(?P<rest>[^;&|]*)")


@dataclass
class KarmaSetup:
    """`config`: the project's karma config (repository relative); `browser`: ``ChromeHeadless``
    or ``FirefoxHeadless``; `env`: ``VAR=value`` assignments of the project's karma script;
    `script`: that script's name (None: none names karma)."""

    config: str
    browser: str
    env: list[str] = field(default_factory=list)
    script: str | None = None


@lru_cache(maxsize=1)
def wrapper_text() -> str:
    """The wrapper config's JavaScript (`recipes/karma-swemint.conf.js`)."""
    return (Path(__file__).parents[1] / "recipes" / "karma-swemint.conf.js").read_text()


def _karma_scripts(pkg: dict) -> list[tuple[str, str, list[str], str | None]]:
    """(script name, text, env assignments, config named) of every script running ``karma start``
    in single-run mode, fewest assignments first."""
    out = []
    for name, text in package_scripts(pkg).items():
        m = _START.search(text)
        if not m or "--no-single-run" in text or "--watch" in text:
            continue
        head = text[:m.start()].replace("cross-env", " ").replace("env ", " ")
        env = re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*=\S+)", head)
        rest = [t for t in m.group("rest").split() if not t.startswith("-")]
        out.append((name, text, env, rest[0] if rest else None))
    return sorted(out, key=lambda s: (len(s[2]), s[0]))


def karma_setup(tree, pkg: dict) -> KarmaSetup | None:
    """The karma route of a root package.json (module doc), None when karma, its config or a
    Chrome/Firefox launcher is missing."""
    deps = package_deps(pkg)
    if "karma" not in deps:
        return None
    if "karma-chrome-launcher" in deps:
        browser = "ChromeHeadless"
    elif "karma-firefox-launcher" in deps:
        browser = "FirefoxHeadless"
    else:
        return None
    scripts = _karma_scripts(pkg)
    named = next((c for *_, c in scripts if c and tree.exists(c.removeprefix("./"))), None)
    config = named.removeprefix("./") if named else next((c for c in _CONFIG_NAMES if tree.exists(c)), None)
    if config is None:
        return None
    drop = set(recipe()["karma"]["drop_env"])
    env = [e for e in (scripts[0][2] if scripts else []) if e.partition("=")[0] not in drop]
    return KarmaSetup(config=config, browser=browser, env=env, script=scripts[0][0] if scripts else None)


_LITERAL = re.compile(r"""['"`]([^'"`\n]*(?:\*|\{)[^'"`\n]*\.(?:[cm]?[jt]sx?|coffee))['"`]""")


def karma_covers(tree, k: KarmaSetup, files: list[str]) -> bool | None:
    """Whether a touched file matches a glob literal of the karma config (``'test/specs/**/*.spec.js'``;
    ``{a,}`` alternatives may leave a leading ``/``); None when the config names no glob
    literally (its patterns are computed)."""
    from agents.ecosystems.node.runner import glob_regex

    globs = [glob_regex(g) for g in _LITERAL.findall(tree.read(k.config) or "")]
    if not globs:
        return None
    return any(g.match(f) or g.match("/" + f) for g in globs for f in files)


def setup_commands(k: KarmaSetup) -> list[str]:
    """Install the browser from Debian, write the wrapper config."""
    package = recipe()["karma"]["browsers"][k.browser]["debian"]
    d = str(PurePosixPath(WRAPPER_PATH).parent)
    return [apt_install([package]),
            f"mkdir -p {d} && printf %s {shlex.quote(wrapper_text())} > {WRAPPER_PATH}"]


def test_command(k: KarmaSetup, test_files: list[str], report_path: str) -> str:
    """The karma run of `test_files` (repository relative) writing its JSON report to
    `report_path`; run in /testbed with node_modules/.bin on PATH."""
    b = recipe()["karma"]["browsers"][k.browser]
    files = json.dumps([f"/testbed/{f}" for f in test_files])
    env = {b["env"]: b["binary"], "SWEMINT_KARMA_CONFIG": f"/testbed/{k.config}", "SWEMINT_KARMA_FILES": files,
           "SWEMINT_KARMA_BROWSER": k.browser, "SWEMINT_KARMA_REPORT": report_path}
    assign = [*k.env, *(f"{n}={v}" for n, v in env.items())]
    exports = " ".join(f"{n}={shlex.quote(v)}" for n, _, v in (a.partition("=") for a in assign))
    return f"export {exports} && karma start {WRAPPER_PATH} --single-run"

"""Lua projects tested with busted (LuaRocks' test framework), with luarocks.org unreachable:
Lua, busted and the rocks a project needs come from Debian.

Detected by a rockspec (at the root or under ``rockspecs/``), a ``.busted`` file or busted spec
files (``*_spec.lua``). Planning (before any container is built):
- **the Lua version**: the newest of 5.4/5.3/5.2/5.1 the rockspec's ``lua`` dependency accepts
  (`rockspec.lua_version`);
- **the rocks**: every other dependency as Debian's ``lua-<name>``, installed by the setup (a
  rock Debian lacks fails there, naming the package);
- **the image**: `envpool.toolchains.lua_image.ensure_image` (``lua<version>`` + ``lua-busted``).

Tests: busted on the ``*_spec.lua`` files the test patch touches, its JSON report (swemint's
handler, `envpool.toolchains.lua_image.HANDLER`) written to `REPORT` (parser ``busted_json``; ids ``<spec file>::<full name>``). Modules: `rockspec` (the
rockspec's versions and rocks); this package holds the Ecosystem.
"""

from __future__ import annotations

import shlex

from agents.ecosystems.base import Ecosystem, PlanRequest, PolyPlan, shell_args
from agents.ecosystems.lua.rockspec import debian_packages, dependencies, lua_version, rockspec_path
from agents.gitrepo import GitTree
from agents.models import Instance
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.testpaths import role

__all__ = ["ECOSYSTEM", "REPORT", "Lua"]

REPORT = "/tmp/swemint-busted.json"
"""Where the test command writes busted's JSON report (stdout: the report is its last line)."""


def _spec_files(paths: list[str]) -> list[str]:
    """The busted spec files of `paths` (the Lua group's `run` role of the one test-path rule
    set, `envpool.testpaths`: ``*_spec.lua``), in order."""
    return role("lua", "run").select(paths)


class Lua(Ecosystem):
    """The Lua ecosystem (`agents.ecosystems.base.Ecosystem`): busted from Debian."""

    name = "lua"
    languages = ("lua",)
    takes_test_args = True
    parsers = ("busted_json",)
    toolchain_module = "envpool.toolchains.lua_image"
    repair_hint = "rocks come from Debian (lua-<name>); luarocks.org is unreachable"

    def detect(self, tree: GitTree, language: str | None) -> int:
        """12 for a Lua-labelled tree with a rockspec, ``.busted`` or spec files, 10 without the
        label, 0 otherwise (or when another language is named)."""
        lang = (language or "").lower()
        if lang and lang != "lua":
            return 0
        if rockspec_path(tree) or tree.exists(".busted") or _spec_files(tree.files):
            return 12 if lang == "lua" else 10
        return 0

    def plan(self, tree: GitTree, instance: Instance, touched: list[str], images: ImageConfig,
             request: PlanRequest | None = None) -> PolyPlan:
        """See the module doc. Raises EnvBuildError (before any image is built) when the test
        patch touches no busted spec file."""
        tests = _spec_files(touched)
        if not tests:
            raise EnvBuildError(f"the test patch of {instance.instance_id} touches no busted *_spec.lua file "
                                f"({', '.join(touched[:5])})", instance_id=instance.instance_id)
        spec = rockspec_path(tree)
        deps = dependencies(tree.read(spec) or "") if spec else []
        version = lua_version(deps)
        from envpool.toolchains.lua_image import HANDLER, ensure_image

        image = ensure_image(version, images)
        rocks = debian_packages(deps)
        setup = []
        if rocks:
            setup.append("export DEBIAN_FRONTEND=noninteractive && apt-get update -qq && apt-get install -y -qq "
                         f"--no-install-recommends {' '.join(shlex.quote(r) for r in rocks)} >/dev/null "
                         "&& rm -rf /var/lib/apt/lists/*")
        extra = "".join(f"{a} " for a in shell_args((request or PlanRequest()).test_args))
        files = " ".join(shlex.quote(t) for t in tests)
        notes = [f"rockspec {spec}: Lua {version}" + (f", rocks from Debian: {', '.join(rocks)}" if rocks else "")] \
            if spec else [f"no rockspec: Lua {version}"]
        return PolyPlan(ecosystem=self.name, toolchain=f"lua {version}", image=image, route="debootstrap",
                        setup_commands=setup, env={"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"},
                        test_command=f"busted --output={HANDLER} {extra}{files} > {REPORT}", parser="busted_json",
                        report_path=REPORT, test_files=tests, notes=notes)

    def repair(self, plan: PolyPlan, command: str, output: str, tried: set[str]) -> list[str] | None:
        """No automatic repairs: a rock Debian lacks cannot be fetched here."""
        return None


ECOSYSTEM = Lua()

"""The Lua ecosystem's planning (`agents.ecosystems.lua`) on small trees the tests write: detection,
the rockspec's Lua version and rocks (Debian packages), the busted command; images in a fake
image store (no Docker)."""

from __future__ import annotations

from functools import partial

import pytest

from agents.ecosystems import pick_ecosystem
from agents.ecosystems.lua import ECOSYSTEM as LUA
from agents.ecosystems.lua import REPORT
from agents.ecosystems.lua.rockspec import debian_packages, dependencies, lua_version, rockspec_path
from agents.ecosystems.base import PlanRequest
from envpool.errors import EnvBuildError
from envpool.images import ImageConfig
from envpool.toolchains.lua_image import HANDLER
from tests.agents.ecosystems.conftest import make_instance, make_tree, toolchain_layers

inst = partial(make_instance, instance_id="acme__strings-3", repo="acme/strings", created_at="2023-02-10 16:24:10")

ROCKSPEC = """package = "strings"
version = "1.2-1"
source = { url = "git://example.invalid/strings.git" }
dependencies = {
  "lua >= 5.1, < 5.4",
  "penlight >= 1.5",
}
build = { type = "builtin", modules = { strings = "strings.lua" } }
"""


def test_rockspec_versions_and_rocks():
    deps = dependencies(ROCKSPEC)
    assert deps == [("lua", ">= 5.1, < 5.4"), ("penlight", ">= 1.5")]
    assert lua_version(deps) == "5.3" and debian_packages(deps) == ["lua-penlight"]
    assert lua_version([]) == "5.4" and lua_version([("lua", "~> 5.1")]) == "5.4"
    assert lua_version([("lua", "== 5.1")]) == "5.1"


def test_the_rockspec_at_the_root_else_the_newest_kept_one(tmp_path):
    tree = make_tree(tmp_path / "a", {"rockspecs/strings-1.9-1.rockspec": "", "rockspecs/strings-1.10-1.rockspec": "",
                                      "strings.lua": ""})
    assert rockspec_path(tree) == "rockspecs/strings-1.10-1.rockspec"
    tree = make_tree(tmp_path / "b", {"strings-dev-1.rockspec": "", "rockspecs/strings-1.0-1.rockspec": ""})
    assert rockspec_path(tree) == "strings-dev-1.rockspec"


def test_detects_busted_projects_only(tmp_path):
    lua = make_tree(tmp_path / "lua", {"strings.lua": "return {}\n", "spec/strings_spec.lua": "describe('x', function() end)\n"})
    other = make_tree(tmp_path / "py", {"setup.py": "", "tests/test_x.py": ""})
    assert LUA.detect(lua, None) == 10 and LUA.detect(lua, "lua") == 12 and LUA.detect(lua, "python") == 0
    assert LUA.detect(other, None) == 0
    assert pick_ecosystem(lua, "Lua") is LUA


def test_plan_runs_busted_on_the_touched_spec_files_with_debian_rocks(tmp_path, image_store):
    tree = make_tree(tmp_path, {"strings-1.2-1.rockspec": ROCKSPEC, "strings.lua": "return {}\n",
                                "spec/strings_spec.lua": "", "spec/helper.lua": ""})
    plan = LUA.plan(tree, inst(tree, "lua"), ["spec/strings_spec.lua", "spec/helper.lua"], ImageConfig(),
                    PlanRequest(test_args=["--shuffle"]))
    assert plan.toolchain == "lua 5.3" and plan.parser == "busted_json" and plan.report_path == REPORT
    assert plan.test_files == ["spec/strings_spec.lua"]
    assert plan.test_command == f"busted --output={HANDLER} --shuffle spec/strings_spec.lua > {REPORT}"
    assert "lua-penlight" in plan.setup_commands[0]
    assert toolchain_layers(image_store, "lua") == [("lua", "5.3", "bookworm")]


def test_a_test_patch_without_spec_files_is_refused_before_any_image(tmp_path, image_store):
    tree = make_tree(tmp_path, {"strings.lua": "return {}\n", "spec/strings_spec.lua": ""})
    with pytest.raises(EnvBuildError, match="touches no busted"):
        LUA.plan(tree, inst(tree, "lua"), ["README.md"], ImageConfig())
    assert toolchain_layers(image_store, "lua") == []

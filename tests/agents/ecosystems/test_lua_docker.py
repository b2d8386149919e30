"""A tiny busted project the test writes, minted end to end in Docker by the Lua ecosystem:
bookworm's Lua and busted from Debian, a rockspec naming the Lua versions, the touched spec file
run with busted's JSON report."""

from __future__ import annotations

import pytest

from agents.ecosystems.lua import ECOSYSTEM as LUA

pytestmark = [pytest.mark.docker, pytest.mark.slow]

ROCKSPEC = ('package = "calc"\nversion = "1.0-1"\nsource = { url = "git://example.invalid/calc.git" }\n'
            'dependencies = { "lua >= 5.1" }\nbuild = { type = "builtin", modules = { calc = "calc.lua" } }\n')
CALC_BUG = "local calc = {}\n\nfunction calc.add(a, b)\n  return a - b\nend\n\nreturn calc\n"
OLD_SPEC = ("local calc = require('calc')\n\ndescribe('calc', function()\n  it('adds zeros', function()\n"
            "    assert.are.equal(0, calc.add(0, 0))\n  end)\nend)\n")
NEW_SPEC = OLD_SPEC.replace("end)\nend)\n", "end)\n\n  it('adds two numbers', function()\n"
                                            "    assert.are.equal(5, calc.add(2, 3))\n  end)\nend)\n")


def test_a_busted_project_verifies_with_its_spec_ids(mint_with):
    files = {"calc-1.0-1.rockspec": ROCKSPEC, "calc.lua": CALC_BUG, "spec/calc_spec.lua": OLD_SPEC}
    res = mint_with(LUA, files, "lua-busted", language="lua", created_at="2024-03-01 10:00:00",
                    tests={"spec/calc_spec.lua": NEW_SPEC}, fix={"calc.lua": CALC_BUG.replace("a - b", "a + b")})
    assert res.outcome == "verified", res.reason
    assert res.interpreter == "lua 5.4"
    assert res.FAIL_TO_PASS == ["spec/calc_spec.lua::calc adds two numbers"]
    assert res.PASS_TO_PASS == ["spec/calc_spec.lua::calc adds zeros"]

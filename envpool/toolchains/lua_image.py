"""The Lua toolchain image: Debian's ``lua<version>`` with busted (``lua-busted``, the test
framework LuaRocks projects use) on a Debian base, the interpreter selected as ``lua``.

Lua, busted and common rocks come from Debian (luarocks.org is not reachable from the build
network). Built once per version (`envpool.toolchains.layer_image`).
"""

from __future__ import annotations

import posixpath
from pathlib import Path

from envpool.images import ImageConfig
from envpool.toolchains import apt_script, layer_image

HANDLER = "/usr/local/share/swemint/busted_json.lua"
"""busted's output handler in the image (`busted --output=HANDLER`): the JSON report of busted's own
json handler with plain fields only (that one prints nothing once a trace holds a value dkjson
cannot encode, as after ``pending()``); the file `busted_json.lua` beside this module."""

SUITE = "bookworm"
"""The Debian suite of the image (busted 2.1.1 for Lua 5.1-5.4)."""


def ensure_image(version: str, cfg: ImageConfig | None = None) -> str:
    """Tag of the Lua `version` (``5.4``) toolchain image, built when missing: Debian's
    ``lua<version>``, ``lua-busted``, git and python3 (the grading tools), swemint's busted output
    handler at `HANDLER`, ``update-alternatives`` pointing ``lua`` (busted's
    interpreter) at ``lua<version>``. Raises InfraError when the build fails."""
    handler = (Path(__file__).with_name("busted_json.lua")).read_text(encoding="utf-8")
    script = (apt_script([f"lua{version}", "lua-busted", "git", "ca-certificates", "python3"])
              + f"\nupdate-alternatives --set lua-interpreter /usr/bin/lua{version}\nlua -v\nbusted --version\n"
              + f"mkdir -p {posixpath.dirname(HANDLER)}\ncat > {HANDLER} <<'SWEMINT_LUA_EOF'\n{handler}SWEMINT_LUA_EOF\n")
    return layer_image("lua", version, SUITE, script, cfg)

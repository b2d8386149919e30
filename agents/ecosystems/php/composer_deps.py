"""What a PHP project requires (`composer_dependencies`: composer.json's require and
require-dev; `patch_requires`: what the patches add) and which Debian packages of a suite
provide it (`_resolve`), polyfills the PHP provides counted as met."""

from __future__ import annotations

import json
import re
from agents.gitrepo import GitTree
from agents.ecosystems.debian import providers, rubyphp_recipes
from envpool.errors import EnvBuildError
from envpool.patches import file_after
from envpool.toolchains import version_key


def composer_dependencies(tree: GitTree, text: str | None = None) -> tuple[dict[str, str], dict[str, str]]:
    """(require, require-dev) of the root composer.json (or of `text`, its content) without
    platform entries (php, ext-*, lib-*, composer-*). Raises EnvBuildError when it is not JSON."""
    try:
        data = json.loads((tree.read("composer.json") if text is None else text) or "{}")
    except json.JSONDecodeError as e:
        raise EnvBuildError(f"composer.json is not valid JSON: {e}", instance_id=tree.instance_id) from e

    def real(d) -> dict[str, str]:
        return {k: str(v) for k, v in (d or {}).items()
                if "/" in k and not k.startswith(("ext-", "lib-", "composer-"))}

    return real(data.get("require")), real(data.get("require-dev"))


def patch_requires(tree: GitTree, patch: str, require: dict[str, str]) -> dict[str, str]:
    """The `require` entries the fix (`patch`) adds to the root composer.json and `require`
    lacks (briannesbitt/carbon-2813 adds psr/clock, which its after side imports): the
    environment must hold them for the fixed code to load, as SWE-bench's environments do. {}
    when the patch leaves composer.json alone or its section does not apply."""
    before = tree.read("composer.json")
    after = file_after(patch, "composer.json", before) if before is not None else None
    if not after or after == before:
        return {}
    try:
        new, _ = composer_dependencies(tree, after)
    except EnvBuildError:
        return {}
    return {k: v for k, v in new.items() if k not in require}


def _candidates(package: str) -> list[str]:
    rec = rubyphp_recipes()["php"]
    vendor, _, name = package.lower().partition("/")
    name = name.replace("_", "-")
    short = name[4:] if name.startswith("php-") else name
    return [c for c in (rec["aliases"].get(package.lower()), f"php-{vendor}-{short}", f"php-{short}", name) if c]


def _resolve(require: dict[str, str], dev: dict[str, str],
             suite: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(Debian packages, missing composer packages, dropped tools, version notes) in `suite`.

    Development tools (recipe `tooling`) are never installed. A `require` package whose Debian
    version misses its constraint counts as missing; a require-dev mismatch is only noted."""
    tooling = set(rubyphp_recipes()["php"]["tooling"])
    pkgs, missing, dropped, versions = [], [], [], []
    wanted = [(n, r, True) for n, r in require.items()]
    for name, req in dev.items():
        if name.lower() in tooling:
            dropped.append(name)
        else:
            wanted.append((name, req, False))
    providers(wanted, suite, _candidates, pkgs, missing, versions)
    php = version_key(rubyphp_recipes()["php"]["interpreters"][suite])
    for name in [m for m in missing if _provided(m, php)]:
        missing.remove(name)
        versions.append(f"{name}: not packaged in Debian {suite}; PHP {'.'.join(map(str, php))} has what it polyfills")
    return pkgs, missing, dropped, versions


def _provided(package: str, php: tuple) -> bool:
    """Whether `package` polyfills what PHP `php` (a version key) itself has: the recipe's
    `provided` list, or ``symfony/polyfill-phpNN`` with PHP >= N.N."""
    name = package.lower()
    if name in rubyphp_recipes()["php"].get("provided", []):
        return True
    m = re.fullmatch(r"symfony/polyfill-php(\d)(\d)", name)
    return bool(m) and php >= (int(m.group(1)), int(m.group(2)))


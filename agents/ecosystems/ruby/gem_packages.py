"""Which Debian suite and packages provide a Ruby project's gems (`_resolve`): the gems the
suite's Ruby ships, then its ruby-* packages, the oldest suite that has them all."""

from __future__ import annotations

from agents.ecosystems.debian import interpreter_gems, provider, providers, rubyphp_recipes, satisfies
from agents.ecosystems.ruby.gemfile import Gem


def _candidates(gem: str) -> list[str]:
    rec = rubyphp_recipes()["ruby"]
    alias = rec["aliases"].get(gem)
    base = gem.replace("_", "-").lower()
    return [c for c in (alias, f"ruby-{base}", base) if c]


def _from_interpreter(gem: Gem, suite: str) -> str | None:
    """The version of `gem` that the Ruby of `suite` ships (`interpreter_gems`) when it meets
    the gem's requirement (a standard-library "lib" only a requirement-free one), else None."""
    have = interpreter_gems().get(gem.name, {}).get(suite)
    if have is None or (have == "lib" and gem.requirement):
        return None
    return have if have == "lib" or not gem.requirement or satisfies(have, gem.requirement) else None


def _resolve(gems: list[Gem], suite: str) -> tuple[list[str], list[str], list[str], list[str]]:
    """(Debian packages, missing gems, dropped tools, version notes) for `gems` in `suite`.

    Gems for other platforms ("other") are skipped, and so are gems the suite's Ruby ships at a
    version meeting the requirement (`_from_interpreter`). Development tools (recipe `tooling`,
    rubocop*) are never installed. A gem of recipe `replaced` gets the Debian package doing its
    job instead (noted). A runtime gem whose Debian version misses its requirement counts as
    missing; a dev gem's mismatch is noted, Debian's version used."""
    rec = rubyphp_recipes()["ruby"]
    pkgs, missing, dropped, versions = [], [], [], []
    wanted = []
    for g in gems:
        if g.kind == "other" or _from_interpreter(g, suite):
            continue
        if g.name in rec["tooling"] or g.name.startswith("rubocop"):
            dropped.append(g.name)
            continue
        if g.name in rec["replaced"]:
            pkg, why = rec["replaced"][g.name]["package"], rec["replaced"][g.name]["why"]
            if pkg not in pkgs:
                pkgs.append(pkg)
            versions.append(f"{' '.join(filter(None, (g.name, g.requirement)))}: Debian's {pkg} instead ({why})")
            continue
        have = interpreter_gems().get(g.name, {}).get(suite)
        if have and provider(_candidates(g.name), suite) is None:
            # the interpreter's own version misses the requirement and Debian has no newer one
            ruby = rec["interpreters"][suite]
            shipped = f"Ruby {ruby} has it in its standard library, not as a gem" if have == "lib" else \
                f"Ruby {ruby} ships {have}"
            if g.kind == "runtime":
                missing.append(f"{g.name} {g.requirement} ({shipped})")
            else:
                versions.append(f"{g.name} {g.requirement}: {shipped}")
            continue
        wanted.append((g.name, g.requirement or "", g.kind == "runtime"))
    providers(wanted, suite, _candidates, pkgs, missing, versions)
    return pkgs, missing, dropped, versions


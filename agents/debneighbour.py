"""A neighbouring Debian suite's file index, for a base image whose own suite's index cannot be
built (`agents.debindex`).

A mirror mid-sync serves a suite's ``Contents-*.gz`` at a size its ``InRelease`` does not list;
``apt-file update`` then fails on that suite every time until the mirror catches up, while the
suite's package lists are fine and its neighbours' Contents usually are. Which suites neighbour
which, in the order they are asked, is data (`index.neighbours` in
`agents/ecosystems/recipes/diagnosis.yaml`: trixie asks sid, then bookworm).

The neighbour's index is made the same way as the own one, from the same base image (apt-file
installed from the own suite), with an apt configuration of its own used only by apt-file
(``apt-file -c CONF``): a sources list naming just the neighbour suite, its own lists directory
(the image's ``/var/lib/apt/lists``, and so ``apt-cache policy`` there, stay the own suite's).
A package the neighbour's index names is taken only when the own suite has it
(`DebianIndex.available`).
"""

from __future__ import annotations

import re
import shlex

CONF = "/etc/apt/swemint-neighbour.conf"
"""apt-file's configuration of the neighbour's index (``apt-file -c``)."""
SOURCES = "/etc/apt/swemint-neighbour.list"
PARTS = "/etc/apt/swemint-neighbour.d"
LISTS = "/var/lib/swemint-neighbour/lists"
SUITE_PROBE = ("{ apt-get indextargets --format '$(RELEASE) $(SITE)' 'Created-By: Packages' 2>/dev/null; "
               "sed -e 's/\\[[^]]*\\]//' /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null"
               " | awk '$1 == \"deb\" { print $3, $2 }'; "
               "awk '/^URIs:/ { u = $2 } /^Suites:/ { s = $0 } /^$/ { if (u != \"\" && s != \"\") "
               "{ n = split(s, a, \" \"); for (i = 2; i <= n; i++) print a[i], u } u = \"\"; s = \"\" } "
               "END { if (u != \"\" && s != \"\") { n = split(s, a, \" \"); for (i = 2; i <= n; i++) print a[i], u } }' "
               "/etc/apt/sources.list.d/*.sources 2>/dev/null; true; }")
"""The suites and mirrors the base image's apt sources name (no network needed): apt's index
targets, which exist only while the image keeps its package lists -- images that end their apt
steps with ``rm -rf /var/lib/apt/lists/*`` (every swemint toolchain image) have none -- then the
one-line sources (``deb [options] URI suite ...`` in ``sources.list`` and ``*.list``) and the
deb822 ``*.sources`` stanzas (``URIs:`` / ``Suites:``), in that order."""
_SUITE = re.compile(r"[a-z][a-z0-9]{1,30}")
_SITE = re.compile(r"https?://[A-Za-z0-9.:@_~/+-]{1,200}")


def own_suite(output: str) -> tuple[str, str] | None:
    """(suite, mirror) of `SUITE_PROBE`'s output: the first plain suite (``trixie``, not
    ``trixie-updates`` nor ``trixie-security``) and its mirror; None when there is none."""
    for line in (output or "").splitlines():
        release, _, site = line.strip().partition(" ")
        if _SUITE.fullmatch(release) and _SITE.fullmatch(site.strip()):
            return release, site.strip().rstrip("/")
    return None


def neighbours_of(suite: str, data: dict) -> list[str]:
    """The suites whose index answers for `suite`'s, in order (`data`: the `index` section)."""
    return [s for s in (data.get("neighbours") or {}).get(suite, []) if s != suite and _SUITE.fullmatch(s)]


def setup_script(install: str, suite: str, mirror: str) -> str:
    """The index image's layer for neighbour `suite` of `mirror`: `install` (apt-get update and
    apt-file from the own suite), then apt-file's own configuration and its update."""
    conf = [f'Dir::Etc::SourceList "{SOURCES}";', f'Dir::Etc::SourceParts "{PARTS}";',
            f'Dir::State::Lists "{LISTS}";', 'Acquire::Languages "none";']
    return (f"{install} && mkdir -p {PARTS} {LISTS}/partial && "
            f"printf '%s\\n' {' '.join(shlex.quote(c) for c in conf)} > {CONF} && "
            f"printf '%s\\n' {shlex.quote(f'deb {mirror} {suite} main')} > {SOURCES} && "
            f"apt-file -c {CONF} update >/dev/null")


def search_command(query: str) -> str:
    """The shell command searching the neighbour's index for `query` (quoted)."""
    return f"apt-file -c {CONF} search --regexp {shlex.quote(query)}"

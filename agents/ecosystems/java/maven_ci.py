"""Maven rules read from outside the pom: the profiles and properties CI enables for its test
runs, and a released stand-in for a ``-SNAPSHOT`` parent POM no reachable repository serves.

CI (`ci_maven_options`): every ``mvn`` / ``mvnw`` / ``./mvnw`` invocation in a ``run:`` step of
``.github/workflows/*.yml`` (``${{ matrix.X }}`` = the matrix's first value) or in ``.travis.yml``
(``script`` / ``install``) that runs tests -- a goal among `TEST_GOALS`, no ``-DskipTests`` /
``-Dmaven.test.skip=true`` -- and whose ``-pl`` / ``--projects`` (when given) names one of the
touched modules gives its ``-P`` / ``--activate-profiles`` profiles (only ids some reactor pom
defines; ``!x`` deactivations skipped) and its ``-Dk=v`` properties (not those of
``java.yaml`` ``ci_property_deny``, which would change the test selection or skip it;
none holding ``$``). They join every Maven run of the plan.

SNAPSHOT parent (`snapshot_parent`, `nearest_release`, `stand_in_commands`): a root pom whose
``<parent>`` is a ``-SNAPSHOT`` outside the tree. Maven Central serves no snapshots, so the plan
reads the parent's released versions from Central's ``maven-metadata.xml`` and keeps the nearest
(the newest release not newer than the snapshot's base version, else the oldest newer one).
When a setup step fails with "Non-resolvable parent POM", the Java repair installs that release,
its own version rewritten to the snapshot's, into the local repository
(``install:install-file``): the project's files stay untouched, and the repair's command,
naming the release, is in the trajectory.

Released substitutes before "network-bound" (issue 25 item 3, `snapshot_sources`): every
``-SNAPSHOT`` the reactor needs from outside the tree -- the parent of any of its poms, a
dependency or a managed dependency (versions resolved through the in-tree properties) that no
pom of the tree builds -- gets the nearest release Maven Central lists, installed as the
snapshot before the first Maven step (`stand_in_commands`, a jar artifact with its pom) and
recorded in the row as a substitution; one with no release there is recorded as tried
(`Plan.state["substitutes_tried"]`, the row's `substitutes_tried`), so a row that still needs
the network says which substitutes it tried.
"""

from __future__ import annotations

import posixpath
import re
import shlex
import ssl
import urllib.request
import xml.etree.ElementTree as ET
from functools import lru_cache

from agents.gitrepo import GitTree
from envpool.toolchains import version_key

__all__ = ["CENTRAL", "TEST_GOALS", "ci_maven_options", "ci_run_texts", "maven_invocations",
           "nearest_release", "released_versions", "snapshot_parent", "snapshot_sources", "stand_in_commands"]

CENTRAL = "https://repo1.maven.org/maven2"
TEST_GOALS = ("test", "verify", "install", "integration-test", "package", "deploy")
"""Maven phases that run Surefire (the default lifecycle up to `test` and after)."""

_MVN = re.compile(r"(?:^|[\s;&|(])(?:\./)?(?:mvn|mvnw)(?=\s)([^\n;&|]*)")


def ci_run_texts(tree: GitTree) -> list[tuple[str, str]]:
    """(CI file, shell text) of every GitHub Actions ``run:`` step (``${{ matrix.X }}`` = the
    matrix's first value, other matrix names ``$``) and every Travis ``script`` / ``install``
    line, read by the one CI reader `agents.ecosystems.ci.ci_steps`."""
    from agents.ecosystems.ci import ci_steps

    return [(st.path, st.resolved()) for st in ci_steps(tree)]


def maven_invocations(tree: GitTree) -> list[tuple[str, list[str]]]:
    """(CI file, argument tokens) of every ``mvn``/``mvnw`` call in the CI files."""
    out = []
    for path, text in ci_run_texts(tree):
        for m in _MVN.finditer(text.replace("\\\n", " ")):
            try:
                out.append((path, shlex.split(m.group(1))))
            except ValueError:
                continue
    return out


def _option(tokens: list[str], i: int, short: str, long: str) -> tuple[str | None, int]:
    """(value, tokens consumed) when tokens[i] is `short`/`long` (joined or separate)."""
    t = tokens[i]
    for flag in (long, short):
        if t == flag:
            return (tokens[i + 1] if i + 1 < len(tokens) else None), 2
        if t.startswith(flag + "=") and flag.startswith("--"):
            return t[len(flag) + 1:], 1
        if t.startswith(flag) and not flag.startswith("--") and len(t) > len(flag):
            return t[len(flag):], 1
    return None, 0


def ci_maven_options(tree: GitTree, profile_ids: set[str], modules: list[str],
                     deny: list[str]) -> tuple[list[str], dict[str, str], list[str]]:
    """(profiles, properties, notes) the CI's test runs enable (module doc). `profile_ids`: ids
    the reactor defines; `modules`: touched module folders relative to the reactor root
    (``""`` / ``"."`` = the root); `deny`: property names never taken."""
    profiles: list[str] = []
    props: dict[str, str] = {}
    notes: list[str] = []
    for path, tokens in maven_invocations(tree):
        goals, pro, prop, projects = [], [], {}, None
        i = 0
        while i < len(tokens):
            t = tokens[i]
            value, n = _option(tokens, i, "-P", "--activate-profiles")
            if n:
                pro += [p.strip() for p in (value or "").split(",") if p.strip()]
                i += n
                continue
            value, n = _option(tokens, i, "-pl", "--projects")
            if n:
                projects = [p.strip().lstrip(":") for p in (value or "").split(",") if p.strip()]
                i += n
                continue
            if t.startswith("-D") and len(t) > 2:
                k, _, v = t[2:].partition("=")
                prop[k] = v or "true"
            elif t in ("-f", "--file", "-s", "--settings", "-T", "--threads", "-rf", "--resume-from"):
                i += 1
            elif not t.startswith("-"):
                goals.append(t)
            i += 1
        if not any(g in TEST_GOALS for g in goals):
            continue
        if prop.get("skipTests", "false") != "false" or prop.get("maven.test.skip", "false") != "false":
            continue
        if projects is not None and not any(m in projects or posixpath.basename(m) in projects for m in modules):
            continue
        took = [p for p in pro if not p.startswith(("!", "-")) and p in profile_ids and p not in profiles]
        profiles += took
        for k, v in prop.items():
            if k not in deny and "$" not in k + v and k not in props:
                props[k] = v
        if took:
            notes.append(f"CI profile(s) {took} from {path}")
    if props:
        notes.append(f"CI properties {sorted(props)}")
    return profiles, props, notes


# ----------------------------------------------------------------------------- SNAPSHOT parent

_COORD = re.compile(r"[A-Za-z0-9_][\w.-]*")
"""A Maven coordinate part that may enter a shell command (anything else: no stand-in)."""

def snapshot_parent(pom_text: str | None, tree: GitTree, directory: str = "") -> tuple[str, str, str] | None:
    """(groupId, artifactId, version) of the ``<parent>`` of `pom_text` (the pom in
    `directory`) when its version ends in ``-SNAPSHOT`` and its relativePath names no pom in
    `tree` with that artifactId; else None."""
    try:
        root = ET.fromstring((pom_text or "").encode("utf-8"))
    except ET.ParseError:
        return None
    for el in root.iter():
        if isinstance(el.tag, str) and "}" in el.tag:
            el.tag = el.tag.split("}", 1)[1]
    parent = root.find("parent")
    if parent is None:
        return None
    g, a, v = ((parent.findtext(k) or "").strip() for k in ("groupId", "artifactId", "version"))
    if not (v.endswith("-SNAPSHOT") and all(_COORD.fullmatch(x) for x in (g, a, v))):
        return None
    rel = parent.findtext("relativePath")
    rel = "../pom.xml" if rel is None else rel.strip()
    if rel:
        target = posixpath.normpath(posixpath.join(directory, rel))
        target = target if target.endswith(".xml") else posixpath.join(target, "pom.xml")
        text = tree.read(target) if not target.startswith("..") else None
        if text and f"<artifactId>{a}</artifactId>" in text:
            return None  # the parent is in the tree
    return g, a, v


@lru_cache(maxsize=64)
def released_versions(group: str, artifact: str, base: str = CENTRAL) -> tuple[str, ...]:
    """Released versions of `group`:`artifact` listed by `base`'s ``maven-metadata.xml``
    (snapshots, and versions that are not plain coordinates, dropped: they enter a shell
    command); () when it cannot be read (no network, not there)."""
    from envpool.docker_sandbox import host_ca_bundle

    url = f"{base}/{group.replace('.', '/')}/{artifact}/maven-metadata.xml"
    ctx = ssl.create_default_context()
    ca = host_ca_bundle()
    if ca:
        ctx.load_verify_locations(str(ca))
    try:
        with urllib.request.urlopen(url, timeout=20, context=ctx) as r:
            root = ET.fromstring(r.read())
    except Exception:
        return ()
    return tuple(v.text.strip() for v in root.iter("version")
                 if v.text and "SNAPSHOT" not in v.text and _COORD.fullmatch(v.text.strip()))


def nearest_release(snapshot: str, releases: list[str] | tuple[str, ...]) -> str | None:
    """The newest of `releases` not newer than `snapshot`'s base version (``2.3-SNAPSHOT`` ->
    2.3), else the oldest newer one; None when there are none."""
    if not releases:
        return None
    want = version_key(snapshot[:-len("-SNAPSHOT")] if snapshot.endswith("-SNAPSHOT") else snapshot)
    keyed = sorted(releases, key=version_key)
    below = [r for r in keyed if version_key(r) <= want]
    return below[-1] if below else keyed[0]


def stand_in_commands(group: str, artifact: str, snapshot: str, release: str, packaging: str = "pom") -> list[str]:
    """Setup commands installing the released `release` as `snapshot` in the local repository:
    fetched with ``dependency:get`` (`packaging` ``pom`` for a parent, ``jar`` for a dependency:
    its pom, then the jar -- an old dependency plugin fetches no pom with ``transitive=false``), the pom's own ``<version>`` (outside its ``<parent>``) rewritten with
    perl (Essential in Debian), installed with ``install:install-file``; run outside the project
    so its pom is not read. Coordinates are checked plain (`_COORD`) by their callers."""
    q = shlex.quote
    base = f"$HOME/.m2/repository/{group.replace('.', '/')}/{artifact}/{release}/{artifact}-{release}"
    work = f"/tmp/swemint/stand-in/{artifact}"
    perl = ("my $p=\"\"; s{<parent>.*?</parent>}{$p=$&; \"\\x00\"}se; "
            f"s{{<version>\\Q{release}\\E</version>}}{{<version>{snapshot}</version>}}; s{{\\x00}}{{$p}}e")
    if packaging == "pom":
        return [f"mkdir -p {work} && cd {work} && mvn -B -ntp dependency:get {q(f'-Dartifact={group}:{artifact}:{release}:pom')} "
                f"-Dtransitive=false && cp \"{base}.pom\" parent.pom && perl -0pi -e {q(perl)} parent.pom && "
                f"mvn -B -ntp install:install-file -Dfile=parent.pom -DpomFile=parent.pom -Dpackaging=pom"]
    return [f"mkdir -p {work} && cd {work} && mvn -B -ntp dependency:get {q(f'-Dartifact={group}:{artifact}:{release}:pom')} "
            f"-Dtransitive=false && mvn -B -ntp dependency:get "
            f"{q(f'-Dartifact={group}:{artifact}:{release}:{packaging}')} -Dtransitive=false && "
            f"cp \"{base}.pom\" stand-in.pom && cp \"{base}.{packaging}\" stand-in.{packaging} && "
            f"perl -0pi -e {q(perl)} stand-in.pom && mvn -B -ntp install:install-file -Dfile=stand-in.{packaging} "
            f"-DpomFile=stand-in.pom -Dpackaging={packaging}"]


def snapshot_sources(tree: GitTree, poms: dict[str, str]) -> list[tuple[str, str, str, str, str]]:
    """The out-of-tree ``-SNAPSHOT``s of the poms `poms` (folder -> text; "" = the root): each
    pom's parent (`snapshot_parent`) and its ``<dependency>`` entries (also under
    ``<dependencyManagement>``; plain jar or pom types, no classifier) whose version, resolved
    through the pom's own and its in-tree parents' properties, ends in ``-SNAPSHOT`` and whose
    groupId:artifactId no pom of `poms` declares. (groupId, artifactId, version, packaging,
    what), each coordinate once, in folder order; only plain coordinates (`_COORD`)."""
    parsed: dict[str, ET.Element] = {}
    for d, text in poms.items():
        try:
            root = ET.fromstring((text or "").encode("utf-8"))
        except ET.ParseError:
            continue
        for el in root.iter():
            if isinstance(el.tag, str) and "}" in el.tag:
                el.tag = el.tag.split("}", 1)[1]
        parsed[d] = root

    def own(root: ET.Element) -> tuple[str, str]:
        g = (root.findtext("groupId") or root.findtext("parent/groupId") or "").strip()
        return g, (root.findtext("artifactId") or "").strip()

    ours = {own(r) for r in parsed.values()}
    out: list[tuple[str, str, str, str, str]] = []
    seen: set[tuple[str, str]] = set()
    for d in sorted(parsed):
        root = parsed[d]
        pom_path = posixpath.join(d, "pom.xml") if d else "pom.xml"
        snap = snapshot_parent(poms[d], tree, d)
        if snap and (snap[0], snap[1]) not in ours and (snap[0], snap[1]) not in seen:
            seen.add((snap[0], snap[1]))
            out.append((*snap, "pom", f"parent of {pom_path}"))
        props: dict[str, str] = {}
        chain, cur = [], d
        for _ in range(10):  # this pom's and its in-tree parents' properties (the child's win)
            r = parsed.get(cur)
            if r is None:
                break
            chain.append(r)
            rel = r.findtext("parent/relativePath")
            rel = "../pom.xml" if rel is None and r.find("parent") is not None else (rel or "").strip()
            if not rel:
                break
            target = posixpath.normpath(posixpath.join(cur, rel))
            cur = posixpath.dirname(target) if target.endswith(".xml") else target
            cur = "" if cur == "." else cur
        for r in reversed(chain):
            props.update({el.tag: (el.text or "").strip() for el in (r.find("properties") or [])
                          if isinstance(el.tag, str)})
        g0, _ = own(root)
        props.setdefault("project.groupId", g0)
        props.setdefault("project.version", (root.findtext("version") or root.findtext("parent/version") or "").strip())
        for dep in [*root.findall("dependencies/dependency"), *root.findall("dependencyManagement/dependencies/dependency")]:
            g, a, v = ((dep.findtext(k) or "").strip() for k in ("groupId", "artifactId", "version"))
            kind = (dep.findtext("type") or "jar").strip()
            for _ in range(5):
                v = re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)), v)  # noqa: B023 (called here)
                g = re.sub(r"\$\{([^}]+)\}", lambda m: props.get(m.group(1), m.group(0)), g)  # noqa: B023 (called here)
            if not v.endswith("-SNAPSHOT") or kind not in ("jar", "pom") or dep.findtext("classifier") or \
                    (g, a) in ours or (g, a) in seen or not all(_COORD.fullmatch(x) for x in (g, a, v)):
                continue
            seen.add((g, a))
            out.append((g, a, v, kind, f"dependency of {pom_path}"))
    return out

"""The JDK a Java build needs (`choose_jdk`): the release the build files pin, the Gradle
version's range, the CI's JDKs, the commit's era (`java_facts`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import date
import yaml
from agents.gitrepo import GitTree
from agents.untrusted_yaml import load_untrusted_yaml
from envpool.errors import EnvBuildError
from envpool.toolchains import version_key
from agents.ecosystems.java.java_recipe import recipe
from agents.ecosystems.java.maven_pom import MavenReactor, jdk_major


@dataclass
class JavaFacts:
    """What the tree says about its JDK. Majors are ints; `commit_date` bounds the era."""

    levels: list[int] = field(default_factory=list)
    gradle: str | None = None
    pinned: int | None = None
    pinned_from: str | None = None
    ci: list[int] = field(default_factory=list)
    commit_date: date | None = None


def _gradle_version(tree: GitTree) -> str | None:
    text = tree.read("gradle/wrapper/gradle-wrapper.properties")
    m = re.search(r"gradle-(\d+(?:\.\d+)*)(?:-[\w.]+)?-(?:bin|all)\.zip", text or "")
    return m.group(1) if m else None


def _pinned(tree: GitTree) -> tuple[int | None, str | None]:
    for path, pattern in ((".sdkmanrc", r"^\s*java\s*=\s*(\S+)"), (".java-version", r"^\s*(\S+)"),
                          (".tool-versions", r"^\s*java\s+(\S+)")):
        m = re.search(pattern, tree.read(path) or "", re.M)
        if m and jdk_major(m.group(1)):
            return jdk_major(m.group(1)), path
    return None, None


def _ci_values(obj, keys: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    if isinstance(obj, dict):
        for k, v in obj.items():
            if str(k) in keys and not isinstance(v, dict):
                out.extend(str(x) for x in (v if isinstance(v, list) else [v]) if not isinstance(x, (dict, list)))
            else:
                out.extend(_ci_values(v, keys))
    elif isinstance(obj, list):
        for v in obj:
            out.extend(_ci_values(v, keys))
    return out


def _ci_jdks(tree: GitTree) -> list[int]:
    paths = [p for p in tree.files if p == ".travis.yml" or
             (p.startswith(".github/workflows/") and p.endswith((".yml", ".yaml")))]
    majors: set[int] = set()
    for p in paths:
        try:
            data = load_untrusted_yaml(tree.read(p) or "")
        except yaml.YAMLError:
            continue
        for v in _ci_values(data, ("jdk", "java", "java-version", "java_version")):
            if "${{" in v:
                continue
            m = jdk_major(v)
            if m and 5 <= m <= 40:
                majors.add(m)
    return sorted(majors)


def java_facts(tree: GitTree, reactor: MavenReactor | None) -> JavaFacts:
    """Collect `JavaFacts` from `tree` (and its Maven reactor when it has one)."""
    pinned, pinned_from = _pinned(tree)
    return JavaFacts(levels=reactor.levels() if reactor else [], gradle=_gradle_version(tree), pinned=pinned,
                     pinned_from=pinned_from, ci=_ci_jdks(tree), commit_date=tree.commit_time.date())


def _floor_table(table: dict, major: int) -> int | str | None:
    keys = sorted(int(k) for k in table if int(k) <= major)
    return table[keys[-1]] if keys else None


def gradle_jdk_range(gradle: str) -> tuple[int, int]:
    """(lowest, highest) JDK major that Gradle `gradle` runs on (recipe tables)."""
    g = version_key(gradle)
    runs = recipe()["gradle_runs_on_jdk"]
    top = max((int(j) for j, v in runs.items() if version_key(str(v)) <= g), default=8)
    mins = recipe()["gradle_min_jdk"]
    low = max((int(j) for v, j in mins.items() if version_key(str(v)) <= g), default=8)
    return low, top


def choose_jdk(facts: JavaFacts, available: list[int]) -> tuple[int, list[str]]:
    """The JDK major to use among `available`, and notes explaining the choice.

    Feasible: at least every language level, javac still accepts the lowest level
    (`javac_min_level`), and inside the Gradle wrapper's range. Then: the pinned JDK (the
    smallest feasible >= the pin), else the newest feasible JDK that CI runs and that is not
    newer than the era LTS (else the oldest CI one), else the era LTS (the newest feasible not
    newer than it, else the oldest feasible). Raises EnvBuildError when nothing is feasible.
    """
    notes: list[str] = []
    lo_level, hi_level = (min(facts.levels), max(facts.levels)) if facts.levels else (None, None)
    feasible = []
    for j in sorted(available):
        if hi_level is not None and j < hi_level:
            continue
        floor = _floor_table(recipe()["javac_min_level"], j)
        if lo_level is not None and floor is not None and lo_level < int(floor):
            continue
        if facts.gradle:
            g_lo, g_hi = gradle_jdk_range(facts.gradle)
            if not g_lo <= j <= g_hi:
                continue
        feasible.append(j)
    why = (f"language levels {sorted(set(facts.levels))}" if facts.levels else "no language level") + \
          (f", Gradle {facts.gradle} runs on JDK {gradle_jdk_range(facts.gradle)}" if facts.gradle else "")
    if not feasible:
        raise EnvBuildError(f"no available JDK ({', '.join(map(str, available))}) fits: {why}")
    era = None
    if facts.commit_date:
        released = [int(j) for j, d in recipe()["lts_released"].items()
                    if date.fromisoformat(str(d)) <= facts.commit_date]
        era = max(released) if released else min(int(j) for j in recipe()["lts_released"])

    def newest_not_after(cands: list[int]) -> int:
        below = [j for j in cands if era is None or j <= era]
        return max(below) if below else min(cands)

    if facts.pinned:
        up = [j for j in feasible if j >= facts.pinned]
        choice = up[0] if up else feasible[-1]
        notes.append(f"JDK {facts.pinned} pinned by {facts.pinned_from}")
    elif set(facts.ci) & set(feasible):
        choice = newest_not_after(sorted(set(facts.ci) & set(feasible)))
        notes.append(f"CI runs JDK {facts.ci}")
    else:
        choice = newest_not_after(feasible)
        notes.append(f"era LTS JDK {era}")
    notes.append(f"JDK {choice} chosen from feasible {feasible} ({why})")
    return choice, notes


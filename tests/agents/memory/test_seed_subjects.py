"""Issue 30's fresh-user trial: the seed `py-django-settings-not-configured` (an env action, so no
package read off its actions) was a top before-plan hit for four small projects without Django.
Hand-written entries about one package, framework or build system carry it as their context,
and retrieval before planning holds them back for projects that name it nowhere -- generically,
by data (`data/experiences/*.jsonl` `context`), never by a special case in code."""

from __future__ import annotations

import json
import re

from agents.memory.api import ExperienceMemory, MemoryConfig
from agents.memory.before import proactive
from agents.memory.experience import Experience
from agents.memory.experience_store import SEED_DIR, hand_written, load_seed_files
from agents.memory.knowledge import rule_entries, rule_entry_id
from agents.memory.repo_context import RepoContext
from agents.memory.retrieve import context_match

DJANGO = "py-django-settings-not-configured"

FRAMEWORKS = frozenset({
    "django", "pytest-django", "flask", "matplotlib", "webpack", "jest", "mocha", "ts-jest", "ts-node", "puppeteer",
    "cypress", "husky", "karma", "lombok", "mockito", "jacoco", "minitest", "nokogiri", "setuptools-scm", "node-sass",
    "esbuild", "vite", "rollup", "gtest", "catch2", "boost", "eigen", "qt5", "numpy", "pandas", "sqlalchemy",
    "werkzeug", "protobuf", "lxml", "pillow", "psycopg2", "h5py", "cryptography", "proc-macro2"})
"""Packages and frameworks an entry's tags may name as its subject (curated): a seed tagged with
one is about that package and must carry a dependency context."""

ACTS_BEFORE_A_BUILD = frozenset({"env", "test_arg"})
"""Action kinds that mean something before a build with no package to read a context off."""


def _norm(tag: str) -> str:
    return re.sub(r"[-_.]+", "-", tag).lower()


def subject_gaps(entries: list[Experience]) -> list[str]:
    """The hand-written entries that break the data rule: (1) tagged with a curated framework but
    without dependencies; (2) acting with env / test_arg actions but with neither a context
    (dependencies, build systems) nor a `generic` reason; (3) `generic` while also naming a
    context (one or the other)."""
    gaps = []
    for e in entries:
        c = e.context
        specific = bool(c.dependencies or c.build_systems)
        tagged = sorted({_norm(t) for t in e.tags} & FRAMEWORKS)
        if tagged and not c.dependencies:
            gaps.append(f"{e.id}: tagged {', '.join(tagged)} but no dependency context")
        if {a.kind for a in e.actions} & ACTS_BEFORE_A_BUILD and not specific and not c.generic.strip():
            gaps.append(f"{e.id}: env/test_arg actions, no context and no generic reason")
        if c.generic and specific and not c.derived:
            gaps.append(f"{e.id}: generic and specific at once")
    return gaps


def memory() -> ExperienceMemory:
    mem = ExperienceMemory.open(MemoryConfig(path=None, seed_dir=None))
    mem.store.load_seed()
    return mem


def small_python(deps: dict[str, str], repo: str = "acme/tool") -> RepoContext:
    return RepoContext(ecosystem="python", toolchain="3.12", era=2024, repo=repo, build_systems=["pip"],
                       declared=deps, files=["pyproject.toml"], frameworks=["pytest"],
                       commands=["uv pip install -e .", "pytest -rA"])


def test_the_django_entry_is_retrieved_before_planning_only_for_a_project_naming_django():
    mem = memory()
    for deps in ({"requests": ""}, {"click": "", "rich": ""}, {}, {"flask": ">=2"}):
        ids = [h.experience.id for h in mem.retrieve(small_python(deps), k=10)]
        assert DJANGO not in ids, (deps, ids)
    hits = mem.retrieve(small_python({"django": ">=4.2", "pytest-django": ""}), k=10)
    hit = next(h for h in hits if h.experience.id == DJANGO)
    assert "context: dependency django, pytest-django" in hit.why
    assert not proactive(hit, 0.66)  # a subject narrows retrieval; the seed still acts after failures only
    # after a failure the error decides, whatever the project declares
    err = ("django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but settings are not "
           "configured. You must either define the environment variable DJANGO_SETTINGS_MODULE or call "
           "settings.configure() before accessing settings.")
    assert mem.retrieve_for_error(err, "python", ctx=small_python({}))[0].experience.id == DJANGO


def test_an_entry_about_a_build_system_waits_for_a_project_that_uses_it():
    mem = memory()
    auto = RepoContext(ecosystem="c", toolchain="13", era=2016, repo="acme/old", build_systems=["autotools"],
                       files=["configure.ac"], commands=["./configure && make"])
    cm = auto.model_copy(update={"build_systems": ["cmake"], "files": ["CMakeLists.txt"],
                                 "commands": ["cmake -B build && cmake --build build"]})
    cmake_entries = {e.id for e in mem.store.all("c") if "cmake" in e.context.build_systems}
    assert {"c-cmake4-policy-minimum", "c-cmake-too-old", "c-ctest-no-tests"} <= cmake_entries
    assert not cmake_entries & {h.experience.id for h in mem.retrieve(auto, k=20)}
    assert cmake_entries & {h.experience.id for h in mem.retrieve(cm, k=20)}


def test_every_seed_about_one_package_carries_it_and_every_other_says_why_it_is_generic():
    entries = hand_written()
    assert subject_gaps(entries) == []
    # the check can fail: the Django line as it was before the audit, and a bare env entry
    raw = next(json.loads(ln) for ln in (SEED_DIR / "python.jsonl").read_text(encoding="utf-8").splitlines()
               if DJANGO in ln)
    raw.pop("context")
    assert subject_gaps([Experience(**raw)]) == [f"{DJANGO}: tagged django, pytest-django but no dependency context",
                                                 f"{DJANGO}: env/test_arg actions, no context and no generic reason"]
    bare = Experience(id="py-bare", ecosystem="python", problem="something about FOO happened", solution="set FOO",
                      actions=[{"kind": "env", "name": "FOO", "value": "1"}], error_signature="FOO happened")
    assert subject_gaps([bare]) == ["py-bare: env/test_arg actions, no context and no generic reason"]


def test_seed_lines_may_declare_a_context_and_keep_the_packages_their_actions_name(tmp_path):
    (tmp_path / "x.jsonl").write_text(json.dumps({
        "id": "py-subject", "ecosystem": "python", "problem": "Widget_Core breaks the build", "solution": "pin it",
        "actions": [{"kind": "pin", "requirement": "widget-helper<2"}], "error_signature": "Widget_Core breaks",
        "context": {"dependencies": ["Widget_Core"], "derived": True}}) + "\n", encoding="utf-8")
    [e] = load_seed_files(tmp_path)
    assert e.context.dependencies == ["widget-core", "widget-helper"] and e.context.derived
    seeds = {e.id: e for e in load_seed_files()}
    assert seeds[DJANGO].context.dependencies == ["django", "pytest-django"] and seeds[DJANGO].context.derived
    assert seeds["py-markupsafe-soft-unicode"].context.dependencies == ["markupsafe"]  # read off its pin
    assert seeds["py-tls-intercepted"].context.generic


def test_a_diagnosis_rule_about_one_named_tool_carries_it():
    rules = {e.id: e for e in rule_entries()}
    tcl = rules[rule_entry_id("diagnosis", "tcl-required")]
    assert tcl.context.dependencies == ["tclsh"] and tcl.context.derived
    assert rules[rule_entry_id("diagnosis", "missing-header")].context.dependencies == []


def test_the_retrieval_report_carries_k_and_says_what_found_each_hit():
    from agents.memory.before import retrieval_report

    mem = memory()
    ctx = small_python({"django": ">=4.2", "pytest-django": ""})
    hits = mem.retrieve(ctx, k=7)
    report = json.loads(retrieval_report("before-plan", ctx, hits, ["py-django"], ctx.profile_query(), k=7))
    assert report["k"] == 7 and len(report["hits"]) <= 7 and report["stage"] == "before-plan"
    line = next(h for h in report["hits"] if h["id"] == DJANGO)
    assert line["source"] == "seed" and line["via"] == "fused"
    assert line["why"].startswith("hand-written; context: dependency django, pytest-django; found by ")
    assert "query py-django" in line["found_by"] and line["why"].endswith("; ".join(line["found_by"]))
    assert all(h["why"] and h["found_by"] for h in report["hits"])


def test_a_seed_line_declaring_derived_keeps_it_and_its_build_system_context_never_acts_before_planning(tmp_path):
    """A line whose `context` names only build systems with `"derived": true` (no package its
    actions name) was loaded with `derived` reset to False: its build-system context counted as
    its author's, and `proactive` let e.g. the Gradle/JDK 17 seed change a Gradle project's plan
    before anything failed."""
    (tmp_path / "x.jsonl").write_text(json.dumps({
        "id": "java-subject", "ecosystem": "java", "problem": "Gradle breaks on a new JDK", "solution": "older JDK",
        "actions": [{"kind": "toolchain", "tool": "java", "version": "<17"}], "error_signature": "Gradle breaks",
        "context": {"build_systems": ["gradle"], "derived": True}}) + "\n", encoding="utf-8")
    [e] = load_seed_files(tmp_path)
    assert e.context.derived and e.context.dependencies == []
    lines = [json.loads(ln) for f in sorted(SEED_DIR.glob("*.jsonl"))
             for ln in f.read_text(encoding="utf-8").splitlines() if ln.strip() and not ln.lstrip().startswith("//")]
    declared = {d["id"] for d in lines if d.get("context", {}).get("derived")}
    seeds = {e.id: e for e in load_seed_files()}
    assert "java-gradle-jdk17-major-61" in declared
    assert [i for i in sorted(declared) if not seeds[i].context.derived] == []
    mem = memory()
    gradle = RepoContext(ecosystem="java", toolchain="17", era=2020, repo="acme/app", build_systems=["gradle"],
                         files=["build.gradle"], commands=["./gradlew test"])
    hits = mem.retrieve(gradle, k=30)
    assert any(h.experience.id == "java-gradle-jdk17-major-61" for h in hits)
    assert [h.experience.id for h in hits if h.experience.context.build_systems and proactive(h, 0.66)] == []


def test_the_report_of_a_generic_entry_says_why_it_is_generic():
    """Issue 30 trial: a generic seed's `why` said only "hand-written; found by ..." -- nothing
    on why an entry about no package was offered to this project."""
    from agents.memory.retrieve import Hit

    seeds = {e.id: e for e in load_seed_files()}
    tls = seeds["py-tls-intercepted"]
    line = Hit(experience=tls, score=0.1, via="fused", queries=["py-tls", "profile"], why="hand-written").report()
    assert line["why"] == (f"hand-written; generic: {tls.context.generic}; found by query py-tls; profile")
    assert line["queries"] == ["py-tls", "profile"]
    django = Hit(experience=seeds[DJANGO], score=0.1, via="fused", queries=["profile"], why="hand-written").report()
    assert django["why"] == "hand-written; found by profile"


def test_every_hand_written_hit_says_on_what_grounds_it_may_serve_the_project():
    """Issue 30 trial: `py-pytest-lineno-alias` (context: pytest) showed only "hand-written; found
    by ..." on a project that runs pytest without declaring it, and the rule entries (no context)
    never said why. Every hand-written hit's why now names its grounds (`hand_written_reason`),
    and a ground that is not a context match never reads `context:` (`proactive` keys on it)."""
    from agents.memory.before import retrieval_report

    mem = memory()
    alias = "py-pytest-lineno-alias"
    runs_pytest = small_python({"requests": ""}).model_copy(update={"toolchain": "3.11"})
    declares = runs_pytest.model_copy(update={"declared": {"pytest": "<6"}})
    why = {h.experience.id: h.why for h in mem.retrieve(runs_pytest, k=30)}
    assert why[alias] == "hand-written; named by the project: pytest (test framework)"
    assert {h.experience.id: h.why for h in mem.retrieve(declares, k=30)}[alias] == \
        "hand-written; context: dependency pytest"
    rules = [i for i in why if i.startswith("rule-diag-")]
    assert rules and all(why[i] == "hand-written; context not required (it names no package or build system)"
                         for i in rules), why
    cmake = RepoContext(ecosystem="c", toolchain="12", repo="acme/c", build_systems=["cmake"],
                        files=["CMakeLists.txt"], commands=["cmake -B build && cmake --build build"])
    for ctx in (runs_pytest, declares, small_python({}), cmake):
        hits = mem.retrieve(ctx, k=30)
        assert not [h.experience.id for h in hits if h.experience.provenance.hand_written
                    and not h.experience.context.generic and h.why == "hand-written"]
        assert [h.experience.id for h in hits if h.experience.provenance.hand_written
                and ("context: " in h.why) != bool(context_match(h.experience, ctx))] == []
        report = json.loads(retrieval_report("before-plan", ctx, hits, k=30))
        assert all(not h["why"].startswith("hand-written; found by") for h in report["hits"]), report["hits"]
    # after a failure the error decides, and the why says so
    [zlib] = [h for h in mem.retrieve_for_error("src/x.c:3:10: fatal error: zlib.h: No such file or directory",
                                                "c", ctx=cmake) if h.experience.id == "c-zlib-header"]
    assert zlib.why == ("signature; hand-written; about zlib1g-dev, which the project does not name; "
                        "its error decides (after a failure)")

"""Retrieval: BM25 on real error texts, signature-first ranking, ecosystem filter, context queries."""

from __future__ import annotations

from datetime import datetime, timezone

import numpy as np
import pytest

from agents.ecosystems.python.profile import PythonProfile
from agents.memory.api import ExperienceMemory
from agents.memory.repo_context import ObstacleRules, RepoContext, caps_below, context_from_python_profile
from agents.memory.experience import Experience, Provenance
from agents.memory.retrieve import RetrievalConfig, Retriever, format_for_prompt
from agents.memory.text import error_excerpt


@pytest.fixture(scope="module")
def retriever(seeds) -> Retriever:
    return Retriever(seeds)


@pytest.mark.parametrize(("log", "eco", "expected"), [
    ("uv_abi", "python", "py-uv-no-abi-wheel"),
    ("jest_jsdom", "javascript", "js-jest28-jsdom"),
    ("npm_eresolve", "javascript", "js-npm-eresolve-peer"),
    ("node_md4", "javascript", "js-openssl-legacy-provider"),
    ("go_requires", "go", "go-mod-requires-newer-go"),
])
def test_bm25_alone_picks_the_right_entry_for_real_errors(retriever, golden, log, eco, expected):
    hits = retriever.search(error_excerpt(golden(log)), ecosystem=eco, k=3)
    assert hits[0].experience.id == expected


def _entry(id, signature, problem, eco="python", **kw):
    return Experience(id=id, problem=problem, solution="do something about it", ecosystem=eco,
                      error_signature=signature, **kw)


def test_signature_match_outranks_a_bm25_only_hit():
    error = "FooError: the frobnicator exploded while resolving widgets"
    lexical = _entry("lexical", r"never matches this", "frobnicator exploded resolving widgets frobnicator widgets")
    sig = _entry("by-signature", r"FooError: the frobnicator exploded", "an unrelated description of the problem")
    r = Retriever([lexical, sig])
    assert r.search(error, "python")[0].experience.id == "lexical"  # BM25 alone prefers the lexical entry
    hits = r.retrieve_for_error(error, "python")
    assert [(h.experience.id, h.via) for h in hits] == [("by-signature", "signature"), ("lexical", "bm25")]
    assert hits[0].score > hits[1].score


def test_among_signature_matches_the_more_reliable_entry_comes_first():
    text = "BarError: widget missing"
    fresh = _entry("fresh", r"BarError: widget missing", "BarError: widget missing, a long description")
    proven = _entry("proven", r"BarError", "BarError happens", times_applied=4, times_worked=4)
    failing = _entry("failing", r"widget missing", "widget missing here", times_applied=4, times_worked=0)
    hits = Retriever([fresh, failing, proven]).retrieve_for_error(text, "python")
    assert [h.experience.id for h in hits] == ["proven", "fresh", "failing"]


def test_ecosystem_filter_and_families(retriever, golden):
    md4 = golden("node_md4")
    assert all(h.experience.ecosystem in ("python", "any") for h in retriever.retrieve_for_error(md4, "python"))
    ts_hits = retriever.retrieve_for_error(md4, "typescript")
    assert ts_hits[0].experience.id == "js-openssl-legacy-provider"  # TS repositories see JS entries
    assert all(h.experience.ecosystem in ("typescript", "javascript", "any") for h in ts_hits)
    dubious = "fatal: detected dubious ownership in repository at '/testbed'"
    for eco in ("python", "go", "ruby"):
        assert retriever.retrieve_for_error(dubious, eco)[0].experience.id == "any-git-dubious-ownership"


def test_negatives_are_excluded_unless_asked():
    neg = _entry("neg", r"QuxError", "QuxError: nothing helped", negative=True,
                 provenance=Provenance(source="learned"))
    r = Retriever([neg])
    assert r.retrieve_for_error("QuxError: boom", "python") == []
    assert r.retrieve_for_error("QuxError: boom", "python", include_negative=True)[0].experience.id == "neg"
    assert Retriever([neg], RetrievalConfig(include_negative=True)).retrieve_for_error("QuxError", "python")


def test_context_retrieval_for_an_old_python_repository(retriever):
    ctx = RepoContext(ecosystem="python", toolchain="3.11", era=2019, frameworks=["pytest"],
                      files=["setup.py", "setup.cfg"], declared={"pytest": "<5", "numpy": ">=1.13", "jinja2": ""},
                      flags=["compiled"])
    hits = retriever.retrieve(ctx)
    ids = [h.experience.id for h in hits]
    assert len(hits) == 10 and len(set(ids)) == 10
    assert {"py-pytest-lineno-alias", "py-collections-abc-aliases"} <= set(ids)
    assert {"py-numpy2-abi", "py-jinja2-removed-names"} <= set(ids)  # its declared dependencies' entries
    assert "py-uv-no-abi-wheel" in [h.experience.id for h in retriever.retrieve(ctx, k=15)]
    assert ids[0] == "py-pytest-lineno-alias"  # found by three queries (old pytest, era, generic)
    assert all(h.experience.ecosystem in ("python", "any") and h.via == "fused" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert retriever.retrieve(ctx, k=3) == hits[:3]


def test_context_queries_follow_the_rules():
    rules = ObstacleRules.load()
    old = RepoContext(ecosystem="python", toolchain="3.11", era=2019, declared={"pytest": "==4.6.11"})
    ids = [r.id for r in rules.queries(old)]
    assert {"py-no-wheel-for-interpreter", "py-removed-stdlib-api", "py-old-pytest"} <= set(ids)
    same_era = RepoContext(ecosystem="python", toolchain="3.11", era=2022, declared={"pytest": ">=7"})
    ids = [r.id for r in rules.queries(same_era)]
    assert "py-no-wheel-for-interpreter" not in ids and "py-old-pytest" not in ids
    node = RepoContext(ecosystem="typescript", toolchain="20", era=2021)
    assert "js-openssl3-node17" in [r.id for r in rules.queries(node)]


def test_context_retrieval_for_an_old_webpack_app(retriever):
    ctx = RepoContext(ecosystem="javascript", toolchain="20", era=2020, frameworks=["jest"],
                      files=["package-lock.json"], declared={"webpack": "^4.0.0", "node-sass": "^4.14"})
    ids = [h.experience.id for h in retriever.retrieve(ctx)]
    assert {"js-openssl-legacy-provider", "js-node-sass-runtime", "js-jest28-jsdom"} <= set(ids)


@pytest.mark.parametrize(("spec", "version", "expected"), [
    ("<5", "5", True), ("<5", "4", False), ("==4.6.11", "6.2.5", True), ("~=4.6", "5", True), ("^4.0.0", "5", True),
    (">=6", "6.2.5", False), ("", "5", False), (None, "5", False), ("<=6.2.5", "6.2.5", False)])
def test_caps_below(spec, version, expected):
    assert caps_below(spec, version) is expected


def test_context_from_the_python_analysis_profile():
    profile = PythonProfile(commit="abc", has_setup_py=True, tox_deps=["pytest<5", "numpy>=1.13"], compiled=True,
                          uses_scm_version=True, pytest_plugins=["pytest-cov"], python_requires=">=3.6,<3.10")
    ctx = context_from_python_profile(profile, "3.11", datetime(2019, 5, 1, tzinfo=timezone.utc))
    assert ctx.era == 2019 and ctx.toolchain == "3.11" and "setup.py" in ctx.files
    assert ctx.declared["pytest"] == "<5" and {"compiled", "scm_version", "python_capped"} <= set(ctx.flags)
    assert {"pytest", "pytest-cov"} <= set(ctx.frameworks)


def test_embeddings_are_optional_and_fused_when_on(seeds):
    with pytest.raises(ValueError):
        Retriever(seeds[:5], RetrievalConfig(embeddings=True))
    words = ["openssl", "wheel", "cargo"]

    def embed(texts):
        return np.array([[t.lower().count(w) + 0.01 for w in words] for t in texts])

    r = Retriever(seeds, RetrievalConfig(embeddings=True), embedder=embed)
    assert r.search("openssl openssl", "javascript")[0].experience.id == "js-openssl-legacy-provider"


def test_actions_for_binds_and_skips_known_failures(memory: ExperienceMemory, golden):
    plans = memory.actions_for(golden("uv_abi"), "python")
    assert plans[0].experience_id == "py-uv-no-abi-wheel" and plans[0].complete
    assert [a.model_dump() for a in plans[0].actions] == [{"kind": "uv_lift", "package": "torch"}]
    scm = "LookupError: setuptools-scm was unable to detect version for /testbed."
    assert memory.actions_for(scm, "python", variables={"project_version": "4.5.0"})[0].actions[0].value == "4.5.0"
    assert memory.actions_for(scm, "python")[0].actions[0].value == "0.0.0"  # the default
    assert memory.actions_for("some error nobody has seen", "python") == []
    # a learned negative with the same actions as the seed marks that plan as known not to work
    memory.store.add(_entry("learned-python-neg", r"has no wheels with a matching Python ABI tag", "torch no wheels",
                            negative=True, actions=[{"kind": "uv_lift", "package": "torch"}],
                            provenance=Provenance(source="learned")))
    assert all(p.experience_id != "py-uv-no-abi-wheel" for p in memory.actions_for(golden("uv_abi"), "python"))


def test_format_for_prompt_lists_entries(retriever, golden):
    text = format_for_prompt(retriever.retrieve_for_error(golden("uv_abi"), "python", k=2))
    assert text.startswith("[1] py-uv-no-abi-wheel") and "uv_lift" in text and "[2]" in text


def test_recording_an_outcome_updates_the_retriever_in_place(memory: ExperienceMemory, golden):
    retriever = memory.retriever
    memory.record_outcome("py-uv-no-abi-wheel", worked=True, instance_id="i-1")
    assert memory.retriever is retriever  # counters changed, no re-index
    hit = memory.retrieve_for_error(golden("uv_abi"), "python", k=1)[0]
    assert hit.experience.id == "py-uv-no-abi-wheel" and hit.experience.times_worked == 1
    memory.store.add(_entry("learned-python-new", r"ZzzError", "ZzzError: a brand new problem"))
    assert memory.retriever is not retriever  # a new entry: rebuilt
    assert memory.retrieve_for_error("ZzzError: boom", "python")[0].experience.id == "learned-python-new"


def test_a_negative_lesson_confirmed_past_min_uses_is_never_dropped_and_still_filters(memory: ExperienceMemory, golden):
    """A negative lesson's applied counts confirmations (the error met again, unfixed) and its
    worked never grows: the floor (learned 1/6 at applied 4) would drop it exactly when it was
    confirmed most, and the repair it refused would be offered again."""
    neg = _entry("learned-python-neg6", r"has no wheels with a matching Python ABI tag", "torch no wheels",
                 negative=True, actions=[{"kind": "uv_lift", "package": "torch"}], times_applied=6,
                 provenance=Provenance(source="learned"))
    assert not neg.dropped(floor=0.34, min_uses=4) and neg.reliability < 0.34
    positive = neg.model_copy(update={"negative": False, "id": "learned-python-pos6"})
    assert positive.dropped(floor=0.34, min_uses=4)  # the floor itself is unchanged for every other entry
    memory.store.add(neg)
    assert "learned-python-neg6" not in {e.id for e in memory.dropped_entries()}
    assert all(p.experience_id != "py-uv-no-abi-wheel" for p in memory.actions_for(golden("uv_abi"), "python"))

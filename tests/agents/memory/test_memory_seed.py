"""The team's seed set (data/experiences) and the likely-obstacle rules: valid, specific, usable."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from agents.memory.actions import _PH, bind_actions, error_variables
from agents.memory.repo_context import ObstacleRules, RepoContext
from agents.memory.experience import SeedError, memory_languages
from agents.memory.retrieve import Retriever
from agents.memory.experience_store import load_seed_files

CALLER_VARIABLES = {"site_package", "missing_module", "project_version", "ca_bundle", "commit_date", "import_path",
                    "django_settings", "node_for_node_sass", "jest_major", "goproxy", "go_tags", "msrv",
                    "gradle_mirror", "cmake_pkg_debian"}
"""Placeholders the caller (or the error text) supplies; all others must be signature groups."""

# real outputs -> the seed entry whose signature must recognise them
GOLDEN_TO_ENTRY = {"uv_abi": "py-uv-no-abi-wheel", "uv_pyyaml": "py-pyyaml-cython-sources",
                   "uv_requires_python": "py-dependency-needs-newer-python",
                   "py_collections": "py-collections-abc-aliases", "py_soft_unicode": "py-markupsafe-soft-unicode",
                   "py_np_float": "py-numpy-removed-aliases", "node_md4": "js-openssl-legacy-provider",
                   "npm_eresolve": "js-npm-eresolve-peer", "npm_ci_sync": "js-npm-ci-out-of-sync",
                   "jest_jsdom": "js-jest28-jsdom", "go_requires": "go-mod-requires-newer-go",
                   "cargo_rustc": "rust-requires-newer-rustc", "cpp_cstdint": "cpp-gcc13-missing-cstdint",
                   "cmake_min": "c-cmake-too-old"}


def test_seed_set_is_large_and_covers_every_ecosystem(seeds):
    assert len(seeds) >= 150
    per = Counter(e.ecosystem for e in seeds)
    assert set(per) <= set(memory_languages()) and len(set(per) - {"any"}) >= 10
    for eco in set(per) - {"any"}:  # a language with seed lessons has a real set of them
        assert per[eco] >= 12, (eco, per[eco])
    assert all(e.provenance.source == "seed" and not e.negative and e.times_applied == 0 for e in seeds)


def test_seed_ids_are_unique(seeds):
    ids = [e.id for e in seeds]
    assert len(ids) == len(set(ids))


def test_every_signature_compiles_and_matches_its_own_problem(seeds):
    bad = [e.id for e in seeds if not e.signature_re.search(e.problem)]
    assert bad == []


def test_every_placeholder_can_be_bound(seeds):
    for e in seeds:
        groups = set(e.signature_re.groupindex)
        for action in e.actions:
            for name, default in _PH.findall(action.model_dump_json()):
                assert default or name in groups or name in CALLER_VARIABLES, (e.id, name)


def test_no_signature_is_so_broad_it_matches_many_problems(seeds):
    for e in seeds:
        others = [o.id for o in seeds if o.id != e.id and e.signature_re.search(o.problem)]
        assert len(others) <= 2, (e.id, others)


@pytest.mark.parametrize(("log", "entry_id"), sorted(GOLDEN_TO_ENTRY.items()))
def test_real_outputs_are_recognised_by_the_right_entry(seeds, golden, log, entry_id):
    text = golden(log)
    entry = next(e for e in seeds if e.id == entry_id)
    assert entry.signature_re.search(text)
    bound, unbound = bind_actions(entry.actions, error_variables(entry, text))
    assert set(unbound) <= CALLER_VARIABLES and (bound or unbound)


def test_a_traceback_through_site_packages_names_the_package_to_lift(seeds, golden):
    entry = next(e for e in seeds if e.id == "py-collections-abc-aliases")
    text = ('  File "/opt/venv/lib/python3.11/site-packages/jinja2/utils.py", line 1, in <module>\n'
            + golden("py_collections"))
    bound, unbound = bind_actions(entry.actions, error_variables(entry, text))
    assert [a.model_dump() for a in bound] == [{"kind": "uv_lift", "package": "jinja2"}] and not unbound


def test_abi_entry_binds_the_package_from_the_real_uv_message(seeds, golden):
    entry = next(e for e in seeds if e.id == "py-uv-no-abi-wheel")
    bound, _ = bind_actions(entry.actions, error_variables(entry, golden("uv_abi")))
    assert [a.model_dump() for a in bound] == [{"kind": "uv_lift", "package": "torch"}]


def test_seed_loader_names_file_and_line_of_a_bad_entry(tmp_path, seeds):
    good = seeds[0].model_dump_json()
    (tmp_path / "a.jsonl").write_text(good + "\n\n// a comment\n{not json\n")
    with pytest.raises(SeedError, match=r"a\.jsonl:4"):
        load_seed_files(tmp_path)
    (tmp_path / "a.jsonl").write_text(good + "\n")
    (tmp_path / "b.jsonl").write_text(good + "\n")
    with pytest.raises(SeedError, match="already defined"):
        load_seed_files(tmp_path)
    bad_sig = seeds[0].model_dump(mode="json") | {"error_signature": "(unclosed"}
    (tmp_path / "b.jsonl").write_text(json.dumps(bad_sig) + "\n")
    with pytest.raises(SeedError, match="does not compile"):
        load_seed_files(tmp_path)


def test_every_obstacle_rule_finds_entries_of_its_ecosystem(seeds):
    rules = ObstacleRules.load()
    retriever = Retriever(seeds, rules=rules)
    for rule in rules.rules:
        hits = retriever.search(rule.query, ecosystem=rule.ecosystems[0], k=3)
        assert hits, rule.id
        assert all(h.experience.ecosystem in (*rule.ecosystems, "javascript", "typescript", "c", "cpp", "any")
                   for h in hits)


def test_obstacle_rules_know_every_toolchain_year():
    rules = ObstacleRules.load()
    assert rules.release_year("python", "3.11.2") == 2022
    assert rules.release_year("go", "1.21.5") == 2023
    assert rules.release_year("python", "9.9") is None
    # with nothing known about the repository only the unconditional (generic) rules hold
    assert [r.id for r in rules.queries(RepoContext(ecosystem="python"))] == ["py-generic"]

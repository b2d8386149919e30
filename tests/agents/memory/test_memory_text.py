"""Error text handling: tokens, key lines and derived signatures on real outputs."""

from __future__ import annotations

import re

import pytest

from agents.memory.text import clean, error_excerpt, key_lines, signature_for, tokenize

LOGS = ["uv_abi", "uv_pyyaml", "uv_requires_python", "py_collections", "py_soft_unicode", "py_np_float",
        "node_md4", "npm_eresolve", "npm_ci_sync", "jest_jsdom", "go_requires", "cargo_rustc", "cpp_cstdint",
        "cmake_min", "c_header"]


def test_clean_strips_ansi_and_progress_redraws():
    assert clean("\x1b[1m\x1b[31mE   ImportError\x1b[0m: x\n50%\r100% done") == "E   ImportError: x\n100% done"


def test_tokenize_keeps_compounds_and_their_parts():
    toks = tokenize("code: 'ERR_OSSL_EVP_UNSUPPORTED' in site-packages/numpy for Python 3.10, numpy==1.19.5 cp311")
    for t in ("err_ossl_evp_unsupported", "ossl", "unsupported", "site-packages", "package", "numpy", "3.10", "cp311"):
        assert t in toks
    assert "1.19.5" not in toks and "19" not in toks and "the" not in toks


@pytest.mark.parametrize("name", LOGS)
def test_signature_compiles_and_matches_its_own_output(golden, name):
    text = golden(name)
    sig = signature_for(text)
    assert re.search(sig, clean(text), re.IGNORECASE)


@pytest.mark.parametrize("name", LOGS)
def test_signature_does_not_match_the_other_outputs(golden, name):
    sig = re.compile(signature_for(golden(name)), re.IGNORECASE)
    assert [o for o in LOGS if o != name and sig.search(clean(golden(o)))] == []


def test_signature_generalises_over_versions_paths_and_quotes(golden):
    sig = re.compile(signature_for(golden("uv_abi")), re.IGNORECASE)
    assert sig.search("Because torch==1.7.1 has no wheels with a matching Python ABI tag (e.g., `cp312`)")
    assert not sig.search("Because numpy==1.7.1 has no wheels with a matching Python ABI tag")
    gcc = re.compile(signature_for("src/foo.c:12:3: fatal error: zlib.h: No such file or directory"))
    assert gcc.search("lib/other/bar.c:1:10: fatal error: zlib.h: No such file or directory")
    quotes = re.compile(signature_for("a.cpp:2:1: error: ‘uint8_t’ does not name a type"))
    assert quotes.search("b.cpp:9:5: error: 'uint8_t' does not name a type")


def test_key_lines_prefer_the_statement_over_boilerplate(golden):
    lines = key_lines(golden("uv_pyyaml"), n=2)
    assert any("cython_sources" in ln for ln in lines)
    assert not any("Build failures usually indicate" in ln for ln in lines)
    assert error_excerpt(golden("py_collections")).startswith("ImportError: cannot import name 'Mapping'")


def test_signature_of_empty_text_matches_anything():
    assert re.search(signature_for(""), "x")

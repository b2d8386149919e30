"""Reciprocal Rank Fusion math and the BM25 index."""

from __future__ import annotations

import numpy as np
import pytest

from agents.memory.rank import BM25Index, DenseIndex, rrf
from agents.memory.text import tokenize


def test_rrf_matches_hand_computed_scores():
    lists = [["a", "b", "c"], ["b", "a"], ["c"]]
    got = dict(rrf(lists, k=60))
    assert got["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert got["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert got["c"] == pytest.approx(1 / 63 + 1 / 61)
    # a and b tie: the one seen first comes first; c (one top rank, one third) is below both
    assert [key for key, _ in rrf(lists, k=60)] == ["a", "b", "c"]


def test_rrf_k_changes_how_much_the_top_rank_counts():
    lists = [["x", "y"], ["z", "y"]]
    # k=0: one first place (1/1) is worth two second places (1/2 + 1/2): a three-way tie
    assert dict(rrf(lists, k=0)) == {"x": 1.0, "y": 1.0, "z": 1.0}
    # with k=60, consensus wins: y = 2/62 > x = 1/61
    assert rrf(lists, k=60)[0][0] == "y"


def test_rrf_weights_and_repeats():
    got = dict(rrf([["a", "a", "b"], ["b"]], k=1, weights=[2.0, 0.5]))
    assert got["a"] == pytest.approx(2 / 2)  # the repeat is dropped, so b is second in list 1
    assert got["b"] == pytest.approx(2 / 3 + 0.5 / 2)


@pytest.mark.parametrize("kwargs", [{"k": -1}, {"weights": [1.0]}])
def test_rrf_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        rrf([["a"], ["b"]], **kwargs)


def test_rrf_of_nothing_is_empty():
    assert rrf([]) == [] and rrf([[], []]) == []


DOCS = ["numpy has no wheels with a matching Python ABI tag", "openssl legacy provider for webpack md4 hashing",
        "cargo lock file version 4 requires a newer cargo", "numpy removed the np.float alias"]


def test_bm25_ranks_the_document_sharing_rare_terms_first():
    index = BM25Index([tokenize(d) for d in DOCS])
    assert index.rank(tokenize("ERR_OSSL_EVP_UNSUPPORTED openssl md4"))[0] == 1
    assert index.rank(tokenize("Cargo.lock version 4"))[0] == 2
    ranked = index.rank(tokenize("numpy wheel ABI tag"))
    assert ranked[:2] == [0, 3]
    assert index.rank(tokenize("nothing in common zzz")) == []


def test_bm25_mask_and_relative_floor():
    index = BM25Index([tokenize(d) for d in DOCS])
    mask = np.array([False, True, True, True])
    assert 0 not in index.rank(tokenize("numpy wheel ABI tag"), mask=mask)
    assert index.rank(tokenize("numpy wheel ABI tag"), min_relative=0.9) == [0]


def test_bm25_on_empty_corpus():
    index = BM25Index([])
    assert index.rank(["x"]) == [] and index.scores(["x"]).shape == (0,)


def test_dense_index_ranks_by_cosine():
    vocab = ["numpy", "openssl", "cargo"]

    def embed(texts):
        return np.array([[t.lower().count(w) for w in vocab] for t in texts], dtype=float)

    dense = DenseIndex(DOCS, embed)
    assert dense.rank("openssl openssl")[0] == 1
    assert dense.rank("numpy", mask=np.array([False, True, True, True]))[0] == 3

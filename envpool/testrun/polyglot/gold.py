"""Scoring our test ids against SWE-bench Multilingual gold ids (which follow each repository's
harness: Go names without the package, Java classes only, jq's scripts, PHPUnit testdox titles).

The matcher, in one sentence: our id matches a gold id when they are equal, or when one contains
the other *bounded by separators* at both edges -- where, on the left, the contained id follows
the start, ``.``, ``/``, ``::``, ``#``, ``>`` or a space; and on the right, it is followed by the
end, ``.``, ``/``, ``::``, ``#``, ``>`` or `` >``. A bare space is a left edge only: otherwise
the testdox title ``Is > Is`` (``testIs``) would match ``Is > Is weekday true``
(``testIsWeekdayTrue``), a different test. Before comparing, our id is also tried in the gold
forms a repository may use (`gold_forms`: PHPUnit ``Ns\\XTest::testFoo`` -> ``X > Foo``).

Examples: ours ``github.com/gin-gonic/gin::TestContextBindHeader`` / gold
``TestContextBindHeader``; ours ``com.github.javaparser.ast.NodeTest#testRemove`` / gold
``NodeTest``; ours ``TestFakerInternet#test_password`` / gold ``test_password``; ours
``src/a.spec.ts > suite > test`` / gold ``suite > test``; ours
``Tests\\Carbon\\RoundTest::testFloorYear`` / gold ``Round > Floor year``; ours
``com.github.javaparser.ast.NodeTest$PostOrderIteratorTest#rootHasNoChild`` / gold ``NodeTest``
(``$``, Java's nested-class separator, is an edge too).

This deviates from the plain rule "a space bounds both edges" on purpose: with it, mocha's
``... should support max body length`` would match ``... should support max body length
(follow-redirects as well)``, and scoring could not reach a meaningful precision.
`exact_form_agreement` reports, apart, how many gold ids we produce verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable

from envpool.testrun.polyglot.php import dox_id

LEFT_EDGES = (".", "/", "::", "#", ">", " ", "$")
RIGHT_EDGES = (".", "/", "::", "#", ">", " >", "$")
"""`$` beside the issue's list: Java's nested-class separator (Surefire names a JUnit 5 @Nested
class `pkg.NodeTest$PostOrderIteratorTest`; gold gives the outer class `NodeTest`)."""


def gold_forms(ours: str) -> list[str]:
    """`ours` and the other forms it is compared in (PHPUnit ids: their testdox title)."""
    forms = [ours]
    dox = dox_id(ours)
    if dox:
        forms.append(dox)
    return forms


def contains_bounded(hay: str, needle: str) -> bool:
    """Whether `needle` occurs in `hay` with a separator (or an end) on both sides."""
    if not needle:
        return False
    start = hay.find(needle)
    while start >= 0:
        end = start + len(needle)
        left = start == 0 or hay[:start].endswith(LEFT_EDGES)
        right = end == len(hay) or hay[end:].startswith(RIGHT_EDGES)
        if left and right:
            return True
        start = hay.find(needle, start + 1)
    return False


def gold_match(ours: str, gold: str) -> bool:
    """Whether our id `ours` is (at gold's granularity) the gold id `gold`; see the module doc."""
    if not ours or not gold:
        return False
    return any(f == gold or contains_bounded(f, gold) or contains_bounded(gold, f)
               for f in gold_forms(ours))


def matched(ours: Iterable[str], gold: Iterable[str]) -> tuple[set[str], set[str]]:
    """(our ids matching some gold id, gold ids matched by some of ours) -- for precision
    (``len(first) / len(ours)``) and recall (``len(second) / len(gold)``). O(n*m)."""
    ours, gold = list(dict.fromkeys(ours)), list(dict.fromkeys(gold))
    hit_ours, hit_gold = set(), set()
    for o in ours:
        for g in gold:
            if gold_match(o, g):
                hit_ours.add(o)
                hit_gold.add(g)
    return hit_ours, hit_gold


def exact_form_agreement(ours: Iterable[str], gold: Iterable[str]) -> float:
    """Share of gold ids that appear verbatim among ours (1.0 when gold is empty)."""
    gold_set, ours_set = set(gold), set(ours)
    if not gold_set:
        return 1.0
    return len(gold_set & ours_set) / len(gold_set)


def score_against_gold_ids(ours_f2p: Iterable[str], ours_p2p: Iterable[str],
                           gold_f2p: Iterable[str], gold_p2p: Iterable[str]) -> dict:
    """`envpool.grading.score_against_gold`'s keys, with ids compared by `gold_match` (gold's
    granularity): `f2p_recall` (gold F2P ids matched by ours), `f2p_precision` (our F2P ids
    matching a gold id), `f2p_exact` (both 1.0), `p2p_recall` / `p2p_precision` likewise,
    `exact_form` (gold F2P ids we produce verbatim), and the unmatched lists. A ratio over an
    empty list is 1.0."""
    of, op, gf, gp = (sorted(set(x)) for x in (ours_f2p, ours_p2p, gold_f2p, gold_p2p))
    hit_of, hit_gf = matched(of, gf)
    hit_op, hit_gp = matched(op, gp)

    def ratio(n: int, d: int) -> float:
        return 1.0 if d == 0 else n / d
    recall, precision = ratio(len(hit_gf), len(gf)), ratio(len(hit_of), len(of))
    return {"f2p_recall": recall, "f2p_precision": precision, "f2p_exact": recall == 1.0 and precision == 1.0,
            "p2p_recall": ratio(len(hit_gp), len(gp)), "p2p_precision": ratio(len(hit_op), len(op)),
            "exact_form": exact_form_agreement(of, gf),
            "f2p_missing": [g for g in gf if g not in hit_gf], "f2p_extra": [o for o in of if o not in hit_of],
            "p2p_missing": [g for g in gp if g not in hit_gp], "p2p_extra": [o for o in op if o not in hit_op]}

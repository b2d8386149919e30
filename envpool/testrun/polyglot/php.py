"""PHP: PHPUnit ``--log-junit`` reports, and PHPUnit's testdox names (for gold matching).

Test ids: ``<class with namespace>::<test name>`` as PHPUnit names tests (``--filter`` accepts
it), e.g. ``Tests\\Carbon\\RoundTest::testFloorYear`` and, for a data provider,
``Tests\\Carbon\\TotalTest::testReturnsTotalValue with data set #0``.

SWE-bench Multilingual's PHP gold ids are the ``--testdox`` rendering instead
(``Round > Floor year``); `dox_id` computes it and `gold.gold_match` uses it. (The helpers are
named ``dox_*``, not ``testdox_*``, so that pytest does not collect them where imported.)

Status mapping (JUnit children):

| PHPUnit JUnit                        | TestStatus |
|--------------------------------------|------------|
| none                                 | PASSED     |
| `<failure>`                          | FAILED     |
| `<error>` (incl. risky in PHPUnit 9) | ERROR      |
| `<skipped>` (skipped, incomplete)    | SKIPPED    |

Sources: PHPUnit's `Logging/JUnit/JunitXmlLogger.php` and `Logging/TestDox/NamePrettifier.php`
(PHPUnit 10; the 9.x prettifier differs only for classes).
"""

from __future__ import annotations

import re

from envpool.testrun.polyglot.common import Result, junit_cases, report_parser


@report_parser(raw=True)
def parse_phpunit_junit(raw: bytes) -> Result:
    """Parse PHPUnit's ``--log-junit`` XML (nested suites: one per class, one per data provider).

    Shape: ``<testcase name="testX[ with data set #0]" class="Ns\\XTest"
    classname="Ns.XTest" file=... line=...>``. The ``class`` attribute is used; without it
    (older PHPUnit) the dotted ``classname`` with dots turned back into backslashes.
    """
    res = Result(source="junit")
    for case in junit_cases(raw):
        cls = case.attrs.get("class") or case.classname.replace(".", "\\")
        res.add(f"{cls}::{case.name}" if cls else case.name, case.status)
    return res


def dox_class(class_name: str) -> str:
    """PHPUnit 10's testdox class title: short name without a ``Test`` suffix/prefix, split
    where a lower-case letter meets an upper-case one (``Tests\\Carbon\\RoundTest`` -> ``Round``).
    PHPUnit prints `` (Tests\\Carbon\\Round)`` after it; SWE-bench's gold ids drop that part."""
    name = class_name.replace(".", "\\").split("\\")[-1]
    if name.endswith("Test"):
        name = name[: -len("Test")]
    if name.startswith("Tests"):
        name = name[len("Tests"):]
    elif name.startswith("Test"):
        name = name[len("Test"):]
    return re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name or "UnnamedTests")


def dox_method(name: str) -> str:
    """PHPUnit's testdox method title (``testCreateFromIso8601String`` -> ``Create from iso 8601
    string``; ``test_foo_bar`` -> ``Foo bar``). A data-set suffix (`` with data set #0``) is kept.
    PHPUnit's de-duplication of trailing digits across one class's methods is not reproduced."""
    name, sep, data_set = name.partition(" with data set ")
    suffix = f" with data set {data_set}" if sep else ""
    if name.startswith("test_"):
        name = name[5:]
    elif name.startswith("test"):
        name = name[4:]
    if not name:
        return suffix.strip()
    name = name[0].upper() + name[1:]
    if "_" in name:
        return name.replace("_", " ").strip() + suffix
    out, was_numeric = [], False
    for i, ch in enumerate(name):
        if i > 0 and "A" <= ch <= "Z":
            out.append(" " + ch.lower())
            continue
        is_numeric = ch.isdigit()
        if is_numeric and not was_numeric:
            out.append(" ")
            was_numeric = True
        elif was_numeric and not is_numeric:
            was_numeric = False
        out.append(ch)
    return "".join(out) + suffix


def dox_id(test_id: str) -> str | None:
    """``Tests\\Carbon\\RoundTest::testFloorYear`` -> ``Round > Floor year``; None for ids that
    are not PHPUnit ``Class::test...`` ids (Rust paths like ``a::tests::b`` have no class)."""
    cls, sep, method = test_id.rpartition("::")
    short = cls.split("\\")[-1]
    if not sep or not method.startswith("test") or not (short.endswith("Test") or "\\" in cls):
        return None
    return f"{dox_class(cls)} > {dox_method(method)}"


PARSERS = {"phpunit_junit": parse_phpunit_junit}
"""This module's parsers by the name a row stores (collected by `envpool.testrun.registry`)."""

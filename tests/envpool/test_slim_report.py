"""A JUnit report over the report limit is read as a stream and graded (issue 26, item 4): every
test's status kept, captured output past a bound dropped (`envpool.testrun.slim`)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from envpool.evaluation import run_report
from envpool.fake import FakeSandbox
from envpool.sandbox import SandboxSpec
from envpool.testrun.registry import get_parser
from envpool.testrun.slim import SlimStats, slim_xml
from envpool.testrun.status import TestStatus

REPORT = "/tmp/swemint/report.xml"


def suite(cls: str, n: int, noise: int, failing: set[int] = frozenset()) -> bytes:
    """A Surefire TEST-<cls>.xml: `n` tests, each printing `noise` bytes; `failing` fail."""
    out = [f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="{cls}" tests="{n}" '
           f'failures="{len(failing)}" errors="0" skipped="0">\n<properties>'
           + "".join(f'<property name="p{i}" value="{"v" * 50}"/>' for i in range(200)) + "</properties>\n"]
    for i in range(n):
        body = f'<system-out><![CDATA[{"x" * noise} </system-out> inside CDATA]]></system-out>'
        fail = f'<failure message="boom {i}" type="java.lang.AssertionError">{"at a.b.C(C.java:1)&#10;" * 400}' \
               '</failure>' if i in failing else ""
        out.append(f'<testcase name="test{i}" classname="{cls}" time="0.01">{fail}{body}'
                   f'<system-err>err &amp; more</system-err></testcase>\n')
    out.append("</testsuite>\n")
    return "".join(out).encode()


def chunks(data: bytes, size: int):
    return (data[i:i + size] for i in range(0, len(data), size))


def test_slim_keeps_every_status_and_drops_long_bodies():
    data = suite("pkg.ATest", 30, 20_000, failing={3, 7}) + suite("pkg.BTest", 5, 10)
    st = SlimStats()
    slim = slim_xml(chunks(data, 7), stats=st)  # tiny chunks: tags and CDATA straddle them
    assert slim is not None and len(slim) < len(data) // 10 and st.read == len(data) and st.dropped >= 30 + 2 + 1
    parse = get_parser("java_junit")
    full, kept = parse(data), parse(slim)
    assert kept.statuses == full.statuses and len(kept.statuses) == 35
    assert kept.statuses["pkg.ATest#test3"] == TestStatus.FAILED and kept.statuses["pkg.BTest#test1"] == TestStatus.PASSED
    for doc in slim.split(b'<?xml version="1.0" encoding="UTF-8"?>\n')[1:]:  # each document still well-formed
        ET.fromstring(doc)
    assert b'message="boom 7"' in slim and b"err &amp; more" in slim  # attributes and short bodies as they were
    assert b"x" * 5000 not in slim and b"[swemint: " in slim
    assert slim_xml(chunks(data, 4096), limit=1000) is None  # the limit holds for what is kept
    assert slim_xml(chunks(data, 4096), max_read=10_000) is None


def test_a_report_over_the_limit_is_graded_from_the_stream():
    data = suite("pkg.ATest", 40, 50_000, failing={1})
    assert len(data) > 2_000_000
    sb = FakeSandbox(SandboxSpec(image="img", run_id="t"), report_cap=256 * 1024)
    sb.files[REPORT] = data
    got = run_report(sb, "mvn test", "java_junit", report_path=REPORT)
    assert got.anomalies == [] and got.report.tests_ran
    assert len(got.report.statuses) == 40 and got.report.statuses["pkg.ATest#test1"] == TestStatus.FAILED
    # a format whose statuses live in captured output is not slimmed: still not graded
    got = run_report(sb, "ctest", "ctest_junit", report_path=REPORT)
    assert got.anomalies and not got.report.tests_ran

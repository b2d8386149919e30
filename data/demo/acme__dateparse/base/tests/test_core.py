import datetime

import pytest

from dateparse import parse_date

D = datetime.date


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2021-04-03", D(2021, 4, 3)),
        ("04/03/2021", D(2021, 4, 3)),
        ("03.04.2021", D(2021, 4, 3)),
        ("20210403", D(2021, 4, 3)),
        ("  2021-4-3 ", D(2021, 4, 3)),
    ],
    ids=["iso [YYYY-MM-DD]", "us order [MM DD YYYY]", "dotted, day first", "compact digits",
         "padded iso (spaces)"],
)
def test_parse_formats(text, expected):
    assert parse_date(text) == expected


def test_impossible_date_raises():
    with pytest.raises(ValueError):
        parse_date("2021-02-30")


def test_garbage_raises():
    with pytest.raises(ValueError):
        parse_date("tomorrow")

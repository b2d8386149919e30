import datetime

import pytest

from dateparse import parse_date

D = datetime.date


@pytest.mark.parametrize(
    "text, expected",
    [
        ("03/04/2021", D(2021, 4, 3)),
        ("31/12/1999", D(1999, 12, 31)),
        ("03.04.2021", D(2021, 4, 3)),
    ],
    ids=["slashes [DD MM YYYY]", "day > 12 [31 12 1999]", "dotted [unchanged]"],
)
def test_dayfirst(text, expected):
    assert parse_date(text, dayfirst=True) == expected


def test_month_first_by_default():
    assert parse_date("03/04/2021") == D(2021, 3, 4)

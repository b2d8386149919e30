import pytest

from textkit import truncate


def test_short_text_unchanged():
    assert truncate("abc", 10) == "abc"


def test_text_of_exact_width_unchanged():
    assert truncate("abcde", 5) == "abcde"


def test_placeholder_wider_than_width():
    with pytest.raises(ValueError):
        truncate("abcdef", 2)


def test_cut_text_ends_with_placeholder():
    assert truncate("hello world", 8).endswith("...")

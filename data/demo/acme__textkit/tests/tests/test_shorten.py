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


def test_cut_text_keeps_as_much_as_fits():
    assert truncate("hello world", 8) == "hello..."


@pytest.mark.parametrize("width", [4, 8, 10])
def test_result_has_exact_width(width):
    assert len(truncate("hello world", width)) == width


def test_custom_placeholder():
    assert truncate("hello world", 6, placeholder="~") == "hello~"

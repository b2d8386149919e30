import pytest

from calcy import CalcError, evaluate


def test_number():
    assert evaluate("42") == 42


def test_addition():
    assert evaluate("1 + 2") == 3


def test_subtraction_is_left_associative():
    assert evaluate("10 - 3 - 2") == 5


def test_multiplication():
    assert evaluate("3*4") == 12


def test_parentheses():
    assert evaluate("(1 + 2) * 3") == 9


def test_unary_minus():
    assert evaluate("-2 * 3") == -6


class TestErrors:
    def test_unbalanced_parenthesis(self):
        with pytest.raises(CalcError):
            evaluate("(1 + 2")

    def test_unknown_character(self):
        with pytest.raises(CalcError):
            evaluate("1 $ 2")

    def test_division_by_zero(self):
        with pytest.raises(CalcError):
            evaluate("1 / 0")

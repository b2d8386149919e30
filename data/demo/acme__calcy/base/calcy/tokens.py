"""Split an expression into tokens."""

import attr

from calcy.errors import CalcError

OPERATORS = "+-*/"


@attr.s(frozen=True, slots=True)
class Token:
    """One token: `kind` is "num", "op", "lpar" or "rpar"."""

    kind = attr.ib()
    value = attr.ib()


def tokenize(src):
    """Return the list of Tokens of `src`; raises CalcError on an unknown character."""
    tokens = []
    i = 0
    while i < len(src):
        ch = src[i]
        if ch.isspace():
            i += 1
        elif ch.isdigit() or ch == ".":
            j = i
            while j < len(src) and (src[j].isdigit() or src[j] == "."):
                j += 1
            text = src[i:j]
            tokens.append(Token("num", float(text) if "." in text else int(text)))
            i = j
        elif ch in OPERATORS:
            tokens.append(Token("op", ch))
            i += 1
        elif ch == "(":
            tokens.append(Token("lpar", ch))
            i += 1
        elif ch == ")":
            tokens.append(Token("rpar", ch))
            i += 1
        else:
            raise CalcError(f"unexpected character {ch!r} at {i}")
    return tokens

"""Recursive-descent evaluation of token lists."""

from calcy.errors import CalcError
from calcy.tokens import tokenize


def _apply(op, left, right):
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        raise CalcError("division by zero")
    return left / right


class _Parser:
    def __init__(self, tokens):
        self.tokens = tokens
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def next(self):
        tok = self.peek()
        if tok is None:
            raise CalcError("unexpected end of expression")
        self.pos += 1
        return tok

    def expr(self):
        value = self.atom()
        while self.peek() is not None and self.peek().kind == "op":
            op = self.next().value
            value = _apply(op, value, self.atom())
        return value

    def atom(self):
        tok = self.next()
        if tok.kind == "num":
            return tok.value
        if tok.kind == "op" and tok.value == "-":
            return -self.atom()
        if tok.kind == "lpar":
            value = self.expr()
            if self.next().kind != "rpar":
                raise CalcError("expected ')'")
            return value
        raise CalcError(f"unexpected {tok.value!r}")


def evaluate(src):
    """Evaluate the arithmetic expression `src`; raises CalcError when it is malformed."""
    parser = _Parser(tokenize(src))
    value = parser.expr()
    if parser.peek() is not None:
        raise CalcError(f"unexpected {parser.peek().value!r}")
    return value

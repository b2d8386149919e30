"""calcy: a tiny arithmetic expression evaluator (+ - * / and parentheses)."""

from calcy.errors import CalcError
from calcy.parser import evaluate

__all__ = ["CalcError", "evaluate"]
__version__ = "0.3.0"

"""textkit: small string utilities."""

from textkit.case import camel_case, snake_case
from textkit.shorten import truncate

__all__ = ["camel_case", "snake_case", "truncate"]
__version__ = "0.4.1"

"""dateparse: parse the date formats people actually type."""

from dateparse.core import parse_date

__all__ = ["parse_date"]
__version__ = "1.2.0"

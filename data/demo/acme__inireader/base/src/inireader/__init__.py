"""inireader: typed getters over configparser."""

from inireader.reader import Reader

__all__ = ["Reader"]
__version__ = "0.2.0"

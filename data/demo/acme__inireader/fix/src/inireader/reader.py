"""A small typed view of an INI document."""

import configparser

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


class Reader:
    """Read typed values from INI `text`."""

    def __init__(self, text):
        self._cp = configparser.ConfigParser()
        self._cp.read_string(text)

    def get(self, section, key, default=None):
        """The raw string value, or `default` when the section or key is missing."""
        return self._cp.get(section, key, fallback=default)

    def get_int(self, section, key, default=None):
        """The value as an int; ValueError when it is not a number."""
        value = self.get(section, key)
        return default if value is None else int(value)

    def get_bool(self, section, key, default=None):
        """The value as a bool (1/0, true/false, yes/no, on/off); ValueError otherwise."""
        value = self.get(section, key)
        if value is None:
            return default
        value = value.strip().lower()
        if value in _TRUE:
            return True
        if value in _FALSE:
            return False
        raise ValueError(f"not a boolean: {value!r}")

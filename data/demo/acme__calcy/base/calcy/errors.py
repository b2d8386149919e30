class CalcError(ValueError):
    """The expression is malformed."""

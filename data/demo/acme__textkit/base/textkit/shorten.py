"""Shorten text to a fixed width."""


def truncate(text: str, width: int, placeholder: str = "...") -> str:
    """Return `text` cut to at most `width` characters.

    When the text is longer than `width`, the result ends with `placeholder` and is exactly
    `width` characters long. Raises ValueError when `width` is smaller than the placeholder.
    """
    if width < len(placeholder):
        raise ValueError("width is smaller than the placeholder")
    if len(text) <= width:
        return text
    return text[: width - len(placeholder) - 1] + placeholder

"""Identifier case conversion."""

import re

_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def snake_case(name: str) -> str:
    """`HelloWorld` / `helloWorld` / `hello-world` -> `hello_world`."""
    name = _BOUNDARY.sub("_", name)
    return re.sub(r"[-\s]+", "_", name).lower()


def camel_case(name: str) -> str:
    """`hello_world` -> `helloWorld`."""
    head, *rest = re.split(r"[_\-\s]+", name)
    return head.lower() + "".join(part.capitalize() for part in rest)

"""YAML from repositories (CI workflows, conda environment files, lock files), parsed within bounds.

`yaml.safe_load` constructs no Python objects beyond plain data, but it has no bound on size:
a few hundred bytes of nested aliases (a "billion laughs" bomb) describe billions of nodes, and
every analyser that walks the result then spends exponential time on the host, before any
sandbox exists. `load_untrusted_yaml` refuses, with `YamlTooLarge` (a `yaml.YAMLError`, so the
callers' "unreadable file" path takes it):

- text longer than `max_bytes` (UTF-8);
- more than `max_aliases` alias references;
- a document whose size with every alias expanded exceeds `max_nodes` (counted on the composed
  node graph, linearly, before anything is constructed);
- nesting deeper than Python's recursion allows.
"""

from __future__ import annotations

from typing import Any

import yaml

from envpool.errors import SwemintError

MAX_BYTES = 1024 * 1024
MAX_ALIASES = 1000
MAX_NODES = 200_000


class YamlTooLarge(SwemintError, yaml.YAMLError):
    """A repository's YAML exceeds a bound of `load_untrusted_yaml` (the message says which)."""


class _CountingLoader(yaml.SafeLoader):
    max_aliases = MAX_ALIASES

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent, index):  # noqa: ANN001, ANN201 - PyYAML's signature
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > self.max_aliases:
                raise YamlTooLarge(f"more than {self.max_aliases} aliases")
        return super().compose_node(parent, index)


def _expanded_size(root: yaml.Node, limit: int) -> int:
    """Nodes of `root` with aliases expanded (shared nodes counted once per reference), computed
    once per distinct node; raises YamlTooLarge past `limit`."""
    memo: dict[int, int] = {}
    open_: set[int] = set()  # nodes whose children are being counted (a child among them: a cycle)
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if key in memo:
            continue
        if isinstance(node, yaml.ScalarNode):
            memo[key] = 1
            continue
        kids = [x for pair in node.value for x in pair] if isinstance(node, yaml.MappingNode) else list(node.value)
        if not children_done:
            if key in open_:
                raise YamlTooLarge("a recursive alias (a node that contains itself)")
            open_.add(key)
            stack.append((node, True))
            for k in kids:
                if id(k) in open_:
                    raise YamlTooLarge("a recursive alias (a node that contains itself)")
                if id(k) not in memo:
                    stack.append((k, False))
            continue
        open_.discard(key)
        total = 1 + sum(memo.get(id(k), 0) for k in kids)
        if total > limit:
            raise YamlTooLarge(f"more than {limit} nodes once aliases are expanded")
        memo[key] = total
    return memo[id(root)]


def load_untrusted_yaml(text: str | bytes | None, *, max_bytes: int = MAX_BYTES, max_aliases: int = MAX_ALIASES,
                        max_nodes: int = MAX_NODES) -> Any:
    """The first YAML document of `text` as plain data (None for empty text), like
    `yaml.safe_load`, within the bounds of the module docstring. Raises YamlTooLarge past a bound
    and yaml.YAMLError for text that is not YAML."""
    if text is None:
        return None
    raw = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
    if len(raw) > max_bytes:
        raise YamlTooLarge(f"{len(raw)} bytes, more than {max_bytes}")
    loader = _CountingLoader(raw.decode("utf-8", "replace"))
    loader.max_aliases = max_aliases
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _expanded_size(node, max_nodes)
        return loader.construct_document(node)
    except RecursionError:
        raise YamlTooLarge("nested deeper than the parser's recursion limit") from None
    finally:
        loader.dispose()

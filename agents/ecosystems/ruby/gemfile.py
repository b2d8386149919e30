"""What a Gemfile and its gemspecs declare (`gem_dependencies`): the gems of the groups tests
use, with the conditions (platforms, install_if, env) read so gems for other platforms or
switched off stay out."""

from __future__ import annotations

import re
from typing import NamedTuple
from agents.gitrepo import GitTree


_REQS = r"""((?:\s*,\s*\[?\s*['"][^'"]*['"]\s*\]?)*)"""  # , '>= 1', '< 2'  or  , ['>= 1', '< 2']


_GEM = re.compile(r"""^\s*gem\s*\(?\s*['"]([\w.-]+)['"]""" + _REQS)


_SPEC_DEP = re.compile(r"""\.add_(runtime_|development_)?dependency\s*\(?\s*['"]([\w.-]+)['"]""" + _REQS)


_QUOTED = re.compile(r"""['"]([^'"]*)['"]""")


_GROUP = re.compile(r"^\s*group\s*\(?\s*(.*?)\)?\s*do\b")


_PLATFORMS_BLOCK = re.compile(r"^\s*platforms?\s*\(?\s*([:\[%].*?)\)?\s*do\b")


_INSTALL_IF_BLOCK = re.compile(r"^\s*install_if\s*\(?\s*(?:->|lambda|proc)\s*\{(.*)\}\s*\)?\s*do\b")


_PLATFORMS_OPT = re.compile(r"""(?::platforms?\s*=>|\bplatforms?:)\s*(\[[^\]]*\]|:\w+|%i\[[^\]]*\])""")


_INSTALL_IF_OPT = re.compile(r"""(?::install_if\s*=>|\binstall_if:)\s*(?:->|lambda|proc)\s*\{(.*?)\}""")


_MODIFIER = re.compile(r"""\s(if|unless)\s+(.+)$""")


_OPENER = re.compile(r"^\s*(?:(?:if|unless|case|while|until|begin|def|class|module|for)\b|.*=\s*(?:if|unless|case|begin)\b)")


_HEREDOC = re.compile(r"""<<[~-]?(['"]?)([A-Z_a-z]\w*)\1""")


_ELSE_PLATFORM = re.compile(r"mswin|mingw|cygwin|win32|windows|win_platform\?|jruby|truffleruby|"
                            r"['\"/]java['\"/]|darwin|mac_?os", re.I)


_NEGATED = re.compile(r"!~|!=|!\s*[\w(/]|\bnot\b|linux", re.I)


_ENV_SET = re.compile(r"\bENV\s*(?:\[|\.key\?|\.include\?|\.has_key\?)")


_ENV_UNSET = re.compile(r"!|\bnot\b|nil\?|empty\?|blank\?|\bfetch\b|==\s*nil|\|\|")


_REGEXP = re.compile(r"%r([!{(|\[])(.*?)[!})|\]]")


LINUX_MRI = re.compile(r"^(?:ruby|mri)(?:_\d+)?$")
"""Bundler platform names (``platforms: [...]``) that include C Ruby on Linux: ``ruby``, ``mri``,
``ruby_31``, ``mri_27``...; every other name (``mswin``, ``mingw``, ``x64_mingw``, ``windows``,
``jruby``, ``truffleruby``) is another platform."""


class Gem(NamedTuple):
    """A direct dependency: `kind` "runtime", "dev" or "other" (needed only elsewhere: on other
    platforms -- Windows, JRuby, macOS -- or when an environment variable is set); `requirement`
    like ">= 1.8.11, < 2" ("" = any)."""

    name: str
    kind: str
    requirement: str = ""


def _condition(cond: str) -> str | None:
    """What a Ruby condition says about this run (C Ruby on Linux, no extra environment):
    "elsewhere" when it holds only on other platforms (``Gem.win_platform?``, ``RUBY_PLATFORM =~
    /mswin|mingw/``, ``RUBY_ENGINE == 'jruby'``; every ``||`` alternative such a test) or only
    with an environment variable set (``ENV['BENCHMARK']``); "here" for a negated platform test
    (``!Gem.win_platform?``, ``RUBY_PLATFORM !~ /mingw/``) or one naming linux; None otherwise."""
    cond = _REGEXP.sub(lambda m: f"/{m.group(2)}/", cond.split("#", 1)[0]).strip().removesuffix(" then").strip()
    if _ELSE_PLATFORM.search(cond) and _NEGATED.search(cond):
        return "here"
    alternatives = re.split(r"\|\||\bor\b", cond)
    if all(_ELSE_PLATFORM.search(a) or (_ENV_SET.search(a) and not _ENV_UNSET.search(a)) for a in alternatives):
        return "elsewhere"
    return None


def _other_platforms(spec: str) -> bool:
    """Whether a Bundler ``platforms`` list (``:jruby``, ``[:mingw, :x64_mingw]``, ``%i[mswin]``)
    names only platforms other than C Ruby on Linux."""
    names = re.findall(r"\w+", spec.replace("%i", ""))
    return bool(names) and not any(LINUX_MRI.match(n) for n in names)


class _Blocks:
    """Ruby block nesting of a Gemfile / gemspec read line by line: which enclosing blocks are
    ``group`` ones (development) and which hold only where this run is not ("elsewhere": a
    ``platforms :mswin do``, ``install_if -> { Gem.win_platform? } do``, ``if RUBY_ENGINE ==
    'jruby'`` block, or the ``else`` of a negated platform test)."""

    def __init__(self) -> None:
        self.stack: list[dict] = []  # {"group": bool, "elsewhere": bool, "cond": str | None}

    @property
    def group(self) -> bool:
        return any(f["group"] for f in self.stack)

    @property
    def elsewhere(self) -> bool:
        return any(f["elsewhere"] for f in self.stack)

    def feed(self, code: str) -> bool:
        """Track `code` (one line, comment stripped); True when it only opened or closed a block
        (no dependency on it)."""
        m = re.match(r"^\s*(elsif|else|end|if|unless)\b(.*)$", code)
        word, rest = (m.group(1), m.group(2)) if m else ("", "")
        if word == "end":
            if self.stack:
                self.stack.pop()
            return True
        if word in ("else", "elsif") and self.stack:
            top = self.stack[-1]
            was = top["cond"]
            top["elsewhere"] = was == "here" or (word == "elsif" and _condition(rest) == "elsewhere")
            top["cond"] = None if word == "else" else _condition(rest)
            return True
        if word in ("if", "unless") and not re.search(r"\bend\s*$", code):
            c = _condition(rest)
            if word == "unless":
                c = {"here": "elsewhere", "elsewhere": "here"}.get(c) if c else None
            self.stack.append({"group": False, "elsewhere": c == "elsewhere", "cond": c})
            return True
        if _GROUP.match(code):
            self.stack.append({"group": True, "elsewhere": False, "cond": None})
            return True
        pm, im = _PLATFORMS_BLOCK.match(code), _INSTALL_IF_BLOCK.match(code)
        if pm or im:
            away = _other_platforms(pm.group(1)) if pm else _condition(im.group(1)) == "elsewhere"
            self.stack.append({"group": False, "elsewhere": away, "cond": None})
            return True
        if _OPENER.match(code) and not re.search(r"\bend\s*$", code) or \
                re.search(r"\bdo\b(\s*\|[^|]*\|)?\s*$", code):
            self.stack.append({"group": False, "elsewhere": False, "cond": None})
        return False


def _lines(text: str):
    """Code lines of a Ruby file: comments stripped, heredoc bodies skipped."""
    until = None
    for line in text.splitlines():
        if until is not None:
            if line.strip() == until:
                until = None
            continue
        code = re.sub(r"\s#.*$|^#.*$", "", line)
        h = _HEREDOC.search(code)
        if h:
            until = h.group(2)
        yield code


def _elsewhere_here(code: str) -> bool:
    """Whether a dependency line holds only elsewhere: a trailing ``if`` / ``unless`` modifier,
    a ``platforms:`` or ``install_if:`` option."""
    mod = _MODIFIER.search(code)
    if mod:
        c = _condition(mod.group(2))
        if mod.group(1) == "unless":
            c = {"here": "elsewhere", "elsewhere": "here"}.get(c) if c else None
        if c == "elsewhere":
            return True
    p, i = _PLATFORMS_OPT.search(code), _INSTALL_IF_OPT.search(code)
    return bool(p and _other_platforms(p.group(1))) or bool(i and _condition(i.group(1)) == "elsewhere")


def gem_dependencies(tree: GitTree) -> list[Gem]:
    """Direct dependencies from the root Gemfile and *.gemspec files, in order, unique by name
    (runtime wins over dev, dev over other).

    gemspec ``add_dependency`` / ``add_runtime_dependency`` are "runtime",
    ``add_development_dependency`` "dev". Gemfile gems are "dev" inside ``group`` blocks, with a
    ``group:`` option, or when the Gemfile loads a gemspec (``gemspec``: the gem's runtime
    dependencies are the gemspec's, the Gemfile's own gems are its development bundle); "runtime"
    otherwise. Any of them is "other" when it is declared for other platforms only or behind an
    environment variable (`_Blocks`, `_elsewhere_here`)."""
    found: dict[str, Gem] = {}
    rank = {"runtime": 2, "dev": 1, "other": 0}

    def add(name: str, kind: str, req: str) -> None:
        if name not in found or rank[kind] > rank[found[name].kind]:
            found[name] = Gem(name, kind, ", ".join(_QUOTED.findall(req)))

    for spec in [f for f in tree.files if "/" not in f and f.endswith(".gemspec")]:
        blocks = _Blocks()
        for code in _lines(tree.read(spec) or ""):
            if blocks.feed(code):
                continue
            for kind, name, req in _SPEC_DEP.findall(code):
                other = blocks.elsewhere or _elsewhere_here(code)
                add(name, "other" if other else "dev" if kind == "development_" else "runtime", req)
    gemfile = tree.read("Gemfile") or ""
    with_gemspec = any(re.match(r"^\s*gemspec\b", c) for c in _lines(gemfile)) and \
        any("/" not in f and f.endswith(".gemspec") for f in tree.files)
    blocks = _Blocks()
    for code in _lines(gemfile):
        if blocks.feed(code):
            continue
        m = _GEM.match(code)
        if m:
            if blocks.elsewhere or _elsewhere_here(code):
                kind = "other"
            elif with_gemspec or blocks.group or re.search(r"group:|:group\s*=>", code):
                kind = "dev"
            else:
                kind = "runtime"
            add(m.group(1), kind, m.group(2) or "")
    return list(found.values())


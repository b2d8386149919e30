"""The test configuration of a Rust instance: which cargo targets compile the touched files
(`select_tests`), the features and cfgs their tests need (`file_gate`, `cargo_ci`,
`features_for`)."""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field
from agents.gitrepo import GitTree
from agents.ecosystems.rust.cargo_manifest import CargoProject, Package, _join


@dataclass
class Selection:
    """The cargo targets to test in one package: `flags` (``--lib``, ``--test n``, ...);
    `base_flags`: those whose sources exist before the test_patch (compiled in setup)."""

    package: Package
    flags: list[str] = field(default_factory=list)
    base_flags: list[str] = field(default_factory=list)

    def add(self, flag: str, at_base: bool) -> None:
        if flag not in self.flags:
            self.flags.append(flag)
        if at_base and flag not in self.base_flags:
            self.base_flags.append(flag)


def _mod_users(project: CargoProject, pkg: Package, read, module: str) -> list[str]:
    """Test targets of `pkg` whose root source declares `mod <module>`."""
    pat = re.compile(rf"^\s*(pub(\([^)]*\))?\s+)?mod\s+{re.escape(module)}\s*;", re.M)
    out = []
    for name, path in pkg.tests.items():
        text = read(_join(project.root, posixpath.join(pkg.dir, path))) or ""
        if pat.search(text):
            out.append(name)
    return out


def select_tests(project: CargoProject, touched: list[str], tree: GitTree) -> list[Selection]:
    """The targets to run per package for the test_patch's `touched` paths (repository
    relative); see the module doc. Falls back to all test targets (``--tests``) of a package
    whose touched files map to no target."""
    files = tree.file_set
    sels: dict[str, Selection] = {}
    data_only: dict[str, Package] = {}
    prefix = project.root + "/" if project.root else ""
    for path in touched:
        if prefix and not path.startswith(prefix):
            continue
        rpath = path[len(prefix):]
        pkg = project.owner(rpath)
        if pkg is None:
            continue
        rel = pkg.rel(rpath) or ""
        sel = sels.setdefault(pkg.name, Selection(pkg))
        at = lambda p: _join(project.root, posixpath.join(pkg.dir, p)) in files  # noqa: E731, B023 (called in this iteration)
        if rel.startswith("tests/"):
            if not rel.endswith(".rs"):
                data_only[pkg.name] = pkg
                continue
            hit = [n for n, p in pkg.tests.items() if p == rel]
            if not hit:
                parts = rel[len("tests/"):].split("/")
                if len(parts) > 1 and f"tests/{parts[0]}/main.rs" in pkg.tests.values():
                    hit = [n for n, p in pkg.tests.items() if p == f"tests/{parts[0]}/main.rs"]
                else:
                    module = parts[0][:-3] if parts[0].endswith(".rs") else parts[0]
                    hit = _mod_users(project, pkg, tree.read, module)
            if not hit:
                hit = list(pkg.tests)
            for n in hit:
                sel.add(f"--test {shlex.quote(n)}", at(pkg.tests[n]))
        elif rel.startswith("src/"):
            bin_hit = [n for n, p in pkg.bins.items()
                       if rel == p or (p.endswith("/main.rs") and rel.startswith(posixpath.dirname(p) + "/"))]
            if bin_hit and not (pkg.lib and rel == pkg.lib):
                for n in bin_hit:
                    sel.add(f"--bin {shlex.quote(n)}", at(pkg.bins[n]))
            elif pkg.lib:
                sel.add("--lib", at(pkg.lib))
            else:
                sel.add("--bins", True)
    for name, pkg in data_only.items():
        sel = sels[name]
        if not any(f.startswith("--test ") for f in sel.flags):
            for n, p in pkg.tests.items():
                sel.add(f"--test {shlex.quote(n)}", _join(project.root, posixpath.join(pkg.dir, p)) in files)
    out = []
    for sel in sels.values():
        if not sel.flags:
            sel.add("--tests", True)
        out.append(sel)
    return out


BUILTIN_CFGS = frozenset({"unix", "windows", "test", "debug_assertions", "miri", "doc", "doctest",
                          "proc_macro", "panic", "target_os", "target_family", "target_arch", "target_env",
                          "target_pointer_width", "target_endian", "target_vendor", "target_has_atomic",
                          "target_feature", "overflow_checks", "fuzzing", "loom"})
"""Cfg names rustc or cargo set themselves (or that need a tool of their own, `loom`): never
turned on from a gate."""


FEATURE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_+.-]{0,63}")


CFG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


_CFG_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|"[^"]*"|[(),=]')


@dataclass
class Gate:
    """What a test file's ``#![cfg(...)]`` asks for: `features` (``feature = "x"``) and bare
    `cfgs` (``tokio_unstable``), outside any ``not(...)``."""

    features: list[str] = field(default_factory=list)
    cfgs: list[str] = field(default_factory=list)


def file_gate(text: str) -> Gate:
    """The `Gate` of the crate-level ``#![cfg(...)]`` attributes of a Rust source `text`
    (`#[cfg]` on single items is not a gate of the file). Never raises."""
    gate = Gate()
    for m in re.finditer(r"#!\[\s*cfg\s*\(", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        toks = _CFG_TOKEN.findall(text[m.end():i - 1])
        stack: list[str] = []
        j = 0
        while j < len(toks):
            t = toks[j]
            nxt = toks[j + 1] if j + 1 < len(toks) else ""
            if t == ")":
                if stack:
                    stack.pop()
            elif nxt == "(" and t[0] != '"':
                stack.append(t)
                j += 1
            elif nxt == "=" and j + 2 < len(toks):
                if t == "feature" and "not" not in stack and toks[j + 2].startswith('"'):
                    gate.features.append(toks[j + 2].strip('"'))
                j += 2
            elif t[0] != '"' and t not in "(),=" and "not" not in stack and t not in BUILTIN_CFGS:
                gate.cfgs.append(t)
            j += 1
    gate.features = list(dict.fromkeys(f for f in gate.features if FEATURE_NAME.fullmatch(f)))
    gate.cfgs = list(dict.fromkeys(c for c in gate.cfgs if CFG_NAME.fullmatch(c)))
    return gate


@dataclass
class CargoCi:
    """What the project's CI passes to cargo (`agents.ecosystems.ci`): explicit `features` of
    ``cargo test`` / ``cargo nextest run`` (per package name, "" = no ``-p``), whether some test
    command uses ``--all-features``, and the ``--cfg`` names it sets through RUSTFLAGS."""

    features: dict[str, list[str]] = field(default_factory=dict)
    all_features: bool = False
    cfgs: list[str] = field(default_factory=list)


def cargo_ci(tree: GitTree) -> CargoCi:
    """Read `CargoCi` from `tree`'s GitHub workflows (only values that are valid feature / cfg
    names are kept). Never raises."""
    from agents.ecosystems.ci import ci_steps, command_lines, flag_values, split_words

    ci = CargoCi()
    for step in ci_steps(tree):
        flags_text = " ".join(v for k, v in step.env.items() if k in ("RUSTFLAGS", "RUSTDOCFLAGS")) + " " + step.run
        for m in re.finditer(r"--cfg[= ]+([A-Za-z_][A-Za-z0-9_]*)", flags_text):
            if m.group(1) not in ci.cfgs and CFG_NAME.fullmatch(m.group(1)):
                ci.cfgs.append(m.group(1))
        for line in command_lines(step.run):
            words = split_words(line)
            if "cargo" not in words:
                continue
            rest = words[words.index("cargo") + 1:]
            rest = [w for w in rest if not w.startswith("+")]  # cargo +nightly test
            if not (rest[:1] == ["test"] or rest[:2] == ["nextest", "run"] or rest[:2] == ["hack", "test"]):
                continue
            if "--all-features" in rest:
                ci.all_features = True
            pkgs = flag_values(rest, "-p", "--package") or [""]
            for value in flag_values(rest, "--features", "-F"):
                for feat in re.split(r"[,\s]+", value):
                    if FEATURE_NAME.fullmatch(feat or "") or (feat.count("/") == 1 and all(
                            FEATURE_NAME.fullmatch(x) for x in feat.split("/"))):
                        for p in pkgs:
                            ci.features.setdefault(p, [])
                            if feat not in ci.features[p]:
                                ci.features[p].append(feat)
    return ci


def _package_features(pkg: Package) -> set[str]:
    """Feature names `pkg` defines: its [features] table and its optional dependencies."""
    names = set((pkg.manifest.get("features") or {}).keys())
    for sect in ("dependencies", "dev-dependencies"):
        for name, spec in (pkg.manifest.get(sect) or {}).items():
            if isinstance(spec, dict) and spec.get("optional"):
                names.add(name)
    return names


def features_for(project: CargoProject, sel: Selection, tree: GitTree, test_patch: str,
                  ci: CargoCi) -> tuple[list[str], list[str], list[str]]:
    """(features, cfg names, reasons) for the ``cargo test`` of `sel`'s package: the features
    its CI passes to ``cargo test`` (for that package or without ``-p``), the
    ``required-features`` of the selected ``[[test]]`` targets, and the features of a touched
    test file's ``#![cfg(feature = ...)]`` gate (its text after the test_patch: the base file,
    or the lines the test_patch adds to a new one) -- each kept only when the package defines
    it; cfg names of the gate are kept only when the CI sets them (``RUSTFLAGS=--cfg X``)."""
    from envpool.patches import changed_lines

    pkg = sel.package
    defined = _package_features(pkg)
    feats: list[str] = []
    cfgs: list[str] = []
    reasons: list[str] = []

    def own(f: str) -> str | None:
        if "/" in f:
            p, f = f.split("/", 1)
            if p != pkg.name:
                return None
        return f if f in defined else None

    ci_feats = [x for x in (own(f) for f in ci.features.get("", []) + ci.features.get(pkg.name, [])) if x]
    if ci_feats:
        feats += ci_feats
        reasons.append(f"{pkg.name}: CI runs cargo test --features {','.join(dict.fromkeys(ci_feats))}")
    added = None
    targets = {shlex.split(f)[1] for f in sel.flags if f.startswith("--test ")}
    for t in (pkg.manifest.get("test") or []):
        if t.get("name") in targets:
            req = [x for x in (own(str(f)) for f in t.get("required-features") or []) if x]
            if req:
                feats += req
                reasons.append(f"[[test]] {t['name']} required-features {','.join(req)}")
    for name in sorted(targets):
        rel = pkg.tests.get(name)
        if rel is None:
            continue
        path = _join(project.root, posixpath.join(pkg.dir, rel))
        text = tree.read(path)
        if text is None:
            added = changed_lines(test_patch) if added is None else added
            text = "\n".join(added.get(path, []))
        gate = file_gate(text)
        got = [x for x in (own(f) for f in gate.features) if x]
        if got:
            feats += got
            reasons.append(f"{path} is gated by feature {','.join(got)}")
        on = [c for c in gate.cfgs if c in ci.cfgs]
        if on:
            cfgs += on
            reasons.append(f"{path} is gated by cfg {','.join(on)} (the CI sets --cfg)")
    return list(dict.fromkeys(feats)), list(dict.fromkeys(cfgs)), reasons


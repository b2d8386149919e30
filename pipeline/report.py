"""`swemint report -w WORKDIR`: one self-contained HTML page about a work directory.

Read from the store (every finished `result.json` and its input row); plots are drawn with
matplotlib (the optional `report` extra) and embedded as base64 PNGs, so the page is one file
that opens anywhere:

- outcomes per language and per repository (stacked bars);
- time per phase (median and p90 seconds over instances, from `timings`);
- verified yield against minting time, and against LLM tokens when any were used (cumulative,
  in finishing order);
- reuse share (verified rows whose environment was adapted from another instance's, by language);
- failure causes (non-verified outcomes by the first clause of their reason);
- the yield funnel of `swemint run` (WORKDIR/report.json, `pipeline.funnel`), this run and
  cumulatively: repositories discovered -> units seen -> accepted -> minted -> verified, as a
  plot and as the table with rejections per reason and the cost per verified task;
- to drill into (`pipeline.reportdata`): one row per instance (outcome, reason, loop round,
  seconds, links to its run log and trajectory), every `swemint eval` run of the work directory
  and the `swemint bench` scores.

Count axes count in integers; a plot with nothing to show is left out. `summarise` gives the
numbers as a dict (tested without matplotlib).
"""

from __future__ import annotations

import base64
import io
import json
import re
import statistics
from collections import Counter, defaultdict
from pathlib import Path

from agents.models import OUTCOMES, Instance, InstanceResult
from envpool.quoting import html_text, plot_label
from pipeline.funnel import REPORT
from pipeline.store import ResultStore

PHASES = ("checkout+analysis", "setup", "reuse", "commit", "before", "after", "publish", "total")


def _tokens(res: InstanceResult) -> int:
    total = (res.llm_usage or {}).get("total") or {}
    return int(total.get("prompt_tokens", 0) or 0) + int(total.get("completion_tokens", 0) or 0)


_NORMALISE = (
    (re.compile(r"'[^'\n]*'|\"[^\"\n]*\"|`[^`\n]*`"), "…"),               # quoted parts
    (re.compile(r"\b(?:sha256:)?(?=[a-f]*\d)[0-9a-f]{7,64}\b"), "<hash>"),  # commits, image ids
    (re.compile(r"\S+::\S+"), "<test>"),                                # runner test ids
    (re.compile(r"(?:[\w.@+~-]*/)+[\w.@+~-]*"), "<path>"),               # paths, image tags, URLs' tails
    (re.compile(r"\d+"), "N"),                                          # numbers, versions, durations
    (re.compile(r"\s+"), " "))


def normalise_reason(reason: str, instance_id: str = "", repo: str = "") -> str:
    """`reason` with what differs between like failures replaced, so that they compare equal:
    the instance's own id and repository (`<id>`, `<repo>`, also in their folder spelling
    `owner__name`), quoted parts (`…`), hex hashes of 7+ characters with a digit (`<hash>`), runner test ids
    with `::` (`<test>`), paths and anything with a `/` (`<path>`), numbers (`N`); whitespace
    collapsed. "" -> "unknown"."""
    text = reason or ""
    for name, mark in ((instance_id, "<id>"), (repo, "<repo>"), (repo.replace("/", "__"), "<repo>")):
        if name:
            text = text.replace(name, mark)
    for pattern, mark in _NORMALISE:
        text = pattern.sub(mark, text)
    return text.strip() or "unknown"


def cause(reason: str) -> str:
    """A short failure cause from a reason: its first clause, normalised (`normalise_reason`:
    numbers, quoted parts, hashes, paths removed), at most 80 characters."""
    first = re.split(r"[:;(\n]", reason or "unknown", maxsplit=1)[0].strip()
    return normalise_reason(first)[:80]


def _p90(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))] if xs else 0.0


def summarise(results: list[InstanceResult], instances: dict[str, Instance]) -> dict:
    """The report's numbers: outcome counts per language and repository, phase times (median,
    p90, seconds), the cumulative yield curves, reuse counts and failure causes."""
    lang = {r.instance_id: ((instances.get(r.instance_id).language if instances.get(r.instance_id) else None)
                            or "python").lower() for r in results}
    by_lang: dict[str, Counter] = defaultdict(Counter)
    by_repo: dict[str, Counter] = defaultdict(Counter)
    for r in results:
        by_lang[lang[r.instance_id]][r.outcome] += 1
        by_repo[r.repo][r.outcome] += 1
    phases = {}
    for ph in PHASES:
        xs = [r.timings[ph] for r in results if ph in r.timings]
        if xs:
            phases[ph] = {"median": round(statistics.median(xs), 2), "p90": round(_p90(xs), 2), "n": len(xs)}
    ordered = sorted(results, key=lambda r: r.finished_at or "")
    curve, secs, toks, ver = [], 0.0, 0, 0
    for r in ordered:
        secs += r.timings.get("total", 0.0)
        toks += _tokens(r)
        ver += r.outcome == "verified"
        curve.append({"seconds": round(secs, 1), "tokens": toks, "verified": ver})
    verified = [r for r in results if r.outcome == "verified"]
    reuse = defaultdict(lambda: {"verified": 0, "reused": 0})
    for r in verified:
        reuse[lang[r.instance_id]]["verified"] += 1
        reuse[lang[r.instance_id]]["reused"] += bool(r.reused_from)
    causes = Counter(f"{r.outcome}: {cause(r.reason)}" for r in results if r.outcome != "verified")
    return {"rows": len(results), "verified": len(verified),
            "by_language": {k: dict(v) for k, v in sorted(by_lang.items())},
            "by_repository": {k: dict(v) for k, v in sorted(by_repo.items())},
            "phases": phases, "curve": curve, "reuse": dict(sorted(reuse.items())),
            "causes": dict(causes.most_common(20)), "tokens": toks}


def funnel_rows(report: dict) -> list[tuple[str, object, object]]:
    """(stage, this run, cumulative) rows of a `WORKDIR/report.json` (`{"run": ..., "cumulative":
    ...}` as `pipeline.funnel.write_report` writes it); a part missing gives None cells."""
    run, cum = report.get("run") or {}, report.get("cumulative") or {}

    def at(part: dict, *path: str):
        for k in path:
            part = part.get(k) if isinstance(part, dict) else None
        return part

    rows: list[tuple[str, object, object]] = [
        ("repositories discovered", at(run, "repositories", "discovered"), at(cum, "repositories", "discovered")),
        ("units seen", at(run, "units", "seen"), at(cum, "units", "seen"))]
    reasons = sorted(set(at(run, "units", "rejected") or {}) | set(at(cum, "units", "rejected") or {}))
    rows += [(f"rejected: {r}", (at(run, "units", "rejected") or {}).get(r, 0),
              (at(cum, "units", "rejected") or {}).get(r, 0)) for r in reasons]
    rows += [("crawl errors", at(run, "units", "errors"), at(cum, "units", "errors")),
             ("accepted", at(run, "units", "accepted"), at(cum, "units", "accepted"))]
    outcomes = [o for o in OUTCOMES if (at(run, "minted", "outcomes") or {}).get(o)
                or (at(cum, "minted", "outcomes") or {}).get(o)]
    rows += [(f"outcome: {o}", (at(run, "minted", "outcomes") or {}).get(o, 0),
              (at(cum, "minted", "outcomes") or {}).get(o, 0)) for o in outcomes]
    rows.append(("verified", at(run, "minted", "verified"), at(cum, "minted", "verified")))
    for key, label in (("wall_s", "wall seconds per verified task"), ("cpu_s", "CPU-seconds per verified task"),
                       ("tokens", "LLM tokens per verified task")):
        rows.append((label, at(run, "cost", "per_verified", key), at(cum, "cost", "per_verified", key)))
    return rows


def read_funnel(workdir: Path | str) -> dict | None:
    """WORKDIR/report.json (the funnel of `swemint run`), None when there is none or it is torn."""
    try:
        return json.loads((Path(workdir) / REPORT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _integer_axis(ax, which: str) -> None:
    """Ticks of the `which` ("x" or "y") axis of `ax` at whole numbers only (counts)."""
    from matplotlib.ticker import MaxNLocator

    (ax.xaxis if which == "x" else ax.yaxis).set_major_locator(MaxNLocator(integer=True))


def funnel_stages(report: dict | None) -> list[tuple[str, int, int]]:
    """(stage, this run, cumulative) of the funnel plot: repositories discovered, units seen,
    accepted, minted, verified (stages with nothing in either part left out)."""
    if not report:
        return []
    rows = {name: (run, cum) for name, run, cum in funnel_rows(report)}
    minted = [(r, c) for name, (r, c) in rows.items() if name.startswith("outcome: ")]
    stages = [("repositories discovered", *rows.get("repositories discovered", (None, None))),
              ("units seen", *rows.get("units seen", (None, None))),
              ("accepted", *rows.get("accepted", (None, None))),
              ("minted", sum(r or 0 for r, _ in minted), sum(c or 0 for _, c in minted)),
              ("verified", *rows.get("verified", (None, None)))]
    return [(n, int(r or 0), int(c or 0)) for n, r, c in stages if (r or 0) or (c or 0)]


def _stacked(ax, table: dict[str, dict], horizontal: bool = False) -> None:
    keys = list(table)
    labels = [plot_label(k) for k in keys]
    left = [0] * len(labels)
    for outcome in OUTCOMES:
        vals = [table[k].get(outcome, 0) for k in keys]
        if not any(vals):
            continue
        if horizontal:
            ax.barh(labels, vals, left=left, label=outcome)
        else:
            ax.bar(labels, vals, bottom=left, label=outcome)
        left = [a + b for a, b in zip(left, vals)]
    ax.legend(fontsize=7)


def figures(s: dict) -> dict[str, str]:
    """Title -> PNG data URI of each plot (matplotlib, Agg backend)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = {}
    if s["by_language"]:
        fig, ax = plt.subplots(figsize=(7, 3.2))
        _stacked(ax, s["by_language"])
        ax.set_ylabel("instances")
        _integer_axis(ax, "y")
        ax.tick_params(axis="x", rotation=30)
        out["Outcomes per language"] = _png(fig)
        fig, ax = plt.subplots(figsize=(7, max(2.5, 0.28 * len(s["by_repository"]))))
        _stacked(ax, s["by_repository"], horizontal=True)
        ax.set_xlabel("instances")
        _integer_axis(ax, "x")
        out["Outcomes per repository"] = _png(fig)
    if s["phases"]:
        fig, ax = plt.subplots(figsize=(7, 3))
        names = list(s["phases"])
        ax.bar(names, [s["phases"][n]["median"] for n in names], label="median")
        ax.scatter(names, [s["phases"][n]["p90"] for n in names], color="black", marker="_", s=300, label="p90")
        ax.set_ylabel("seconds per instance")
        ax.tick_params(axis="x", rotation=30)
        ax.legend(fontsize=7)
        out["Time per phase"] = _png(fig)
    if len(s["curve"]) >= 2:  # one point is no curve
        with_tokens = bool(s["tokens"])  # without an LLM the token curve is a vertical line: left out
        fig, axes = plt.subplots(1, 2 if with_tokens else 1, figsize=(9 if with_tokens else 5.5, 3))
        axes = list(axes) if with_tokens else [axes]
        scale, unit = (3600, "hours") if s["curve"][-1]["seconds"] >= 7200 else (60, "minutes")
        curve = [{"seconds": 0.0, "tokens": 0, "verified": 0}, *s["curve"]]  # from the start
        axes[0].plot([p["seconds"] / scale for p in curve], [p["verified"] for p in curve], drawstyle="steps-post")
        axes[0].set_xlabel(f"cumulative minting time ({unit})")
        axes[0].set_ylabel("verified")
        if with_tokens:
            axes[1].plot([p["tokens"] for p in curve], [p["verified"] for p in curve], drawstyle="steps-post")
            axes[1].set_xlabel("cumulative LLM tokens")
        for a in axes:
            _integer_axis(a, "y")
        out["Verified yield against time" + (" and tokens" if with_tokens else "")] = _png(fig)
    if any(v["verified"] for v in s["reuse"].values()):
        fig, ax = plt.subplots(figsize=(7, 3))
        names = list(s["reuse"])
        labels = [plot_label(n) for n in names]
        ax.bar(labels, [s["reuse"][n]["verified"] for n in names], label="verified")
        ax.bar(labels, [s["reuse"][n]["reused"] for n in names], label="of which reused")
        ax.legend(fontsize=7)
        ax.set_ylabel("verified instances")
        _integer_axis(ax, "y")
        ax.tick_params(axis="x", rotation=30)
        out["Reuse share"] = _png(fig)
    if s["causes"]:
        fig, ax = plt.subplots(figsize=(8, max(2.5, 0.3 * len(s["causes"]))))
        names = list(s["causes"])[::-1]
        ax.barh([plot_label(n) for n in names], [s["causes"][n] for n in names])
        ax.tick_params(axis="y", labelsize=7)
        ax.set_xlabel("instances")
        _integer_axis(ax, "x")
        out["Failure causes"] = _png(fig)
    stages = funnel_stages(s.get("funnel"))
    if stages:
        fig, ax = plt.subplots(figsize=(7, 0.45 * len(stages) + 1))
        names = [n for n, _, _ in stages][::-1]
        ys = range(len(names))
        ax.barh([y + 0.2 for y in ys], [c for _, _, c in stages][::-1], height=0.4, label="cumulative")
        ax.barh([y - 0.2 for y in ys], [r for _, r, _ in stages][::-1], height=0.4, label="this run")
        ax.set_yticks(list(ys), names)
        ax.set_xlabel("count")
        _integer_axis(ax, "x")
        ax.legend(fontsize=7)
        out["Yield funnel of swemint run"] = _png(fig)
    return out


def _cell(v) -> str:
    return "–" if v is None else str(v)


def render_html(s: dict, figs: dict[str, str], title: str) -> str:
    """The page: a summary line, every figure, the numbers as tables (the yield funnel when
    `s["funnel"]` holds a `report.json`), then what to drill into: `s["instances"]` (one row
    each, with links), `s["evaluations"]` and `s["bench"]` (`pipeline.reportdata`)."""
    esc = html_text  # every text of the page (a language, a cause, a funnel stage) through one encoder
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>",
             "<style>body{font-family:sans-serif;max-width:1000px;margin:2em auto}table{border-collapse:collapse;"
             "font-size:13px}td,th{border:1px solid #ccc;padding:2px 6px}img{max-width:100%}</style></head><body>",
             f"<h1>{esc(title)}</h1>",
             f"<p>{s['verified']} verified of {s['rows']} instances; {s['tokens']} LLM tokens.</p>"]
    for name, uri in figs.items():
        parts.append(f"<h2>{esc(name)}</h2><img alt='{esc(name)}' src='{uri}'>")
    parts.append("<h2>Numbers</h2><table><tr><th>language</th>" +
                 "".join(f"<th>{o}</th>" for o in OUTCOMES) + "</tr>")
    for k, v in s["by_language"].items():
        parts.append(f"<tr><td>{esc(k)}</td>" + "".join(f"<td>{v.get(o, 0)}</td>" for o in OUTCOMES) + "</tr>")
    parts.append("</table><h3>Phases (seconds)</h3><table><tr><th>phase</th><th>median</th><th>p90</th><th>n</th></tr>")
    for k, v in s["phases"].items():
        parts.append(f"<tr><td>{esc(k)}</td><td>{v['median']}</td><td>{v['p90']}</td><td>{v['n']}</td></tr>")
    parts.append("</table><h3>Failure causes</h3><table>")
    for k, v in s["causes"].items():
        parts.append(f"<tr><td>{esc(k)}</td><td>{v}</td></tr>")
    parts.append("</table>")
    if s.get("funnel"):
        parts.append("<h2>Yield funnel</h2><table><tr><th>stage</th><th>this run</th><th>cumulative</th></tr>")
        for name, run, cum in funnel_rows(s["funnel"]):
            parts.append(f"<tr><td>{esc(name)}</td><td>{esc(_cell(run))}</td><td>{esc(_cell(cum))}</td></tr>")
        parts.append("</table>")
    parts += drill_down(s, esc)
    parts.append("<details><summary>raw summary (JSON)</summary><pre>" +
                 esc(json.dumps({k: v for k, v in s.items() if k not in ("curve", "instances", "evaluations", "bench")},
                          indent=1, default=str)) + "</pre></details>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _a(href: str | None, text: str, esc) -> str:
    return f"<a href='{esc(href)}'>{esc(text)}</a>" if href else "–"


def _num(v) -> str:
    return "–" if v is None else (f"{v:.0f}" if isinstance(v, float) else str(v))


def drill_down(s: dict, esc) -> list[str]:
    """HTML of the per-instance table, the `swemint eval` runs and the `swemint bench` scores."""
    parts = []
    rows = s.get("instances") or []
    if rows:
        parts.append(f"<h2 id='instances'>Instances ({len(rows)})</h2><table><tr><th>instance</th><th>repository</th>"
                     "<th>language</th><th>outcome</th><th>reason</th><th>round</th><th>seconds</th><th>F2P</th>"
                     "<th>P2P</th><th>run log</th><th>trajectory</th></tr>")
        for r in rows:
            rnd = f"{r['round']}/{r['rounds']}" if r["rounds"] else _num(r["round"] or None)
            parts.append(f"<tr id='{esc(r['instance_id'])}'><td>{esc(r['instance_id'])}</td><td>{esc(r['repo'])}</td>"
                         f"<td>{esc(r['language'])}</td><td>{esc(r['outcome'])}</td><td>{esc(r['reason'])}</td>"
                         f"<td>{esc(rnd)}</td><td>{_num(r['seconds'])}</td><td>{r['FAIL_TO_PASS']}</td>"
                         f"<td>{r['PASS_TO_PASS']}</td><td>{_a(r['log'], 'run.log', esc)}</td>"
                         f"<td>{_a(r['trajectory'], 'trajectory', esc)}</td></tr>")
        parts.append("</table>")
    for run in s.get("evaluations") or []:
        c = run["counts"]
        unknown = f"; {run['unknown_ids']} unknown ids" if run["unknown_ids"] else ""
        parts.append(f"<h2>swemint eval: {esc(run['run_id'])}</h2><p>resolved {c['resolved_instances']}, unresolved "
                     f"{c['unresolved_instances']}, errors {c['error_instances']}, empty patches "
                     f"{c['empty_patch_instances']} of {c['submitted_instances']} predictions"
                     f"{unknown}.</p>"
                     "<table><tr><th>instance</th><th>resolved</th><th>F2P</th><th>P2P</th><th>seconds</th>"
                     "<th>error</th><th>log</th><th>report</th></tr>")
        for r in run["instances"]:
            parts.append(f"<tr><td>{esc(r['instance_id'])}</td><td>{'yes' if r['resolved'] else 'no'}</td>"
                         f"<td>{esc(r['FAIL_TO_PASS'])}</td><td>{esc(r['PASS_TO_PASS'])}</td><td>{_num(r['seconds'])}"
                         f"</td><td>{esc(r['error'])}</td><td>{_a(r['log'], 'log', esc)}</td>"
                         f"<td>{_a(r['report'], 'json', esc)}</td></tr>")
        parts.append("</table>")
    bench = s.get("bench")
    if bench:
        agg = bench.get("aggregate") or {}
        parts.append("<h2>swemint bench</h2><p>" + esc(", ".join(
            f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}" for k, v in agg.items())) + "</p>")
        cols = ("outcome", "f2p_recall", "f2p_precision", "p2p_agreement")
        parts.append("<table><tr><th>instance</th>" + "".join(f"<th>{c}</th>" for c in cols) + "</tr>")
        for r in bench["instances"]:
            cells = [r.get(c) for c in cols]
            parts.append(f"<tr><td>{esc(r['instance_id'])}</td>" + "".join(
                f"<td>{esc(f'{v:.2f}' if isinstance(v, float) else _cell(v))}</td>" for v in cells) + "</tr>")
        parts.append("</table>")
    return parts


def write_report(workdir: Path | str, out: Path | None = None) -> Path:
    """Write the HTML report of `workdir` to `out` (default WORKDIR/report.html); returns its
    path. Raises ImportError when matplotlib is not installed."""
    import matplotlib  # noqa: F401 - fail early with a clear message

    from pipeline.reportdata import bench_scores, eval_runs, instance_rows

    store = ResultStore(workdir, read_only=True)
    results, instances = store.results(), store.instances()
    s = summarise(results, instances)
    s["funnel"] = read_funnel(workdir)
    path = Path(out) if out else Path(workdir) / "report.html"
    base = path.absolute().parent
    s["instances"] = instance_rows(store, results, instances, base)
    s["evaluations"] = eval_runs(Path(workdir), base)
    s["bench"] = bench_scores(Path(workdir))
    path.write_text(render_html(s, figures(s), f"swemint report: {Path(workdir).resolve().name}"), encoding="utf-8")
    return path

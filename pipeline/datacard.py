"""The Hugging Face dataset card (`WORKDIR/dataset/README.md`) of an export.

Front matter as the Hub reads it (https://huggingface.co/docs/hub/datasets-cards): `license` (the
rows' licences, lower-cased SPDX ids as the Hub lists them; `unknown` for rows whose repository
licence was not found), `task_categories`, `size_categories` (from the row count), `tags`,
`pretty_name` and `configs` (the two splits, so `datasets.load_dataset(DIR)` gives them). Then
the counts, the licences, the images (local tags nobody else can pull, and the status tool their
eval scripts call), the schema, how to evaluate, the grading caveats and the minting
configuration -- with host paths replaced (`scrub_paths`): a published card names no folder of
the machine that minted it.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from envpool.quoting import markdown_cell, yaml_text
from envpool.testrun import statuslines
from pipeline.licenses import UNKNOWN, spdx_ids

SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"))
"""The Hub's size buckets (upper bound, name)."""
TASK_CATEGORIES = ("text-generation",)
"""What a model does with a row: generate a patch from an issue (the Hub's category for code
generation, as SWE-bench-style datasets on the Hub declare)."""


def size_category(n: int) -> str:
    """The Hub's `size_categories` bucket for `n` rows."""
    return next((name for bound, name in SIZE_CATEGORIES if n < bound), "n>10M")


def hub_licenses(rows: list[dict]) -> list[str]:
    """The rows' licence ids for the card's `license` field: lower-cased, sorted, each id of an
    `A OR B` expression listed, `unknown` when a row's licence was not found."""
    out = {i.lower() for r in rows for i in spdx_ids(r.get("license") or UNKNOWN)}
    return sorted(out) or [UNKNOWN]


def scrub_paths(value: Any, key: str = "") -> Any:
    """`value` (the recorded configuration) with every absolute path replaced by `<path>` (keys
    kept): a published card names no folder of the minting host."""
    if isinstance(value, dict):
        return {k: scrub_paths(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_paths(v, key) for v in value]
    if isinstance(value, str) and (value.startswith(("/", "~")) or (len(value) > 2 and value[1:3] == ":\\")):
        return "<path>"
    return value


def _table(header: list[str], rows: list[list]) -> str:
    """A Markdown table; every cell through `envpool.quoting.markdown_cell` (a repository or
    language name stays one cell of one row)."""
    out = ["| " + " | ".join(markdown_cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(markdown_cell(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def userns_line(isolations: list[dict], what: str = "rows") -> str:
    """One sentence on how many rows (their `isolation`, one dict each) were built on an engine
    that remaps user namespaces, e.g. "Built with user namespaces (root in build containers is not
    root on the host): 3 of 5 rows; 2 on an engine without them; unknown for 0."."""
    on = sum(1 for i in isolations if i.get("user_namespaces") is True)
    off = sum(1 for i in isolations if i.get("user_namespaces") is False)
    return (f"Built with user namespaces (root in build containers is not root on the host): {on} of "
            f"{len(isolations)} {what}; {off} on an engine without them; unknown for {len(isolations) - on - off}.")


def local_images(rows: list[dict]) -> list[str]:
    """Ids of verified rows whose `image` is a local tag (no registry reference with a digest):
    nobody but the minting host's engine can run them."""
    return sorted(r["instance_id"] for r in rows if r.get("outcome") == "verified" and r.get("image")
                  and "@sha256:" not in r["image"])


def front_matter(rows: list[dict], splits: dict[str, str]) -> list[str]:
    """The card's YAML header lines."""
    header = {"pretty_name": "swemint tasks", "license": hub_licenses(rows),
              "task_categories": list(TASK_CATEGORIES), "size_categories": [size_category(len(rows))],
              "tags": ["swe-bench", "code", "software-engineering", "swemint"],
              "configs": [{"config_name": "default",
                           "data_files": [{"split": s, "path": f} for s, f in splits.items()]}]}
    return ["---", yaml_text(header, default_flow_style=False).rstrip(), "---", ""]


def dataset_card(rows: list[dict], config: dict | None, json_strings: bool, *, columns, splits: dict[str, str],
                 notes: list[str] | None = None, license_filter: list[str] | None = None) -> str:
    """The card for exported `rows` (dicts keyed like `columns`: (name, Arrow type as written,
    meaning): `pipeline.export.columns`).
    `notes`: export findings shown under "Images" (the status tool's presence in old images);
    `license_filter`: the licences the export kept (None: every row)."""
    verified = [r for r in rows if r["outcome"] == "verified"]
    by_lang = Counter((r["language"] or "unknown") for r in rows)
    ver_lang = Counter((r["language"] or "unknown") for r in verified)
    by_repo = Counter(r["repo"] for r in rows)
    ver_repo = Counter(r["repo"] for r in verified)
    by_lic = Counter(r.get("license") or UNKNOWN for r in rows)
    ver_lic = Counter(r.get("license") or UNKNOWN for r in verified)
    outcomes = Counter(r["outcome"] for r in rows)
    ids = "JSON strings (as the Hugging Face copies of SWE-bench)" if json_strings else "lists of strings"
    local = local_images(rows)
    kept = (f"Rows were kept only when their licence is one of: {', '.join(sorted(license_filter))} "
            "(an `A OR B` licence when either is).") if license_filter else "Every row is listed, whatever its licence."
    images = [f"- {len(local)} of {len(verified)} verified rows name a **local image** (`image` is a tag on the "
              "engine that minted them, not a registry reference): nobody else can pull them. Rebuild them from "
              "each row's `dockerfile` (`swemint export --format swebench-task-repo` writes the build context), "
              "or re-mint with a `registry` set." if local else
              f"- Every verified row's `image` is a registry reference with its digest ({len(verified)} rows)."]
    images.append(f"- `eval_script` calls the status tool every image carries at `{statuslines.TOOL_PATH}` "
                  "(swemint's grading code; an image without it makes the script print `>>>>> Tests Errored`).")
    images += [f"- {n}" for n in notes or []]
    body = [
        "# swemint tasks", "",
        f"SWE-bench-style tasks minted by swemint: {len(verified)} verified of {len(rows)} attempted.", "",
        "## Splits", "",
        _table(["split", "file", "rows", "what"], [
            ["verified", splits["verified"], len(verified), "rows whose fix is proven by Fail-to-Pass"],
            ["all_outcomes", splits["all_outcomes"], len(rows), "every attempted row, with its outcome and reason "
             "('all' is a split name the datasets library reserves)"]]), "",
        "## Counts", "",
        _table(["outcome", "rows"], [[o, n] for o, n in sorted(outcomes.items())]), "",
        _table(["language", "verified", "attempted"], [[k, ver_lang[k], n] for k, n in sorted(by_lang.items())]), "",
        _table(["repository", "verified", "attempted"], [[k, ver_repo[k], n] for k, n in sorted(by_repo.items())]), "",
        "## Licences", "",
        "Each row's `license` is the SPDX id of its repository's licence file at `base_commit` (`unknown` when "
        "none was recognised); the tasks' code and text are under that licence. " + kept, "",
        _table(["license", "verified", "attempted"], [[k, ver_lic[k], n] for k, n in sorted(by_lic.items())]), "",
        "## Images", "",
        *images, "",
        "## Schema", "",
        f"`FAIL_TO_PASS` / `PASS_TO_PASS` are {ids}.", "",
        _table(["column", "type", "meaning"], [[n, str(t), d] for n, t, d in columns]), "",
        "## Evaluating", "",
        "With the official harness (SWE-bench 5.x, unchanged), the images present locally or pulled from `image`:", "",
        "```bash", "swebench eval PATH/TO/dataset --split verified --gold --run-id check", "```", "",
        "or `swemint eval PATH/TO/dataset -p preds.jsonl` (the same grading, the report read on a channel the "
        "host holds), or from Python `swemint.grade(row, patch)` / `swemint.TaskEnv(row)` (an episode and its "
        "reward).", "",
        "## Grading caveats", "",
        f"- `eval_script` prints the runner's report and then one `--- PASS|FAIL|SKIP: <id> (0s)` line per test "
        f"(`{statuslines.FORMAT}`), which swebench's `{statuslines.LOG_PARSER}` reads back exactly for any id "
        "without a newline; swebench's pytest parser would cut ids at their first space.",
        "- Only PASSED / XPASS count as passing; an XFAIL is a FAIL line (swebench would count it as passed). "
        "A skipped FAIL_TO_PASS test fails; a skipped PASS_TO_PASS test is kept (swebench's rule).",
        "- Tests run with no network. Tests that need a service (e.g. httpbin.org) are absent from the lists.",
        "- FAIL_TO_PASS / PASS_TO_PASS are swemint's own, from reruns (flaky tests excluded), in the runner's own "
        "id form; they can differ from a curated gold list (e.g. Go rows list only the tests the test_patch changes).",
        "- /testbed in every image is one commit holding `base_commit`'s tree: no later commit is reachable; "
        "reset test files with `git checkout HEAD -- FILES`.",
        f"- {userns_line([json.loads(r['isolation']) if r.get('isolation') else {} for r in rows])}",
        "- `dockerfile` needs a build context: `testbed.tar.gz` (the tree of `base_commit`) and `swemint/` "
        "(grading tools, `ca.pem`, `build-env.sh`); `swemint export --format swebench-task-repo` writes it.",
        "",
        "## Minting configuration", "",
        "Host paths are shown as `<path>`.", "",
        "```json", json.dumps(scrub_paths(config), indent=1, sort_keys=True, default=str) if config else "(not recorded)",
        "```", "",
    ]
    return "\n".join(front_matter(rows, splits) + body)

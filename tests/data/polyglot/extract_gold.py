"""Make swebench_multilingual_gold.json: a slim extract of the non-Python SWE-bench Multilingual
dev instances used by tests/envpool/polyglot/test_polyglot_gold.py.

Usage: python tests/data/polyglot/extract_gold.py /work/shared/data/swebench_dev.jsonl \
           tests/data/polyglot/swebench_multilingual_gold.json

Per instance: id, repo, FAIL_TO_PASS, the first 40 PASS_TO_PASS, and per file of the test_patch
its path and the test functions/methods it shows (added or context lines and hunk headers:
Go ``func TestX(``, Java ``void x(``, PHP ``function testX(``).
"""

import json
import re
import sys

REPOS = {"gin-gonic/gin", "caddyserver/caddy", "sharkdp/bat", "burntsushi/ripgrep", "tokio-rs/axum",
         "axios/axios", "vuejs/core", "google/gson", "javaparser/javaparser", "jqlang/jq",
         "fmtlib/fmt", "briannesbitt/carbon", "faker-ruby/faker"}
PATTERNS = [r"func (Test\w*)\(", r"void\s+(\w+)\s*\(", r"function\s+(test\w*)\s*\("]


def _list(v):
    return json.loads(v) if isinstance(v, str) else v


def main(src: str, dest: str) -> None:
    out = []
    for line in open(src, encoding="utf-8"):
        d = json.loads(line)
        if d["repo"] not in REPOS:
            continue
        files = []
        for m in re.finditer(r"^diff --git a/(\S+) b/\S+\n(.*?)(?=^diff --git |\Z)", d["test_patch"],
                             re.M | re.S):
            names = []
            for ln in m.group(2).splitlines():
                if ln.startswith(("+", " ", "@@")) and not ln.startswith("+++"):
                    for p in PATTERNS:
                        names += [n for n in re.findall(p, ln) if n not in names]
            files.append({"path": m.group(1), "defines": names})
        out.append({"instance_id": d["instance_id"], "repo": d["repo"],
                    "FAIL_TO_PASS": _list(d["FAIL_TO_PASS"]),
                    "PASS_TO_PASS": _list(d["PASS_TO_PASS"])[:40], "test_files": files})
    with open(dest, "w", encoding="utf-8") as f:
        json.dump(out, f, indent=0, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Sources of task instances: GitHub issue-PR pairs and local git history.

Entry point for the CLI: `crawl(config, workdir, since_last=...) -> CrawlReport`, writing
`WORKDIR/crawl/instances.jsonl` (SWE-bench rows) and `WORKDIR/crawl/rejects.jsonl`.

Modules: `config` (typed YAML), `testpaths` (test/code split rules as data), `linking`
(closing keywords, timeline evidence), `quality` (rule-based score), `cache` + `transport`
(conditional requests, retries, rate limits, call counter) + `client` (PyGithub on that
transport), `discovery` (repository search and filters), `github` (pairs of one repository),
`gitlocal` (mining a mirror), `state` (DuckDB watermarks and outcomes), `crawl` (the run).
"""

from pipeline.sources.config import CrawlConfig, load_crawl_config
from pipeline.sources.crawl import CrawlReport, crawl
from pipeline.sources.errors import SourceError
from pipeline.sources.transport import ApiCounter

__all__ = ["ApiCounter", "CrawlConfig", "CrawlReport", "SourceError", "crawl", "load_crawl_config"]

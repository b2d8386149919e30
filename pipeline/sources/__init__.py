"""Sources of task instances: GitHub issue-PR pairs and local git history.

Entry point for the CLI: `crawl(config, workdir, since_last=...) -> CrawlReport`, writing
`WORKDIR/crawl/instances.jsonl` (SWE-bench rows) and `WORKDIR/crawl/rejects.jsonl`.

Modules: `crawl_config` (typed YAML), `diff_split` (test/code split of a diff by the rules),
`source_rows` (instance and reject rows), `source_errors` (the sources' error tree), `linking`
(closing keywords, timeline evidence), `quality` (rule-based score), `httpcache` + `transport`
(conditional requests, retries, rate limits, call counter) + `client` (PyGithub on that
transport), `discovery` (repository search and filters), `github` (pairs of one repository),
`gitlocal` (mining a mirror), `state` (DuckDB watermarks and outcomes), `crawl` (the run).
"""

from pipeline.sources.crawl_config import CrawlConfig, load_crawl_config
from pipeline.sources.crawl import CrawlReport, crawl
from pipeline.sources.source_errors import SourceError
from pipeline.sources.transport import ApiCounter

__all__ = ["ApiCounter", "CrawlConfig", "CrawlReport", "SourceError", "crawl", "load_crawl_config"]

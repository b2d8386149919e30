"""pipeline: the batch layer of swemint (the top of envpool <- agents <- pipeline).

Loads SWE-bench-format instances (`instances`), finds each repository's git directory
(`repos`), runs Ray-agnostic stages (`stages`) on Ray or in-process (`ray_adapter`), keeps one
durable row per instance (`store`), indexes kept environments in DuckDB (`envpool.pool`) and
exports Parquet. `driver.run_mint` ties these together; `cli` and `jobs.mint` are its front ends.

Only the driver process writes the store and the pool; workers return rows.
"""

"""Entry points meant for `ray job submit` (`python -m pipeline.jobs.mint ...`)."""

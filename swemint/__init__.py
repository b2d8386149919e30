"""swemint: turn real repositories into verifiable SWE-bench-style tasks.

The public Python API (the command line is `swemint` or `python -m swemint`).
"""

"""Test-report parsers for the runners of every ecosystem but pytest: one module per runner family
(each declares its parsers in `PARSERS`; `envpool.testrun.registry` collects them, with pytest's,
into the one registry), `common` (the `ReportParser` wrapper, shared helpers), `gold` (scoring our
ids against SWE-bench Multilingual's: `gold.gold_match`, `gold.exact_form_agreement`).
The parsers' contract and the table of names are in `envpool.testrun.registry`.
"""

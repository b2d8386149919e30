"""envpool: containers, images, the environment pool index, test runs and result parsing.

The lowest layer of swemint. It knows nothing about agents or the pipeline; `agents` and
`pipeline` import it, never the other way round.
"""

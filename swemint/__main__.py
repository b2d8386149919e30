"""`python -m swemint ...`: the `swemint` command line (`pipeline.cli`)."""

from pipeline.cli import main

if __name__ == "__main__":
    main()

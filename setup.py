"""Build step that puts the data files swemint needs at run time into the wheel.

`configs/`, `data/demo/` and `data/experiences/` live at the repository root (users edit and
read them there); package data cannot reach outside a package, so `build_py` copies them to
`envpool/_bundled/`, where `envpool.resources.resource` finds them in an installed package.
Everything else is in pyproject.toml.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

BUNDLED = ("configs", "data/demo", "data/experiences")  # = envpool.resources.BUNDLED


class BuildWithData(build_py):
    """`build_py`, then the bundled folders copied under `envpool/_bundled/`."""

    def run(self):
        super().run()
        root = Path(__file__).resolve().parent
        dest = Path(self.build_lib) / "envpool" / "_bundled"
        for rel in BUNDLED:
            src = root / rel
            if src.is_dir():
                shutil.copytree(src, dest / rel, dirs_exist_ok=True,
                                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


setup(cmdclass={"build_py": BuildWithData})

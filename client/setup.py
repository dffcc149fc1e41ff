"""Only what pyproject.toml cannot say: the build collects each in-repository game's event
types and the committed JSON Schema into the package (``collect.py``)."""

import sys
from pathlib import Path

from setuptools import setup

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect import BuildPy

setup(cmdclass={"build_py": BuildPy})

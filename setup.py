"""Installs the mprof package and the `mprof` command; metadata lives in pyproject.toml."""

from setuptools import setup

setup()

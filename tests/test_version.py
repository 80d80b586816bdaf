"""The package version: one release string, the same for the package and its installed metadata."""

from __future__ import annotations

import re
from importlib import metadata

import sbert_nonling
from sbert_nonling.version import __version__


def test_the_version_is_a_release_number_exported_by_the_package_and_installed_as_such():
    assert re.fullmatch(r"\d+\.\d+\.\d+", __version__)
    assert sbert_nonling.__version__ == __version__
    assert metadata.version("sbert-nonling") == __version__  # setup.cfg reads it from sbert_nonling/version.py

"""Shared fixtures: the repository, its bundled policies and the command-line tool."""

import os
from pathlib import Path

import pytest

import recourse

ROOT = Path(os.environ.get("RECOURSE_ROOT", Path(__file__).resolve().parents[2]))
CLI = Path(os.environ.get("RECOURSE_CLI", ROOT / "build" / "recourse"))


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def bundle() -> recourse.Bundle:
    return recourse.Bundle.from_paths(ROOT / "rules" / "examples")

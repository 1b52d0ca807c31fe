"""Fixtures for interop tests against pypaimon (run in ``.venv-paimon`` via a subprocess)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .paimon import Pypaimon, PypaimonRust, missing


@pytest.fixture(scope="session")
def pypaimon() -> Pypaimon:
    """The pypaimon driver; fails under CI and skips elsewhere when its venv is missing."""
    driver = Pypaimon()
    if not driver.available():
        reason = f"pypaimon venv not found ({driver.python}); create it with `make venv-paimon`"
        missing(reason)
    return driver


@pytest.fixture(scope="session")
def rust() -> PypaimonRust:
    """The pypaimon-rust driver (same venv); fails under CI and skips elsewhere when it is missing."""
    driver = PypaimonRust()
    if not driver.available():
        reason = f"pypaimon-rust not installed in {driver.python}; run `make venv-paimon`"
        missing(reason)
    return driver


@pytest.fixture
def tmp_warehouse(tmp_path: Path) -> str:
    """A fresh, empty warehouse directory."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)

"""Fixtures for differential tests against Paimon Java 0.9 (one JVM per session).

``java`` is the :class:`tests.java.oracle.PaimonJava` client. The first use builds the oracle
(``tests/java/build.py``: a cached no-op once built); when a JDK or the jar is missing the tests
skip with the reason, and under ``CI=true`` they fail instead. Every test here carries the
``java`` marker (``-m "not java"`` deselects them).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from lake_assets import Catalog
from tests.java.build import JavaOracleUnavailable, ci, ensure_built
from tests.java.oracle import PaimonJava

_HERE = Path(__file__).resolve().parent


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.java)


@pytest.fixture(scope="session")
def java(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PaimonJava]:
    """The session's Paimon Java oracle; skips (fails under CI) when Java or the jar is missing."""
    try:
        build = ensure_built()
    except JavaOracleUnavailable as exc:
        reason = f"Paimon Java oracle unavailable: {exc}"
        if ci():
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    oracle = PaimonJava(build, tmp_path_factory.mktemp("paimon-java"))
    try:
        yield oracle
    finally:
        oracle.close()


@pytest.fixture
def wh(tmp_path: Path) -> str:
    """A fresh warehouse directory shared by both engines."""
    path = tmp_path / "warehouse"
    path.mkdir()
    return str(path)


@pytest.fixture
def lake(wh: str) -> Catalog:
    """lake_assets' catalog on the same warehouse (database ``db`` exists)."""
    cat = Catalog(wh)
    cat.create_database("db")
    return cat

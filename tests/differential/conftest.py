"""Fixtures for differential tests against Paimon Java 0.9 (one JVM per session).

``java`` (defined in ``tests/conftest.py``, so that the other directories' few oracle reads share
the same JVM) is the :class:`tests.java.oracle.PaimonJava` client. The first use builds the oracle
(``tests/java/build.py``: a cached no-op once built); when a JDK or the jar is missing the tests
skip with the reason, and under ``CI=true`` they fail instead. Every test here carries the
``java`` marker (``-m "not java"`` deselects them).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from lake_assets import Catalog

_HERE = Path(__file__).resolve().parent

# Modules elsewhere imported the fixture from here (``from tests.differential.conftest import java``),
# which made a separate fixture in each such module and so a separate oracle JVM. The fixture is now
# the root conftest's; this name is kept, and is no fixture, so such an import still works and the
# module uses the session's one oracle.
java = None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if _HERE in Path(str(item.path)).resolve().parents:
            item.add_marker(pytest.mark.java)


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

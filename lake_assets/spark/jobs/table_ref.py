"""Where a table is, as a small picklable value that Spark closures carry to executors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lake_assets.catalog import Catalog
from lake_assets.table import Table


@dataclass(frozen=True)
class TableRef:
    """Where a table is: what a closure needs to reopen it on an executor (small and picklable)."""

    warehouse: str
    identifier: str
    storage_options: tuple[tuple[str, Any], ...] = ()

    @property
    def storage(self) -> dict[str, Any]:
        """The storage options as keyword arguments of the catalog."""
        return dict(self.storage_options)

    def catalog(self) -> Catalog:
        """A catalog on the warehouse."""
        return Catalog(self.warehouse, **self.storage)

    def open(self) -> Table:
        """The table, read afresh from its latest schema."""
        return self.catalog().get_table(self.identifier)

    def with_identifier(self, identifier: str) -> TableRef:
        """Another table of the same warehouse."""
        return TableRef(self.warehouse, identifier, self.storage_options)

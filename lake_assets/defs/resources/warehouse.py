"""The warehouse as a Dagster resource: catalog and table handles for reads in the Dagster process."""

from __future__ import annotations

from typing import TYPE_CHECKING

import dagster as dg
from pydantic import Field

from lake_assets.catalog import Catalog
from lake_assets.catalog_names import parse_identifier
from lake_assets.defs.declaration import declaration_differences, mismatch_message
from lake_assets.defs.resources.storage import Storage
from lake_assets.errors import NoSuchTableError
from lake_assets.store.branch_table import BRANCH_SEPARATOR
from lake_assets.table import Table

if TYPE_CHECKING:
    from lake_assets.defs.config import TableConfig


class WarehouseResource(dg.ConfigurableResource):
    """Where the tables live. In-process use is metadata only (health, snapshots, table creation);
    data work runs in Spark jobs, which get `job_args` and `job_env`."""

    storage: Storage = Field(description="Local path or S3 location (kind: local | s3).")

    @property
    def url(self) -> str:
        return self.storage.warehouse_url()

    def catalog(self) -> Catalog:
        return Catalog(self.url, **self.storage.catalog_options())

    def table(self, identifier: str) -> Table:
        return self.catalog().get_table(identifier)

    def table_if_exists(self, identifier: str) -> Table | None:
        """The table, or the branch ``db.t$branch_<name>``, or None when it does not exist."""
        catalog = self.catalog()
        main, branch = _split(identifier)
        if not catalog.table_exists(main):
            return None
        if branch is None:
            return catalog.get_table(identifier)
        try:
            return catalog.get_table(identifier)
        except NoSuchTableError:  # no schema under branch/branch-<name>
            return None

    def missing_branch(self, identifier: str) -> str:
        """Why the branch ``db.t$branch_<name>`` lake.yaml lists cannot be maintained: the table or
        the branch does not exist (naming the branches it has)."""
        main, branch = _split(identifier)
        listed = f"lake.yaml lists the branch {branch!r} under {main}'s `branches`"
        table = self.table_if_exists(main)
        if table is None:
            return f"{main} does not exist yet, so neither does its branch {branch!r} ({listed})"
        branches = table.branches()
        if branch in branches:  # its directory is there, its schema is not: damaged, never guessed at
            return (f"Branch {branch!r} of {main} has no schema file under branch/branch-{branch}/schema: it cannot "
                    "be read or maintained; check the branch or delete it")
        return (f"Branch {branch!r} of {main} does not exist (its branches: {', '.join(branches) or 'none'}); "
                f"{listed}: create it (Table.create_branch, or CREATE BRANCH in another engine) or remove it there")

    def existing_table(self, identifier: str) -> Table:
        """The table, or a non-retryable Dagster failure saying it must be ingested first."""
        table = self.table_if_exists(identifier)
        if table is None:
            raise dg.Failure(description=f"{identifier} does not exist yet: ingest first", allow_retries=False)
        return table

    def declared_table(self, spec: TableConfig) -> Table:
        """The existing table lake.yaml declares, or a non-retryable Dagster failure: it does not
        exist yet (ingest first), or its keys or options differ from lake.yaml's (each named). A
        branch lake.yaml lists that does not exist fails naming the branches the table has."""
        if spec.branch is not None:
            table = self.table_if_exists(spec.identifier)
            if table is None:
                raise dg.Failure(description=self.missing_branch(spec.identifier), allow_retries=False)
            return self._matching(spec, table)
        if spec.ingest is None:  # no asset of ours creates it: "ingest first" would send the user nowhere
            table = self.table_if_exists(spec.identifier)
            if table is None:
                raise dg.Failure(description=self._not_found(spec.identifier), allow_retries=False)
            return self._matching(spec, table)
        return self._matching(spec, self.existing_table(spec.identifier))

    def _not_found(self, identifier: str) -> str:
        database = parse_identifier(identifier)[0]
        catalog = self.catalog()
        if catalog.database_exists(database):
            tables = catalog.list_tables(database)
            there = (f"database {database} holds {', '.join(f'{database}.{t}' for t in tables)}" if tables
                     else f"database {database} holds no table")
        else:
            there = f"it has no database {database} (databases: {', '.join(catalog.list_databases()) or 'none'})"
        return (f"{identifier} does not exist in {self.url} ({there}). lake.yaml declares it without `ingest`, "
                "so lake_assets does not create it: check its identifier and the warehouse")

    def _matching(self, spec: TableConfig, table: Table) -> Table:
        problems = declaration_differences(table, spec.primary_keys, spec.partition_keys, spec.options)
        if problems:
            raise dg.Failure(description=mismatch_message(spec.identifier, problems), allow_retries=False)
        return table

    def table_path(self, identifier: str) -> str:
        """The table's directory (a branch's too: its own metadata is under ``branch/branch-<name>``)."""
        return self.catalog().table_path(_split(identifier)[0])

    def ensure_table(self, spec: TableConfig) -> Table:
        """Create the database and table from lake.yaml unless they exist; an existing table is kept
        as it is, and must have the keys and options lake.yaml declares (`declared_table`)."""
        catalog = self.catalog()
        existing = self.table_if_exists(spec.identifier)
        if existing is not None:
            return self._matching(spec, existing)
        catalog.create_database(parse_identifier(spec.identifier)[0], ignore_if_exists=True)
        return catalog.create_table(
            spec.identifier,
            spec.arrow_schema,
            primary_keys=spec.primary_keys,
            partition_keys=spec.partition_keys,
            options=dict(spec.options),
            ignore_if_exists=True,
        )

    def job_args(self, identifier: str) -> list[str]:
        """``--warehouse URL --table db.t [--branch NAME] [--storage-option k=v ...]`` (never secrets)."""
        main, branch = _split(identifier)
        args = ["--warehouse", self.url, "--table", main] + (["--branch", branch] if branch is not None else [])
        for k, v in self.storage.job_options().items():
            args += ["--storage-option", f"{k}={v}"]
        return args

    def job_env(self) -> dict[str, str]:
        """Credentials for the job processes' environment."""
        return self.storage.job_env()


def _split(identifier: str) -> tuple[str, str | None]:
    """``("db.t", "dev")`` for a branch's ``db.t$branch_dev``, ``("db.t", None)`` for a table (lake.yaml
    declares no table whose name holds ``$branch_``: `TableConfig`)."""
    main, sep, branch = identifier.partition(BRANCH_SEPARATOR)
    return main, branch if sep else None

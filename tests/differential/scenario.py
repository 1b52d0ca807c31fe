"""Run one sequence of table operations through Paimon Java 0.9 and lake_assets and compare.

A scenario is a list of steps (`W` write rows, `C` compact, `X` expire) applied to one table. The
same scenario runs on several tables of one warehouse, each with its own *engine pattern* saying
which engine performs each step:

- ``"java"``: every step by Java (the oracle's own table);
- ``"lake"``: every step by lake_assets;
- ``"java-lake"`` or ``"lake-java"``: engines alternate step by step, so each engine reads,
  compacts, expires and writes on top of what the other wrote.

`Scenario.run_all` runs ``java``, ``lake`` and ``java-lake`` by default. After each step both
engines read the table: the merged state (batch read of the latest snapshot) and the changes of
each new snapshot (incremental read of one snapshot at a time, and a streaming changelog scan that
both engines keep open across steps). At the end both read every retained snapshot by time travel.
`Observation` holds what each engine saw per step; `assert_agree` checks that every table and
every reader saw what Java saw on its own table. Snapshot ids differ between tables (Java's writer
may add a COMPACT snapshot per commit), so changes are compared per step, not per snapshot id.

Rows carry their row kind in a string column (``rowkind.field``), which both engines honour, so
retractions are written the same way by both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from lake_assets import Catalog
from lake_assets.table import Table
from tests.java.oracle import JavaStream, PaimonJava

from .helpers import _norm, row_set

JAVA_COMMIT_USER = "java-writer"
PATTERNS = ("java", "lake", "java-lake")


@dataclass(frozen=True)
class W:
    """Write and commit ``rows`` (dicts; missing columns are NULL) in one commit.

    ``java_full_compaction``: Java's writer also fully compacts bucket 0 in this commit, as Flink's
    sink does for ``full-compaction.delta-commits`` (Java's core writer alone never does);
    lake_assets' writer decides by itself from the option.
    """

    rows: tuple[Mapping[str, Any], ...]
    java_full_compaction: bool

    def __init__(self, *rows: Mapping[str, Any], java_full_compaction: bool = False) -> None:
        object.__setattr__(self, "rows", tuple(rows))
        object.__setattr__(self, "java_full_compaction", java_full_compaction)


@dataclass(frozen=True)
class C:
    """A dedicated compaction of every bucket (``full``: everything to the top level)."""

    full: bool = True


@dataclass(frozen=True)
class X:
    """Snapshot (and changelog) expiration with the table's retention options."""


Step = W | C | X


def engine_of(pattern: str, index: int) -> str:
    """Which engine performs step ``index`` under ``pattern``."""
    if pattern in ("java", "lake"):
        return pattern
    first, second = pattern.split("-")
    return first if index % 2 == 0 else second


def norm_changes(table: pa.Table, keys: Sequence[str]) -> list[tuple[Any, tuple[Any, ...]]]:
    """Changes as (key, the key's changes in order) sorted by key: order matters within a key only."""
    types = [f.type for f in table.schema]
    per_key: dict[Any, list[Any]] = {}
    for row in table.to_pylist():
        normed = tuple(_norm(v, t) for v, t in zip(row.values(), types, strict=True))
        per_key.setdefault(tuple(row[k] for k in keys), []).append(normed)
    return sorted(((k, tuple(v)) for k, v in per_key.items()), key=repr)


@dataclass
class Observation:
    """What each engine read from one table after each step."""

    pattern: str
    states: dict[str, list[list[Any]]] = field(default_factory=lambda: {"java": [], "lake": []})
    changes: dict[str, list[list[Any]]] = field(default_factory=lambda: {"java": [], "lake": []})
    streams: dict[str, list[list[Any]]] = field(default_factory=lambda: {"java": [], "lake": []})
    snapshot_ids: list[int] = field(default_factory=list)
    # (snapshot id, Java's rows, lake_assets' rows) of every retained snapshot the two read differently
    time_travel_mismatches: list[tuple[int, list[Any], list[Any]]] = field(default_factory=list)


class Scenario:
    """One table definition and its steps, runnable under any engine pattern."""

    def __init__(
        self,
        java: PaimonJava,
        wh: str,
        schema: pa.Schema,
        primary_keys: Sequence[str],
        options: Mapping[str, str],
        steps: Sequence[Step],
        *,
        partition_keys: Sequence[str] = (),
        compare_changes: bool = True,
        compare_streams: bool = True,
        long_lived_java_writer: bool = False,
    ) -> None:
        self.java, self.wh, self.schema = java, wh, schema
        self.primary_keys = list(primary_keys)
        self.partition_keys = list(partition_keys)
        self.options = {"bucket": "1", **dict(options)}
        self.steps = list(steps)
        self.compare_changes = compare_changes
        self.compare_streams = compare_streams
        # One Java writer for every write of a Java-only table, as a running Flink job has (it
        # counts commits for full-compaction.delta-commits); otherwise a writer per step, since
        # a writer must not outlive files the other engine compacts away.
        self.long_lived_java_writer = long_lived_java_writer
        self._writers: dict[str, Any] = {}
        self._pattern = ""
        self.catalog = Catalog(wh)
        self.catalog.create_database("db")
        self._ids: dict[str, int] = {}

    # -- one engine's actions

    def _java_write(self, name: str, step: W) -> None:
        ident = self._ids[name] = self._ids.get(name, 0) + 1
        if self.long_lived_java_writer and self._pattern == "java":
            if name not in self._writers:
                self._writers[name] = self.java.open_writer(self.wh, name, commit_user=JAVA_COMMIT_USER)
            self._java_commit(self._writers[name], ident, step)
            return
        with self.java.open_writer(self.wh, name, commit_user=JAVA_COMMIT_USER) as writer:
            self._java_commit(writer, ident, step)

    def _java_commit(self, writer: Any, ident: int, step: W) -> None:
        writer.write(list(step.rows), schema=self.schema)
        if step.java_full_compaction:
            writer.compact([], 0, full=True)
        # Flink's sink with changelog-producer.lookup-wait: the commit waits for compaction.
        writer.commit(ident, wait_compaction=True)

    def _java_compact(self, name: str, full: bool) -> None:
        # A dedicated compaction job runs with write-only off whatever the table says. Buckets are
        # named: the oracle's "every bucket" plans them with a batch scan, which sees no level-0
        # files of first-row tables (and so would compact nothing).
        if self.partition_keys:
            self.java.compact(self.wh, name, full=full, options={"write-only": "false"})
            return
        for bucket in range(int(self.options["bucket"])):
            self.java.compact(self.wh, name, [], bucket, full=full, options={"write-only": "false"})

    def _lake_write(self, table: Table, rows: Sequence[Mapping[str, Any]]) -> None:
        table.write_arrow(pa.Table.from_pylist(list(rows), schema=self.schema))

    def _step(self, engine: str, name: str, step: Step) -> None:
        if engine == "java":
            if isinstance(step, W):
                self._java_write(name, step)
            elif isinstance(step, C):
                self._java_compact(name, step.full)
            else:
                # As lake_assets' expire_snapshots: snapshots first, then the long-lived changelogs.
                self.java.expire_snapshots(self.wh, name)
                self.java.expire_changelogs(self.wh, name)
        else:
            table = self.catalog.get_table(name)
            if isinstance(step, W):
                self._lake_write(table, step.rows)
            elif isinstance(step, C):
                table.compact(full=step.full)
            else:
                table.expire_snapshots()

    # -- reading

    def _lake_changes(self, table: Table, lo: int, hi: int) -> pa.Table:
        parts = [table.read_changes(s - 1, s) for s in range(lo + 1, hi + 1)]
        return concat_changes(parts) if parts else _empty_changes(self.schema)

    def _java_changes(self, name: str, lo: int, hi: int) -> pa.Table:
        parts = [self.java.read_changes(self.wh, name, s - 1, s) for s in range(lo + 1, hi + 1)]
        return concat_changes(parts) if parts else _empty_changes(self.schema)

    def run(self, pattern: str, *, name: str | None = None) -> Observation:
        """Create the table (by the first step's engine), run the steps and observe after each."""
        name = name or f"db.t_{pattern.replace('-', '_')}"
        self._pattern = pattern
        creator = engine_of(pattern, 0)
        if creator == "java":
            self.java.create_table(self.wh, name, self.schema, self.primary_keys, self.partition_keys, self.options)
        else:
            self.catalog.create_table(name, self.schema, primary_keys=self.primary_keys,
                                      partition_keys=self.partition_keys, options=self.options)
        obs = Observation(pattern)
        java_stream: JavaStream | None = None
        lake_stream = None
        lake_table = self.catalog.get_table(name)
        previous = 0
        for i, step in enumerate(self.steps):
            self._step(engine_of(pattern, i), name, step)
            table = self.catalog.get_table(name)
            latest = table.snapshot_manager.latest_id() or 0
            obs.snapshot_ids.append(latest)
            obs.states["java"].append(row_set(self.java.read(self.wh, name)))
            lake_rows = row_set(table.to_arrow())
            obs.states["lake"].append(lake_rows)
            # The streaming read (bounded k-way merge in tiny batches) reads what the whole read does.
            streamed = list(table.to_batches(batch_size=3))
            assert (row_set(pa.Table.from_batches(streamed)) if streamed else []) == lake_rows, (
                f"step {i}: to_batches differs from to_arrow")
            if self.compare_changes and not isinstance(step, X):
                obs.changes["java"].append(norm_changes(self._java_changes(name, previous, latest), self.primary_keys))
                obs.changes["lake"].append(norm_changes(self._lake_changes(table, previous, latest), self.primary_keys))
            if self.compare_streams:
                if java_stream is None:
                    # Both streams start at the first snapshot and follow every later one.
                    java_stream = self.java.stream(self.wh, name, options={
                        "scan.mode": "from-snapshot", "scan.snapshot-id": str(table.snapshot_manager.earliest_id())})
                    lake_stream = lake_table.stream(mode="from-snapshot",
                                                    snapshot_id=table.snapshot_manager.earliest_id())
                obs.streams["java"].append(norm_changes(self._drain_java(java_stream, latest), self.primary_keys))
                obs.streams["lake"].append(norm_changes(self._drain_lake(table, lake_stream), self.primary_keys))
            previous = latest
        # Time travel to every retained snapshot (APPEND and COMPACT alike) reads the same in both.
        for snap in self.catalog.get_table(name).snapshots():
            java_rows = row_set(self.java.read(self.wh, name, snapshot_id=snap.id))
            lake_rows = row_set(self.catalog.get_table(name).to_arrow(snapshot_id=snap.id))
            if java_rows != lake_rows:
                obs.time_travel_mismatches.append((snap.id, java_rows, lake_rows))
        if java_stream is not None:
            java_stream.close()
        if name in self._writers:
            self._writers.pop(name).close()
        return obs

    def _drain_java(self, stream: JavaStream, latest: int) -> pa.Table:
        parts = []
        while True:
            parts.append(stream.next())
            if stream.checkpoint is None or stream.checkpoint > latest:
                break
        return concat_changes(parts)

    def _drain_lake(self, table: Table, stream: Any) -> pa.Table:
        reader = table.change_reader()
        parts = [reader.read(s) for b in stream.poll(max_snapshots=1000) for s in b.splits]
        return concat_changes(parts) if parts else reader.schema.empty_table()

    def run_all(self, patterns: Iterable[str] = PATTERNS) -> dict[str, Observation]:
        """Run every pattern on its own table of the warehouse."""
        return {p: self.run(p) for p in patterns}


def concat_changes(parts: Sequence[pa.Table]) -> pa.Table:
    """Concatenate change tables that may differ in nullability only (lake_assets marks
    ``_row_kind`` NOT NULL in some splits and not in others)."""
    schema = pa.schema([f.with_nullable(True) for f in parts[0].schema])
    return pa.concat_tables([p.cast(schema) for p in parts])


def _empty_changes(schema: pa.Schema) -> pa.Table:
    return schema.empty_table().append_column("_row_kind", pa.array([], pa.string()))


def assert_agree(
    observations: Mapping[str, Observation], *, what: Sequence[str] = ("states", "changes", "streams")
) -> None:
    """Every engine's reads of every table equal Java's reads of Java's own table, step by step."""
    oracle = observations["java"]
    for kind in what:
        if kind != "states":
            # guard against a vacuous pass: Java's own table must show changes somewhere
            assert any(getattr(oracle, kind)["java"]), f"Java read no {kind} at all from its own table"
    problems = []
    if "states" in what:
        for pattern, obs in observations.items():
            problems += [f"snapshot {sid} of table {pattern!r}: Java reads {j}, lake_assets reads {la}"
                         for sid, j, la in obs.time_travel_mismatches]
    for kind in what:
        expected = getattr(oracle, kind)["java"]
        for pattern, obs in observations.items():
            for reader in ("java", "lake"):
                got = getattr(obs, kind)[reader]
                for i, (g, e) in enumerate(zip(got, expected, strict=True)):
                    if g != e:
                        problems.append(f"{kind} after step {i} of table {pattern!r} read by {reader}:\n"
                                        f"    got      {g}\n    expected {e}")
    assert not problems, "engines disagree:\n" + "\n".join(problems[:8])

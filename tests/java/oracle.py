"""A long-lived Paimon Java 0.9 process as the test oracle.

:class:`PaimonJava` starts ``lakeoracle.PaimonOracle`` (``tests/java/src``) once and talks to it
with one JSON request and one JSON response per line. Data crosses as typed JSON values (see
``Values.java``): floats as round-trip text, decimals as strings, binaries as base64, timestamps as
``[epoch millis, nano of milli]``, maps as key/value pairs, NULL at any level as ``null``, so every
Paimon type survives exactly. A failing request raises :class:`JavaError` with the Java exception
class and message, so a test can assert that Java refuses something.

Tables are named ``"db.table"`` inside a ``warehouse`` directory (a local path). The JVM's output
goes to a log file (``PaimonJava.log_path``), never to the protocol. Most methods take ``options``:
dynamic table options applied with ``Table.copy`` for that request only (e.g. ``write-only``, scan
options, retention for ``expire_snapshots``).

Extending: add a ``case "op":`` to ``PaimonOracle.dispatch`` (arguments arrive as a JsonNode, rows
through ``rows(table, args)``, results as JSON; ``Values`` converts data both ways), then a method
here that calls ``self.call("op", ...)``. The build recompiles when a source changes. The value
encoding is ``oracle_values.py``'s, the writer and stream handles ``oracle_handles.py``'s.
"""

from __future__ import annotations

import base64
import json
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa

from lake_assets.spec.types import from_arrow

from .build import OracleBuild
from .oracle_handles import JavaStream, JavaWriter
from .oracle_values import Filter, decode_result, encode_rows, filter_json, paimon_fields

DEFAULT_TIMEOUT = 300.0


def _one_manifest_thread(options: Mapping[str, str] | None) -> dict[str, str]:
    """``options`` with Java reading manifests on one thread unless the caller says otherwise.

    Java 0.9's ``AppendOnlyFileStoreScan`` keeps its per-schema data filters in a plain ``HashMap``
    (``dataFilterMapping``) that the parallel manifest readers fill with ``computeIfAbsent``: under
    load a filtered read of an append table fails now and then with
    ``ConcurrentModificationException`` (seen in ``test_null_filters_java.py``). Rows and files read
    do not depend on the number of threads, so one thread keeps the oracle deterministic."""
    return {"scan.manifest.parallelism": "1", **(options or {})}


class JavaError(AssertionError):
    """Paimon Java refused a request; ``java_class`` / ``message`` are the exception's, ``causes`` its chain."""

    def __init__(self, op: str, error: Mapping[str, Any]) -> None:
        self.op = op
        self.java_class: str = error.get("class", "")
        self.message: str = error.get("message", "")
        self.causes: list[dict[str, str]] = list(error.get("causes", []))
        self.stack: str = error.get("stack", "")
        super().__init__(f"Paimon Java {op} failed: {self.java_class}: {self.message}")

    def mentions(self, text: str) -> bool:
        """True when ``text`` appears in the class or message of the exception or any cause."""
        parts = [self.java_class, self.message]
        for c in self.causes:
            parts += [c.get("class", ""), c.get("message", "")]
        return any(text in p for p in parts)


# ---------------------------------------------------------------------------------- client


class PaimonJava:
    """One Paimon Java 0.9 JVM, driven request by request (not thread-safe; one per test session)."""

    def __init__(self, build: OracleBuild, work_dir: str | Path, timeout: float = DEFAULT_TIMEOUT) -> None:
        self.work_dir = Path(work_dir)
        self.work_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work_dir / "paimon-java.log"
        io_dir = self.work_dir / "io"
        io_dir.mkdir(exist_ok=True)
        self.timeout = timeout
        self._log = self.log_path.open("ab")
        # C1 only: the oracle runs many small requests, where the optimizing JIT's compile work on
        # 2 shared cores costs more than it gains (the differential suite runs ~2x faster).
        self._proc = subprocess.Popen(
            [*build.command("-Xmx1g", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss4m"), str(io_dir)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._next_id = 0
        ready = self._readline(120.0)
        if json.loads(ready).get("ready") is not True:
            raise RuntimeError(f"Paimon Java oracle did not start: {ready!r}; see {self.log_path}")

    # -- plumbing

    def _readline(self, timeout: float) -> str:
        line: list[str] = []
        reader = threading.Thread(target=lambda: line.append(self._proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        if reader.is_alive():
            self.close(kill=True)
            raise RuntimeError(f"Paimon Java oracle gave no answer within {timeout}s; see {self.log_path}")
        if not line or not line[0]:
            raise RuntimeError(
                f"Paimon Java oracle exited (code {self._proc.poll()}); see {self.log_path}:\n{self.log_tail()}"
            )
        return line[0]

    def log_tail(self, chars: int = 4000) -> str:
        """The end of the JVM's log (stderr), for failure messages."""
        self._log.flush()
        return self.log_path.read_text(errors="replace")[-chars:]

    def call(self, op: str, **args: Any) -> Any:
        """Send one request; return its result or raise :class:`JavaError`."""
        if self._proc.poll() is not None:
            raise RuntimeError(f"Paimon Java oracle is not running; see {self.log_path}")
        self._next_id += 1
        request = {"id": self._next_id, "op": op, "args": {k: v for k, v in args.items() if v is not None}}
        self._proc.stdin.write(json.dumps(request, allow_nan=False) + "\n")
        self._proc.stdin.flush()
        response = json.loads(self._readline(self.timeout))
        if response.get("id") != self._next_id:
            raise RuntimeError(f"oracle protocol out of step: sent {self._next_id}, got {response.get('id')}")
        if not response["ok"]:
            raise JavaError(op, response["error"])
        return response.get("result")

    def alive(self) -> bool:
        """True while the JVM runs."""
        return self._proc.poll() is None

    def close(self, kill: bool = False) -> None:
        """Stop the JVM (politely unless ``kill``)."""
        if self._proc.poll() is None:
            if not kill:
                try:
                    self._proc.stdin.write(json.dumps({"id": 0, "op": "shutdown"}) + "\n")
                    self._proc.stdin.flush()
                    self._proc.wait(30)
                except (OSError, subprocess.TimeoutExpired):
                    pass
            if self._proc.poll() is None:
                self._proc.kill()
                self._proc.wait()
        self._log.close()

    # -- tables

    def create_table(
        self,
        warehouse: str,
        table: str,
        schema: pa.Schema | Sequence[tuple[str, Any]],
        primary_keys: Sequence[str] = (),
        partition_keys: Sequence[str] = (),
        options: Mapping[str, str] | None = None,
        ignore_if_exists: bool = False,
    ) -> dict[str, Any]:
        """Create ``table`` (``"db.name"``; the database is created if missing); return its schema JSON.

        ``schema`` is an Arrow schema (mapped as lake_assets maps it) or ``(name, paimon type)`` pairs,
        the type a schema-file JSON value such as ``"DECIMAL(38, 9) NOT NULL"``. ``file.format`` defaults
        to ``parquet`` (Paimon 0.9's own default is ORC) unless ``options`` sets it.
        """
        fields = (
            paimon_fields(schema)
            if isinstance(schema, pa.Schema)
            else [{"name": n, "type": t} for n, t in schema]
        )
        opts = {"file.format": "parquet", **dict(options or {})}
        return self.call(
            "create_table", warehouse=warehouse, table=table, fields=fields, primary_keys=list(primary_keys),
            partition_keys=list(partition_keys), table_options=opts, ignore_if_exists=ignore_if_exists,
        )

    def drop_table(self, warehouse: str, table: str) -> None:
        """Drop a table and its files."""
        self.call("drop_table", warehouse=warehouse, table=table)

    def schema(self, warehouse: str, table: str) -> dict[str, Any]:
        """The latest schema as Paimon's schema-file JSON."""
        return self.call("schema", warehouse=warehouse, table=table)

    def alter_table(self, warehouse: str, table: str, *changes: Mapping[str, Any]) -> dict[str, Any]:
        """Apply schema changes atomically; return the new schema JSON.

        Each change is a dict: ``{"change": "add_column", "name", "type" (Paimon JSON type or Arrow
        type), "comment"?, "first"?, "after"?}``, ``rename_column`` (name, new_name), ``drop_column``
        (name), ``update_column_type`` (name, type), ``update_column_nullability`` (name, nullable),
        ``set_option`` (key, value), ``remove_option`` (key). See also the helpers below.
        """
        out = []
        for c in changes:
            c = dict(c)
            if isinstance(c.get("type"), pa.DataType):
                c["type"] = from_arrow(c["type"]).to_json()
            out.append(c)
        return self.call("alter_table", warehouse=warehouse, table=table, changes=out)

    # -- writing

    def write(
        self,
        warehouse: str,
        table: str,
        data: pa.Table | pa.RecordBatch | Sequence[Mapping[str, Any]],
        *,
        kinds: Sequence[str] | None = None,
        commit_identifier: int | None = None,
        commit_user: str | None = None,
        overwrite: Mapping[str, Any] | bool | None = None,
        filter_committed: bool = False,
        options: Mapping[str, str] | None = None,
        schema: pa.Schema | None = None,
    ) -> dict[str, Any]:
        """Write and commit rows; return ``{"committed": n, "snapshot_id": latest}``.

        Without ``commit_identifier`` this is a batch write (``BatchWriteBuilder``; ``overwrite`` True
        or a partition spec makes it an INSERT OVERWRITE). With one it is a streaming commit
        (``StreamWriteBuilder`` with ``commit_user``); ``filter_committed`` uses ``filterAndCommit``,
        Flink's recovery path, which skips identifiers this user already committed. ``kinds`` gives
        a RowKind per row (``+I``, ``-U``, ``+U``, ``-D``). Columns missing from ``data`` are NULL.
        """
        columns, rows = encode_rows(data, schema)
        ow = None
        if overwrite is True:
            ow = {}
        elif overwrite:
            ow = {k: str(v) for k, v in overwrite.items()}
        return self.call(
            "write", warehouse=warehouse, table=table, columns=columns, rows=rows,
            kinds=list(kinds) if kinds is not None else None, commit_identifier=commit_identifier,
            commit_user=commit_user, overwrite=ow, filter_committed=filter_committed, options=options,
        )

    def open_writer(
        self, warehouse: str, table: str, commit_user: str | None = None, options: Mapping[str, str] | None = None
    ) -> JavaWriter:
        """A stream writer kept open across commits (like one Flink sink task plus its committer)."""
        res = self.call("writer_open", warehouse=warehouse, table=table, commit_user=commit_user, options=options)
        return JavaWriter(self, res["handle"], res["commit_user"])

    def compact(
        self,
        warehouse: str,
        table: str,
        partition: Sequence[Any] | None = None,
        bucket: int | None = None,
        *,
        full: bool = True,
        commit_user: str | None = None,
        commit_identifier: int | None = None,
        options: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """Compact one (partition values, bucket), or every non-empty bucket when ``bucket`` is None."""
        return self.call(
            "compact", warehouse=warehouse, table=table, partition=list(partition or []), bucket=bucket, full=full,
            commit_user=commit_user, commit_identifier=commit_identifier, options=options,
        )

    # -- reading

    def read(
        self,
        warehouse: str,
        table: str,
        *,
        snapshot_id: int | None = None,
        tag: str | None = None,
        timestamp_millis: int | None = None,
        projection: Sequence[str] | None = None,
        filter: Filter = None,
        options: Mapping[str, str] | None = None,
        with_kinds: bool = False,
    ) -> pa.Table:
        """Batch read (latest, or time travel by snapshot id / tag / time), exactly filtered, projected."""
        res = self.call(
            "read", warehouse=warehouse, table=table, snapshot_id=snapshot_id, tag=tag,
            timestamp_millis=timestamp_millis, projection=list(projection) if projection else None,
            filter=filter_json(filter), options=_one_manifest_thread(options),
        )
        return decode_result(res, with_kinds)

    def read_changes(
        self,
        warehouse: str,
        table: str,
        start: int,
        end: int,
        *,
        mode: str | None = None,
        keep_deletes: bool = True,
        projection: Sequence[str] | None = None,
        filter: Filter = None,
        options: Mapping[str, str] | None = None,
    ) -> pa.Table:
        """Incremental read of snapshots (start, end] with a ``_row_kind`` column.

        ``mode`` is ``incremental-between-scan-mode`` (auto, delta, changelog; 0.9 has no ``diff``).
        ``keep_deletes`` keeps -U/-D rows, which Java's batch reads drop by default.
        """
        res = self.call(
            "read_changes", warehouse=warehouse, table=table, start=start, end=end, mode=mode,
            keep_deletes=keep_deletes, projection=list(projection) if projection else None,
            filter=filter_json(filter), options=_one_manifest_thread(options),
        )
        return decode_result(res, with_kinds=True)

    def stream(self, warehouse: str, table: str, options: Mapping[str, str] | None = None) -> JavaStream:
        """A streaming scan; ``options`` are scan options (``scan.mode``, ``consumer-id``, ...)."""
        res = self.call("stream_open", warehouse=warehouse, table=table, options=options)
        return JavaStream(self, res["handle"])

    def splits(
        self,
        warehouse: str,
        table: str,
        *,
        snapshot_id: int | None = None,
        filter: Filter = None,
        options: Mapping[str, str] | None = None,
    ) -> list[dict[str, Any]]:
        """Java's scan plan: ``[{"partition": [...], "bucket": n, "files": [{"file_name", "level", ...}]}]``."""
        return self.call(
            "splits", warehouse=warehouse, table=table, snapshot_id=snapshot_id, filter=filter_json(filter),
            options=options,
        )

    def bucket_of(
        self, warehouse: str, table: str, data: pa.Table | Sequence[Mapping[str, Any]], schema: pa.Schema | None = None
    ) -> list[dict[str, Any]]:
        """The ``{"partition": [...], "bucket": n}`` Java's writer assigns to each row."""
        columns, rows = encode_rows(data, schema)
        return self.call("bucket_of", warehouse=warehouse, table=table, columns=columns, rows=rows)

    def dynamic_bucket(
        self, warehouse: str, table: str, what: str,
        data: pa.Table | Sequence[Mapping[str, Any]] = (), *, num_assigners: int = 1,
    ) -> Any:
        """Dynamic-bucket facts as Paimon itself computes them (``DynamicBucketOps.java``):
        ``what="hash_index"``: the latest snapshot's HASH entries (``partition``, ``bucket``,
        ``file_name``, ``row_count``, ``hashes``); ``"key_hashes"``: per row of ``data`` its
        ``key_hash`` and ``partition_hash``; ``"assign"``: the bucket of each row of ``data`` from
        ``num_assigners`` fresh assigners loaded from the latest snapshot (nothing is committed)."""
        columns, rows = encode_rows(data) if len(data) else ([], [])
        return self.call("dynamic_bucket", warehouse=warehouse, table=table, what=what, columns=columns,
                         rows=rows, num_assigners=num_assigners)

    # -- snapshots, maintenance

    def append_dv_delete(self, warehouse: str, table: str, filter: Filter) -> dict[str, Any]:
        """Delete the rows matching ``filter`` (None: all) from a deletion-vector append table the way
        Spark's DELETE does in Java 0.9: new vectors through the partition's
        UnawareAppendDeletionFileMaintainer; ``{"files_marked", "snapshot_id"}``."""
        return self.call("append_dv_delete", warehouse=warehouse, table=table, filter=filter_json(filter))

    def append_compact(self, warehouse: str, table: str) -> dict[str, Any]:
        """Spark's compact procedure on an unaware-bucket append table (Java 0.9's coordinator
        and compaction tasks, vectors applied); ``{"tasks", "groups", "snapshot_id"}``, ``groups``
        each task's input file names."""
        return self.call("append_compact", warehouse=warehouse, table=table)

    def deletion_vectors(self, warehouse: str, table: str) -> list[dict[str, Any]]:
        """The latest snapshot's splits as Java plans them, each with ``bucket``, ``raw_convertible``
        and ``files``: ``name``, ``level`` and, for a file with a deletion vector, ``index_file``,
        ``offset``, ``length`` and the ``deleted`` positions Java's own reader finds."""
        return self.call("deletion_vectors", warehouse=warehouse, table=table)

    def option_value(self, key: str, value: str) -> dict[str, str]:
        """``{"type", "value"}``: what Paimon's ``Options.get`` reads from a ``CoreOptions`` key's
        text (a Duration as milliseconds, a MemorySize as bytes); `JavaError` when it does not parse."""
        return self.call("option_value", key=key, value=value)

    def option_lookups(self, value: str) -> dict[str, Any]:
        """What Paimon 0.9's readers of string options make of ``value`` (``OptionOps.lookups``):
        ``format``, ``parquet``, ``orc``, ``avro``, ``spill`` (a name, or ``"!<exception class>"``)
        and ``avro_zstd`` (Paimon's Avro writer takes it for zstd)."""
        return self.call("option_lookups", value=value)

    def level_maps(self, value: str) -> dict[str, Any]:
        """Paimon 0.9's ``fileFormatPerLevel()`` and ``fileCompressionPerLevel()`` of ``value``:
        ``format`` and ``compression``, each {level (text): value} or ``"!<exception class>"``."""
        return self.call("level_maps", value=value)

    def success_file(self, table_path: str, partition: str, *, mark: bool = False) -> dict[str, Any]:
        """The ``_SUCCESS`` file of ``partition`` (``k=v/...``) under a table directory as Paimon's
        ``SuccessFile.fromPath`` reads it: ``creation_time`` and ``modification_time``;
        with ``mark``, Paimon's ``SuccessFileMarkDoneAction.markDone`` first."""
        return self.call("success_file", table_path=table_path, partition=partition, mark=mark)

    def file_index_hash(self, paimon_type: Any, values: Sequence[Any]) -> list[int]:
        """Paimon's bloom-filter ``FastHash`` of each value (the oracle's JSON encoding, see
        ``Values.java``) under the Paimon type given (schema-file JSON)."""
        return self.call("file_index_hash", type=paimon_type, values=list(values))

    def bitmap64_serialize(self, positions: Sequence[int]) -> bytes:
        """A 64-bit deletion vector of ``positions`` (size, magic, bitmaps, CRC) as Paimon 1.2+'s
        ``Bitmap64DeletionVector.serializeTo`` frames it, each 32-bit bitmap written by Java's
        RoaringBitmap (Java 0.9 has no such vector: ``Bitmap64Ops.java`` follows HEAD's source)."""
        return base64.b64decode(self.call("bitmap64_serialize", positions=[int(p) for p in positions])["bytes"])

    def bitmap_v2_serialize(self, paimon_type: Any, values: Sequence[Any], block_size: int) -> bytes:
        """A version-2 bitmap index payload of one file's column ``values`` (the oracle's JSON
        encoding, see ``Values.java``), laid out as Paimon HEAD's ``BitmapFileIndexMetaV2`` does
        with Java's own HashMap, RoaringBitmap32 and comparators (Java 0.9 writes version 1 only:
        ``BitmapV2Ops.java`` follows HEAD's source)."""
        return base64.b64decode(self.call("bitmap_v2_serialize", type=paimon_type, values=list(values),
                                          block_size=int(block_size))["bytes"])

    def bitmap64_deserialize(self, data: bytes) -> list[int]:
        """The positions of a framed 64-bit vector as HEAD's ``OptimizedRoaringBitmap64.deserialize``
        reads it (Java's RoaringBitmap reading each 32-bit bitmap)."""
        return [int(p) for p in self.call("bitmap64_deserialize",
                                          bytes=base64.b64encode(data).decode())["positions"]]

    def sketch_fold(self, function: str, groups: Sequence[Sequence[bytes | None]]) -> list[bytes | None]:
        """Each group folded by Paimon's own FieldAggregator ``function`` (rbm32, rbm64,
        hll_sketch, theta_sketch) as AggregateMergeFunction folds a key: acc = agg(acc, value)."""
        def b64(v: bytes | None) -> str | None:
            return None if v is None else base64.b64encode(v).decode()

        res = self.call("sketch_fold", function=function, groups=[[b64(v) for v in g] for g in groups])
        return [None if r is None else base64.b64decode(r) for r in res["results"]]

    def sketch_make(self, kind: str, sets: Sequence[Sequence[int]], **params: Any) -> list[bytes]:
        """One serialized sketch / bitmap per set of ints, built by the libraries Java 0.9 bundles
        (``kind``: hll, theta, rbm32, rbm64; ``params``: lg_k, hll_type, form; see SketchAggOps)."""
        res = self.call("sketch_make", kind=kind, sets=[[int(x) for x in s] for s in sets], **params)
        return [base64.b64decode(r) for r in res["results"]]

    def sketch_estimate(self, kind: str, values: Sequence[bytes]) -> list[Any]:
        """Java's estimate of each sketch (hll, theta), cardinality of each rbm32, values of each rbm64."""
        res = self.call("sketch_estimate", kind=kind, values=[base64.b64encode(v).decode() for v in values])
        return list(res["results"])

    def file_index_test(self, warehouse: str, table: str, filter: Filter) -> list[dict[str, Any]]:
        """Every data file of the latest snapshot with ``name``, ``bucket``, ``extra_files``,
        ``embedded`` (base64, when the index is in the manifest) and ``remain``: what Java's
        ``FileIndexPredicate`` decides for ``filter`` from the file's index (absent: no index)."""
        return self.call("file_index_test", warehouse=warehouse, table=table, filter=filter_json(filter))

    def snapshots(self, warehouse: str, table: str) -> list[dict[str, Any]]:
        """Every snapshot file's JSON, oldest first."""
        return self.call("snapshots", warehouse=warehouse, table=table)

    def expire_snapshots(self, warehouse: str, table: str, options: Mapping[str, str] | None = None) -> int:
        """Java's snapshot expiration with the table's retention options overridden by ``options``."""
        return self.call("expire_snapshots", warehouse=warehouse, table=table, options=options)

    def expire_changelogs(self, warehouse: str, table: str, options: Mapping[str, str] | None = None) -> int:
        """Java's long-lived changelog expiration (``changelog.*`` retention options)."""
        return self.call("expire_changelogs", warehouse=warehouse, table=table, options=options)

    def create_tag(self, warehouse: str, table: str, name: str, snapshot_id: int | None = None) -> None:
        """Tag a snapshot (the latest when None)."""
        self.call("create_tag", warehouse=warehouse, table=table, name=name, snapshot_id=snapshot_id)

    def delete_tag(self, warehouse: str, table: str, name: str) -> None:
        """Delete a tag (and files only it kept)."""
        self.call("delete_tag", warehouse=warehouse, table=table, name=name)

    def tags(self, warehouse: str, table: str) -> dict[str, int]:
        """Tag name -> snapshot id."""
        return self.call("tags", warehouse=warehouse, table=table)

    def rollback(self, warehouse: str, table: str, *, snapshot_id: int | None = None, tag: str | None = None) -> None:
        """Roll the table back to a snapshot or a tag."""
        self.call("rollback", warehouse=warehouse, table=table, snapshot_id=snapshot_id, tag=tag)

    def create_branch(self, warehouse: str, table: str, name: str, tag: str | None = None) -> None:
        """Paimon 0.9's ``createBranch(name)`` (an empty branch: the latest schema only) or
        ``createBranch(name, tag)`` (the tag's snapshot, tag and schema files copied into
        ``branch/branch-<name>``). A branch is then the table ``db.t$branch_<name>``."""
        self.call("create_branch", warehouse=warehouse, table=table, name=name, tag=tag)

    def fast_forward(self, warehouse: str, table: str, name: str) -> None:
        """Paimon 0.9's ``fastForward(name)``: main's snapshots, schemas and tags from the branch's
        earliest snapshot on deleted, the branch's snapshot, schema and tag directories copied in."""
        self.call("fast_forward", warehouse=warehouse, table=table, name=name)

    def branches(self, warehouse: str, table: str) -> list[str]:
        """The table's branch names, as ``BranchManager.branches`` lists them."""
        return self.call("branches", warehouse=warehouse, table=table)

    def consumers(self, warehouse: str, table: str) -> dict[str, int]:
        """Consumer id -> next snapshot id."""
        return self.call("consumers", warehouse=warehouse, table=table)

    def reset_consumer(self, warehouse: str, table: str, consumer_id: str, next_snapshot: int) -> None:
        """Create or move a consumer."""
        self.call("reset_consumer", warehouse=warehouse, table=table, consumer_id=consumer_id,
                  next_snapshot=next_snapshot)

    def delete_consumer(self, warehouse: str, table: str, consumer_id: str) -> None:
        """Remove a consumer."""
        self.call("delete_consumer", warehouse=warehouse, table=table, consumer_id=consumer_id)


    def expire_partitions(self, warehouse: str, table: str, expiration_time: str | None = None,
                          options: Mapping[str, str] | None = None) -> list[dict[str, str]]:
        """Paimon's ``expire_partitions`` procedure now (the table's options, no check interval):
        the expired partitions as {key: value text}. ``options`` are dynamic table options."""
        return self.call("lifecycle", action="expire_partitions", warehouse=warehouse, table=table,
                         expiration_time=expiration_time, options=options)

    def remove_orphan_files(self, warehouse: str, table: str, *, older_than_ms: int,
                            dry_run: bool = False) -> list[str]:
        """Paimon 0.9's ``OrphanFilesClean`` with the bound ``older_than_ms`` (epoch ms): the paths
        it deleted (or, with ``dry_run``, would delete), files and directories alike."""
        return self.call("lifecycle", action="remove_orphan_files", warehouse=warehouse, table=table,
                         older_than_ms=older_than_ms, dry_run=dry_run)

    def commit_watermark(self, warehouse: str, table: str, rows: Sequence[Sequence[Any]], *,
                         commit_identifier: int, watermark: int | None, commit_user: str | None = None,
                         options: Mapping[str, str] | None = None,
                         log_offsets: Mapping[int, int] | None = None) -> int:
        """Write ``rows`` (JSON values in the table's column order; fixed-bucket or append tables)
        and commit them with ``watermark`` (epoch ms) and ``log_offsets`` (bucket -> offset) as
        Flink's sink does; the latest snapshot id. ``options`` are dynamic table options of the write."""
        offsets = None if log_offsets is None else {str(b): o for b, o in log_offsets.items()}
        return self.call("lifecycle", action="commit_watermark", warehouse=warehouse, table=table,
                         rows=[list(r) for r in rows], commit_identifier=commit_identifier,
                         watermark=watermark, commit_user=commit_user, options=options,
                         log_offsets=offsets)["snapshot_id"]

    def analyze(self, warehouse: str, table: str, *, merged_record_count: int,
                merged_record_size: int) -> dict[str, Any]:
        """Commit statistics of the latest snapshot as an ANALYZE snapshot (Java's
        ``commitStatistics``): ``{"snapshot_id": .., "statistics": <file name>}``."""
        return self.call("lifecycle", action="analyze", warehouse=warehouse, table=table,
                         merged_record_count=merged_record_count, merged_record_size=merged_record_size)

"""What importing the core costs, counted in modules (issue 17 §3).

Every process that touches a table (a Spark Python worker, a Dagster code location, a job) imports
``lake_assets`` first. The package exports its names on first use and `Table`'s verbs import their
operations when called, so loading a table, writing and reading import none of the maintenance and
change-read modules. Each check runs in a fresh interpreter and looks at ``sys.modules`` by name;
nothing is timed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import fsspec
import pyarrow as pa
import pytest

import lake_assets
from lake_assets import Catalog
from lake_assets.io.factory import _split_protocol

REPO = Path(__file__).resolve().parents[2]

# The modules of verbs a write or a read never calls: the dedicated compaction (a writer's inline
# compaction plans and rewrites with `ops.compact.plan` / `.rewrite`, as Paimon's writer does, but
# never runs `compact()`), the postpone compaction, expiry, tags, change reads and streams, rescale,
# orphan removal, schema changes, partition expiry and health.
VERB_MODULES = (
    "lake_assets.ops.compact.run",
    "lake_assets.ops.postpone",
    "lake_assets.ops.expire",
    "lake_assets.ops.expire_plan",
    "lake_assets.ops.expire_files",
    "lake_assets.ops.expire_changelog",
    "lake_assets.ops.expire_index",
    "lake_assets.ops.tagging",
    "lake_assets.ops.tag_auto",
    "lake_assets.ops.tag_deletion",
    "lake_assets.ops.tag_diff",
    "lake_assets.ops.stream",
    "lake_assets.ops.stream_postpone",
    "lake_assets.ops.full_phase_kinds",
    "lake_assets.ops.rescale",
    "lake_assets.ops.orphans",
    "lake_assets.ops.schema_change",
    "lake_assets.ops.schema_change_model",
    "lake_assets.ops.schema_apply",
    "lake_assets.ops.schema_column_types",
    "lake_assets.ops.schema_option_change",
    "lake_assets.ops.partition_expire",
    "lake_assets.ops.table_health",
    "lake_assets.ops.health",
)

SCHEMA = pa.schema([("k", pa.int64()), ("dt", pa.string()), ("v", pa.float64())])


def modules_after(code: str) -> set[str]:
    """The names in ``sys.modules`` after a fresh interpreter ran ``code``."""
    script = textwrap.dedent(code) + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_the_verb_modules_exist() -> None:
    """A renamed module would make the checks below pass vacuously."""
    for name in VERB_MODULES:
        path = REPO / (name.replace(".", "/") + ".py")
        assert path.is_file(), name


def test_importing_the_package_imports_none_of_its_modules() -> None:
    loaded = modules_after("import lake_assets")
    assert sorted(m for m in loaded if m.startswith("lake_assets")) == ["lake_assets", "lake_assets.lazy_exports"]
    assert "pyarrow" not in loaded


def test_the_table_facade_imports_no_operation() -> None:
    """`Catalog` and `Table` import the store (which plans with the scan) but no operation: each
    verb, reads and writes included, imports its modules when first called."""
    loaded = modules_after("from lake_assets import Catalog, Table")
    for name in ("lake_assets.ops.write", "lake_assets.ops.commit", "lake_assets.ops.read", "lake_assets.ops.plan",
                 "lake_assets.ops.streaming_read", "lake_assets.ops.postpone_write", "lake_assets.ops.overwrite",
                 "lake_assets.predicate", *VERB_MODULES):
        assert name not in loaded


def test_no_core_module_builds_arrow_arrays_at_import() -> None:
    """pyarrow imports pandas at its first ``pa.array`` of a Python sequence: a core module that
    built one at import (a constant array) made every process pay for pandas."""
    loaded = modules_after("""
        import importlib, pkgutil
        import lake_assets
        for m in pkgutil.walk_packages(lake_assets.__path__, "lake_assets."):
            if not m.name.startswith(("lake_assets.spark", "lake_assets.defs", "lake_assets.demo")):
                importlib.import_module(m.name)
    """)
    assert "lake_assets.ops.stream" in loaded and "lake_assets.ops.compact.run" in loaded
    assert "pandas" not in loaded


@pytest.mark.parametrize("write_only", [False, True])
@pytest.mark.parametrize("primary_keys", [["k", "dt"], []])
def test_load_write_and_read_import_no_verb_modules(
    tmp_path: Path, write_only: bool, primary_keys: list[str]
) -> None:
    """`Catalog.get_table`, two writes (the second compacts inline unless write-only), filtered
    ``to_arrow`` reads, a ``to_batches`` and a plan import none of `VERB_MODULES`; a write-only
    writer imports no compaction module at all. A tuple filter (on a partition, a key, a float
    value; OR of ANDs, ``in``) is applied without Arrow's expression engine, whose module imports
    ``pyarrow.dataset``."""
    options = {"bucket": "2" if primary_keys else "-1"}
    if write_only:
        options["write-only"] = "true"
    Catalog(str(tmp_path)).create_database("db")
    Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=primary_keys, partition_keys=["dt"],
                                        options=options)
    loaded = modules_after(f"""
        import pyarrow as pa
        from lake_assets import Catalog
        t = Catalog({str(tmp_path)!r}).get_table("db.t")
        for v in (1.0, 2.0):
            t.write_arrow(pa.table({{"k": [1, 2], "dt": ["a", "b"], "v": [v, v]}}, schema=t.arrow_schema))
        assert t.to_arrow(filter=[("dt", "=", "a")]).num_rows == (1 if {bool(primary_keys)} else 2)
        assert t.to_arrow(filter=[("k", ">", 1), ("v", ">=", 2.0)]).num_rows == 1
        assert t.to_arrow(filter=[[("v", "in", [1.0])], [("dt", "not in", ["a"])]]).num_rows == (
            1 if {bool(primary_keys)} else 3)
        assert sum(b.num_rows for b in t.to_batches(batch_size=1)) == (2 if {bool(primary_keys)} else 4)
        assert len(t.plan()) == 2 and t.latest_snapshot() is not None and t.snapshots()
    """)
    assert "lake_assets.ops.write" in loaded and "lake_assets.ops.read" in loaded
    assert sorted(loaded & set(VERB_MODULES)) == []
    assert "fsspec" not in loaded  # a local warehouse needs no fsspec
    assert sorted(m for m in loaded if m.startswith(("pyarrow.dataset", "pyarrow.acero"))) == []
    if primary_keys and not write_only:
        assert "lake_assets.ops.compact.rewrite" in loaded  # the inline compaction ran
    if write_only:
        assert sorted(m for m in loaded if m.startswith("lake_assets.ops.compact")) == []


def test_an_expression_filter_imports_arrow_s_expression_engine_when_used(tmp_path: Path) -> None:
    """A read given a pyarrow Expression needs Arrow's engine (and so ``pyarrow.dataset``): it is
    imported by that read, not by a tuple filter's before it."""
    Catalog(str(tmp_path)).create_database("db")
    Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["k", "dt"], options={"bucket": "1"})
    loaded = modules_after(f"""
        import sys
        import pyarrow as pa
        import pyarrow.compute as pc
        from lake_assets import Catalog
        t = Catalog({str(tmp_path)!r}).get_table("db.t")
        t.write_arrow(pa.table({{"k": [1, 2], "dt": ["a", "b"], "v": [0.0, -0.0]}}, schema=t.arrow_schema))
        assert t.to_arrow(filter=[("v", "=", 0.0)]).num_rows == 1  # Double.compare: -0.0 is not 0.0
        assert "pyarrow.dataset" not in sys.modules
        assert t.to_arrow(filter=pc.field("v") == 0.0).num_rows == 2  # Arrow's semantics: IEEE
    """)
    assert "pyarrow.dataset" in loaded


def test_a_verb_imports_its_modules_when_called(tmp_path: Path) -> None:
    """The other side of the laziness: each verb still finds its operation (and only then loads it)."""
    Catalog(str(tmp_path)).create_database("db")
    Catalog(str(tmp_path)).create_table("db.t", SCHEMA, primary_keys=["k", "dt"], partition_keys=["dt"],
                                        options={"bucket": "1"})
    loaded = modules_after(f"""
        import sys
        import pyarrow as pa
        from lake_assets import Catalog
        t = Catalog({str(tmp_path)!r}).get_table("db.t")
        t.write_arrow(pa.table({{"k": [1], "dt": ["a"], "v": [1.0]}}, schema=t.arrow_schema))
        assert "lake_assets.ops.compact.run" not in sys.modules
        assert t.compact(full=True).snapshot_id is not None
        t.create_tag("x")
        assert t.read_changes(1, 2).num_rows == 0
        t.update_schema().add_column("w", pa.int32()).commit()
        assert t.expire_snapshots(dry_run=True) is not None and t.health().num_rows == 1
    """)
    for name in ("lake_assets.ops.compact.run", "lake_assets.ops.tagging", "lake_assets.ops.stream",
                 "lake_assets.ops.schema_change", "lake_assets.ops.expire", "lake_assets.ops.table_health"):
        assert name in loaded


def test_every_public_name_resolves_and_is_listed() -> None:
    assert sorted(lake_assets.__all__) == sorted(set(lake_assets.__all__))
    for name in lake_assets.__all__:
        value = getattr(lake_assets, name)
        assert value is not None
        if isinstance(value, type):
            assert value.__name__ == name
    assert set(lake_assets.__all__) <= set(dir(lake_assets))
    assert lake_assets.Table.__module__ == "lake_assets.table"
    assert issubclass(lake_assets.CommitStateUnknownError, lake_assets.LakeError)
    with pytest.raises(AttributeError, match="module 'lake_assets' has no attribute 'NoSuchName'"):
        lake_assets.NoSuchName  # noqa: B018


def test_public_names_resolve_in_a_fresh_interpreter() -> None:
    """``from lake_assets import X`` of every name and of a submodule, each in a fresh process (in
    this one they are loaded already)."""
    modules_after("""
        import lake_assets
        namespace = {}
        exec("from lake_assets import " + ", ".join(lake_assets.__all__), namespace)
        assert all(namespace[n] is getattr(lake_assets, n) for n in lake_assets.__all__)
        assert set(lake_assets.__all__) <= set(dir(lake_assets))
        from lake_assets import errors, table_support
        assert errors.LakeError is lake_assets.LakeError and table_support.Op
        import lake_assets.ops.compact as compact_pkg
        from lake_assets.ops.compact import compact, plan_compaction, memory
        assert compact.__module__ == "lake_assets.ops.compact.run" and memory.__name__.endswith(".memory")
        assert all(getattr(compact_pkg, n) is not None for n in compact_pkg.__all__)
        assert set(compact_pkg.__all__) <= set(dir(compact_pkg))
    """)


@pytest.mark.parametrize("url", ["/tmp/wh", "wh", "./a/b", "C:\\wh", "file:///tmp/wh", "file://wh", "memory://x/y",
                                 "s3://bucket/wh", "s3a://b/", "data:abc", "a://b", "weird:path", ""])
def test_urls_split_as_fsspec_splits_them(url: str) -> None:
    """The factory splits a warehouse URL without fsspec when it is a plain path: as fsspec would."""
    assert _split_protocol(url) == tuple(fsspec.core.split_protocol(url))

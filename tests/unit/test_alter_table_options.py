"""`Catalog.alter_table_options`: an ALTER of options, also the way to repair a table `get_table`
refuses for its options' values (what pypaimon-rust's ALTER lets through, e.g.
``snapshot.num-retained.max`` below the minimum). The repaired schema must pass every check, else
nothing is written; refusals about what the table stores stay refusals. Java 0.9 reading and writing
a repaired table: tests/differential/test_option_repair_java.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from lake_assets import Catalog
from lake_assets.errors import InvalidArgumentError, OptionError, SchemaError, UnsupportedFeatureError
from lake_assets.refusal import Op
from lake_assets.store.file_store import FileStore
from lake_assets.table_support import validate_open

SCHEMA = pa.schema([pa.field("id", pa.int64(), nullable=False), ("dt", pa.date32()), ("v", pa.string())])
ADVICE = "catalog.alter_table_options('db.t', set={...}, reset=[...])"


def _rows(ids: list[int]) -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "dt": pa.array([19000] * len(ids), pa.date32()),
                     "v": [f"v{i}" for i in ids]}, schema=SCHEMA)


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    cat = Catalog(str(tmp_path / "wh"))
    cat.create_database("db")
    t = cat.create_table("db.t", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"], options={"bucket": "1"})
    t.write_arrow(_rows([1, 2]))
    return cat


def _schema_dir(catalog: Catalog) -> Path:
    return Path(catalog.table_path("db.t")) / "schema"


def _carry(catalog: Catalog, **options: str) -> None:
    """Another engine's ALTER: the next schema file with these options added (no check)."""
    names = sorted(_schema_dir(catalog).iterdir(), key=lambda p: int(p.name.split("-")[1]))
    latest = json.loads(names[-1].read_text())
    latest["id"] += 1
    latest["options"] = {**latest["options"], **options}
    (_schema_dir(catalog) / f"schema-{latest['id']}").write_text(json.dumps(latest))


def _schema_files(catalog: Catalog) -> list[str]:
    return sorted(p.name for p in _schema_dir(catalog).iterdir())


# (options another engine stored, what the open refusal names, the repair)
REPAIRABLE: list[tuple[dict[str, str], str, dict[str, Any]]] = [
    ({"snapshot.num-retained.max": "5"}, "snapshot.num-retained.max=5 is below snapshot.num-retained.min=10",
     {"reset": ["snapshot.num-retained.max"]}),
    ({"snapshot.num-retained.max": "5"}, "snapshot.num-retained.max=5 is below",
     {"set": {"snapshot.num-retained.min": "5"}}),
    ({"snapshot.num-retained.max": "x"}, "'snapshot.num-retained.max': 'x' is not an integer",
     {"set": {"snapshot.num-retained.max": "20"}}),
    ({"snapshot.num-retained.min": "0"}, "must be at least 1", {"reset": ["snapshot.num-retained.min"]}),
    ({"snapshot.time-retained": "abc"}, "is not a duration", {"set": {"snapshot.time-retained": "2 h"}}),
    ({"num-sorted-run.stop-trigger": "1"}, "num-sorted-run.stop-trigger is below",
     {"reset": ["num-sorted-run.stop-trigger"]}),
    ({"changelog-producer": "foo"}, "'changelog-producer': 'foo' is not one of",
     {"set": {"changelog-producer": "input"}}),
    ({"fields.zz.ignore-retract": "true"}, "names column 'zz', which the table does not have",
     {"reset": ["fields.zz.ignore-retract"]}),
    # two problems and an unknown option (refused per operation, not at open): one ALTER repairs all
    ({"snapshot.num-retained.max": "x", "write-buffer-size": "-1", "paimon.future-knob": "1"}, "2 problems",
     {"reset": ["snapshot.num-retained.max", "write-buffer-size", "paimon.future-knob"]}),
]


@pytest.mark.parametrize(("carried", "problem", "repair"), REPAIRABLE,
                         ids=[next(iter(c)) + "-" + next(iter(r)) for c, _, r in REPAIRABLE])
def test_a_table_refused_for_its_options_is_repaired_here(catalog: Catalog, carried: dict[str, str], problem: str,
                                                          repair: dict[str, Any]) -> None:
    _carry(catalog, **carried)
    with pytest.raises(OptionError) as refused:
        catalog.get_table("db.t")
    message = str(refused.value)
    assert problem in message  # the refusal's own text comes first
    assert message.index(problem) < message.index("What you can do: ") < message.index(ADVICE)

    t = catalog.alter_table_options("db.t", **repair)
    assert t.schema.id == 2 and _schema_files(catalog) == ["schema-0", "schema-1", "schema-2"]
    for key in repair.get("reset", []):
        assert key not in t.schema.options
    for key, value in repair.get("set", {}).items():
        assert t.schema.options[key] == value
    # every operation runs again: read, write, compact, expire
    t.write_arrow(_rows([2, 3]))
    t.compact(full=True)
    t.expire_snapshots()
    again = catalog.get_table("db.t")
    assert sorted(again.to_arrow().column("id").to_pylist()) == [1, 2, 3]
    assert again.schema.options == t.schema.options


def test_a_repair_that_leaves_a_problem_names_it_and_writes_nothing(catalog: Catalog) -> None:
    _carry(catalog, **{"snapshot.num-retained.max": "5"})
    with pytest.raises(OptionError, match=r"^Cannot alter db\.t: .*snapshot\.num-retained\.max=7 is below "
                                          r"snapshot\.num-retained\.min=10"):
        catalog.alter_table_options("db.t", set={"snapshot.num-retained.max": "7"})
    # an option the ALTER itself adds is checked as create_table checks it
    with pytest.raises(OptionError, match=r"Unknown table option 'snapshot\.num-retained\.maks'"):
        catalog.alter_table_options("db.t", set={"snapshot.num-retained.maks": "20"},
                                    reset=["snapshot.num-retained.max"])
    # an unknown option the table carries must go too (the result passes every check)
    _carry(catalog, **{"paimon.future-knob": "1"})
    with pytest.raises(OptionError, match=r"Unknown table option 'paimon\.future-knob'"):
        catalog.alter_table_options("db.t", reset=["snapshot.num-retained.max"])
    assert _schema_files(catalog) == ["schema-0", "schema-1", "schema-2"]
    with pytest.raises(OptionError, match="is below"):
        catalog.get_table("db.t")


# (options another engine stored, the repair, the error the ALTER raises): the problem is an option an
# ALTER may not change, so the open refusal offers no ALTER and the ALTER is refused
NOT_REPAIRABLE: list[tuple[dict[str, str], dict[str, Any], type[Exception], str]] = [
    ({"merge-engine": "foo"}, {"set": {"merge-engine": "deduplicate"}}, SchemaError, "it is immutable"),
    ({"partial-update.remove-record-on-delete": "x"}, {"reset": ["partial-update.remove-record-on-delete"]},
     SchemaError, "it is immutable"),
    ({"bucket": "x"}, {"set": {"bucket": "2"}}, UnsupportedFeatureError, "needs a rescale"),
    # a malformed mutable option beside an immutable one: the refusal cannot point at an ALTER
    ({"merge-engine": "foo", "snapshot.num-retained.max": "5"}, {"reset": ["snapshot.num-retained.max"]},
     OptionError, "'merge-engine': 'foo' is not one of"),
]


@pytest.mark.parametrize(("carried", "repair", "error", "match"), NOT_REPAIRABLE,
                         ids=["merge-engine", "remove-record-on-delete", "bucket", "immutable-and-mutable"])
def test_problems_an_alter_cannot_change_stay_refusals(catalog: Catalog, carried: dict[str, str],
                                                        repair: dict[str, Any], error: type[Exception],
                                                        match: str) -> None:
    _carry(catalog, **carried)
    with pytest.raises(OptionError) as refused:
        catalog.get_table("db.t")
    assert "alter_table_options" not in str(refused.value)
    with pytest.raises(error, match=match):
        catalog.alter_table_options("db.t", **repair)
    assert _schema_files(catalog) == ["schema-0", "schema-1"]


@pytest.mark.parametrize(("key", "value"), [("manifest.format", "orc"), ("branch", "b1")])
def test_what_the_table_stores_refuses_the_alter_too(catalog: Catalog, key: str, value: str) -> None:
    """A table refused for what it stores (manifests in another format, a stored branch whose
    snapshots Paimon reads) is not opened for ALTER, even to remove the option."""
    _carry(catalog, **{key: value, "snapshot.num-retained.max": "5"})
    with pytest.raises(UnsupportedFeatureError, match=rf"^Cannot alter db\.t: option {key} = '{value}'"):
        catalog.alter_table_options("db.t", reset=[key, "snapshot.num-retained.max"])
    assert _schema_files(catalog) == ["schema-0", "schema-1"]


def test_partition_naming_of_unknown_value_is_not_changed_once_data_exists(catalog: Catalog,
                                                                           tmp_path: Path) -> None:
    """A DATE partition's directory name depends on partition.legacy-name: with a value that does not
    parse, how the written partitions were named is unknown, so setting it is refused; a STRING
    partition's names do not depend on it, so the same repair is allowed there."""
    _carry(catalog, **{"partition.legacy-name": "x"})
    with pytest.raises(OptionError, match="alter_table_options"):
        catalog.get_table("db.t")
    with pytest.raises(SchemaError, match=r"'partition\.legacy-name' of db\.t from 'x' to 'true': the table "
                                          r"already has data"):
        catalog.alter_table_options("db.t", set={"partition.legacy-name": "true"})
    strings = Catalog(str(tmp_path / "wh"))
    s = strings.create_table("db.s", pa.schema([pa.field("id", pa.int64(), nullable=False), ("p", pa.string())]),
                             primary_keys=["id", "p"], partition_keys=["p"], options={"bucket": "1"})
    s.write_arrow(pa.table({"id": pa.array([1], pa.int64()), "p": ["a"]}))
    s.update_schema().set_option("partition.legacy-name", "true").commit()
    schema_dir = Path(strings.table_path("db.s")) / "schema"
    latest = json.loads((schema_dir / "schema-1").read_text())
    latest["id"], latest["options"]["partition.legacy-name"] = 2, "x"
    (schema_dir / "schema-2").write_text(json.dumps(latest))
    fixed = strings.alter_table_options("db.s", set={"partition.legacy-name": "true"})
    assert fixed.to_arrow().column("p").to_pylist() == ["a"]


def test_on_a_healthy_table_it_writes_what_update_schema_writes(catalog: Catalog) -> None:
    twin = catalog.create_table("db.u", SCHEMA, primary_keys=["id", "dt"], partition_keys=["dt"],
                                options={"bucket": "1"})
    twin.update_schema().set_option("snapshot.num-retained.max", "50").commit()
    t = catalog.alter_table_options("db.t", set={"snapshot.num-retained.max": "50"})
    ours = json.loads((_schema_dir(catalog) / "schema-1").read_text())
    theirs = json.loads((Path(catalog.table_path("db.u")) / "schema" / "schema-1").read_text())
    assert ours.pop("timeMillis") > 0 and theirs.pop("timeMillis") > 0
    assert ours == theirs
    assert t.schema.options["snapshot.num-retained.max"] == "50"


def test_the_alter_handle_refuses_every_other_operation(catalog: Catalog) -> None:
    _carry(catalog, **{"snapshot.num-retained.max": "5"})
    store = FileStore("db.t", catalog.file_io, catalog.table_path("db.t"), for_alter=True)
    for op in Op:
        if op is Op.SCHEMA_CHANGE:
            store.require(op)
            continue
        with pytest.raises(UnsupportedFeatureError, match=rf"^Cannot {op.value} db\.t: it was opened for an ALTER"):
            store.require(op)


def test_the_refusal_without_a_table_name_is_unchanged(catalog: Catalog) -> None:
    _carry(catalog, **{"snapshot.num-retained.max": "5"})
    store = FileStore("db.t", catalog.file_io, catalog.table_path("db.t"), for_alter=True)
    with pytest.raises(OptionError) as plain:
        validate_open(store.schema)
    assert "What you can do" not in str(plain.value)


@pytest.mark.parametrize(("kwargs", "match"), [
    ({}, "no option to set or reset"),
    ({"set": {"a.b": "1"}, "reset": ["a.b"]}, r"options \['a.b'\] are both set and reset"),
    ({"reset": "snapshot.num-retained.max"}, "reset must be a list of option keys"),
    ({"reset": [""]}, "reset must be a list of option keys"),
    ({"set": ["snapshot.num-retained.max"]}, "set must be a dict"),
    ({"set": {"snapshot.num-retained.max": None}}, "must be text"),
])
def test_bad_arguments_change_nothing(catalog: Catalog, kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(InvalidArgumentError, match=match):
        catalog.alter_table_options("db.t", **kwargs)
    assert _schema_files(catalog) == ["schema-0"]


def test_a_branch_is_repaired_in_its_own_schema_directory(catalog: Catalog) -> None:
    """``db.t$branch_b1`` names the branch: its own schema files are repaired, main's stay."""
    catalog.get_table("db.t").create_branch("b1")
    branch_schemas = Path(catalog.table_path("db.t")) / "branch" / "branch-b1" / "schema"
    latest = json.loads((branch_schemas / "schema-0").read_text())
    latest["id"], latest["options"]["snapshot.num-retained.max"] = 1, "5"
    (branch_schemas / "schema-1").write_text(json.dumps(latest))
    with pytest.raises(OptionError, match=r"alter_table_options\('db\.t\$branch_b1'"):
        catalog.get_table("db.t$branch_b1")
    b = catalog.alter_table_options("db.t$branch_b1", reset=["snapshot.num-retained.max"])
    assert b.schema.id == 2 and sorted(p.name for p in branch_schemas.iterdir()) == ["schema-0", "schema-1",
                                                                                        "schema-2"]
    assert _schema_files(catalog) == ["schema-0"]
    b.write_arrow(_rows([7]))
    assert catalog.get_table("db.t$branch_b1").to_arrow().column("id").to_pylist() == [7]

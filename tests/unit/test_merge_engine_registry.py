"""The merge-engine registry: one place maps every ``merge-engine`` value to its function and properties."""

from __future__ import annotations

import ast
from pathlib import Path

import pyarrow as pa
import pytest

from lake_assets import Catalog, UnsupportedFeatureError
from lake_assets.lsm.merge_engine.aggregation import Aggregation
from lake_assets.lsm.merge_engine.deduplicate import Deduplicate
from lake_assets.lsm.merge_engine.first_row import FirstRow
from lake_assets.lsm.merge_engine.function import RowSelectingMergeFunction
from lake_assets.lsm.merge_engine.partial_update import PartialUpdate
from lake_assets.lsm.merge_engine.registry import DEFAULT_MERGE_ENGINE, MERGE_ENGINES, merge_engine
from lake_assets.options import IGNORE_DELETE_KEYS, CoreOptions
from lake_assets.spec.row_kind import RowKind

SCHEMA = pa.schema([pa.field("k", pa.int64(), nullable=False), ("v", pa.int64())])
FIELDS = [(f.name, f.type) for f in SCHEMA]
EXPECTED = {"deduplicate": Deduplicate, "partial-update": PartialUpdate, "aggregation": Aggregation,
            "first-row": FirstRow}
PACKAGE = Path(__file__).resolve().parents[2] / "lake_assets"
# Option definitions name the engines as accepted values and default (the option registry's job).
OPTION_DEFINITIONS = {PACKAGE / "options.py", PACKAGE / "option_rules.py"}


def test_registry_holds_the_four_paimon_engines() -> None:
    assert set(MERGE_ENGINES) == set(EXPECTED)
    assert DEFAULT_MERGE_ENGINE == "deduplicate"  # Paimon's default
    for name, cls in EXPECTED.items():
        fn = merge_engine(name).create(FIELDS, ["k"], CoreOptions({}))
        assert type(fn) is cls
        assert fn.ignore_delete is False
        # deduplicate and first-row pick whole rows: the merge drivers take their fast paths
        assert isinstance(fn, RowSelectingMergeFunction) == (name in ("deduplicate", "first-row"))


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("option", IGNORE_DELETE_KEYS)
def test_factories_read_ignore_delete_and_every_fallback_key(name: str, option: str) -> None:
    """Every engine's merge honours the key and all its fallback keys, as the writer does (Paimon's
    IGNORE_DELETE is one option for every engine); the key itself set to false wins."""
    assert merge_engine(name).create(FIELDS, ["k"], CoreOptions({option: "true"})).ignore_delete is True
    if option != "ignore-delete":
        both = CoreOptions({"ignore-delete": "false", option: "true"})
        assert merge_engine(name).create(FIELDS, ["k"], both).ignore_delete is False


def test_aggregation_merge_drops_retractions_under_a_fallback_key() -> None:
    """The writer drops -U/-D under ``partial-update.ignore-delete`` on any engine; so does the
    aggregation merge of retractions already in files (e.g. written before the option was set)."""
    rows = pa.table({"k": [1, 1, 2], "v": [5, 3, 4], "_SEQUENCE_NUMBER": pa.array([0, 1, 2], pa.int64()),
                     "_VALUE_KIND": pa.array([RowKind.INSERT, RowKind.DELETE, RowKind.DELETE], pa.int8())})
    fn = merge_engine("aggregation").create(FIELDS, ["k"], CoreOptions({
        "fields.v.aggregate-function": "sum", "partial-update.ignore-delete": "true"}))
    assert fn.merge(rows, ["k"]).select(["k", "v"]).to_pylist() == [{"k": 1, "v": 5}]


def test_unknown_engine_names_itself_and_the_supported_ones() -> None:
    with pytest.raises(UnsupportedFeatureError,
                       match=r"^Table db\.t: merge-engine 'magic' is not supported \(supported: aggregation, "):
        merge_engine("magic", "Table db.t")
    assert merge_engine(" First-Row ").name == "first-row"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_tables_take_their_merge_function_from_the_registry(catalog: Catalog, name: str) -> None:
    """Every registered engine is accepted by table creation and its table merges with its function."""
    t = catalog.create_table("db.t", SCHEMA, primary_keys=["k"], options={"bucket": "1", "merge-engine": name})
    assert type(t.store.merge_function()) is EXPECTED[name]
    plain = catalog.create_table("db.plain", SCHEMA, primary_keys=["k"], options={"bucket": "1"})
    assert type(plain.store.merge_function()) is EXPECTED[DEFAULT_MERGE_ENGINE]


def _engine_name_literals(path: Path) -> list[tuple[int, str]]:
    """String constants equal to an engine name, docstrings excluded."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and node.value.strip().lower() in MERGE_ENGINES and id(node) not in docstrings]


def test_no_code_outside_the_package_dispatches_on_an_engine_name() -> None:
    """Callers ask the registry for an engine's properties instead of comparing its name."""
    engine_package = PACKAGE / "lsm" / "merge_engine"
    found = {str(p.relative_to(PACKAGE)): hits for p in sorted(PACKAGE.rglob("*.py"))
             if engine_package not in p.parents and p not in OPTION_DEFINITIONS
             and (hits := _engine_name_literals(p))}
    assert found == {}

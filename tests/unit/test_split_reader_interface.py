"""Other modules use `SplitReader` through its public interface only (session 15 finding 4:
`_finish` and `_kept_rows` were called from four modules): its underscore methods stay free to
change with `ops/read.py` alone."""

from __future__ import annotations

import ast
from pathlib import Path

import lake_assets
from lake_assets.ops.read import SplitReader

ROOT = Path(lake_assets.__file__).parent


def _private_methods() -> set[str]:
    tree = ast.parse((ROOT / "ops" / "read.py").read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SplitReader")
    return {n.name for n in cls.body if isinstance(n, ast.FunctionDef)
            and n.name.startswith("_") and not n.name.startswith("__")}


def _is_reader(receiver: ast.expr) -> bool:
    text = ast.unparse(receiver)
    return text == "r" or text.lower().endswith("reader")


def test_no_other_module_calls_an_underscore_method_of_split_reader() -> None:
    private = _private_methods()
    assert private  # the check below looks for something
    used = []
    for path in sorted(ROOT.rglob("*.py")):
        if path == ROOT / "ops" / "read.py":
            continue
        text = path.read_text()
        if not any(f".{name}" in text for name in private):
            continue  # parsed only where a name occurs (parsing every module costs seconds)
        for node in ast.walk(ast.parse(text)):
            # a reader by the names modules give one (other classes have a `_layout` too)
            if isinstance(node, ast.Attribute) and node.attr in private and _is_reader(node.value):
                used.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
    assert used == []


def test_the_shared_methods_are_public_and_documented() -> None:
    for name in ("output_rows", "kept_rows", "read_file", "read_raw_file", "visible_files"):
        assert (getattr(SplitReader, name).__doc__ or "").strip(), name

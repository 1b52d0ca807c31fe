"""Every lazily exported name (`lake_assets.lazy_exports`) of every package that has them imports,
and its entry names the module that defines it: an entry left pointing at a module the name moved
out of (one that re-exports it, or none) fails here, as do the package's ``TYPE_CHECKING`` imports
and ``__all__`` when they disagree with its entries."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest

import lake_assets
from lake_assets.lazy_exports import DECLARED

ROOT = Path(lake_assets.__file__).parent


def _packages() -> list[str]:
    """The packages whose ``__init__`` declares lazy exports, found by their source."""
    found = []
    for init in sorted(ROOT.rglob("__init__.py")):
        if "lazy_exports(__name__" in init.read_text():
            parts = init.parent.relative_to(ROOT.parent).parts
            found.append(".".join(parts))
    return found


PACKAGES = _packages()


def _top_level_definitions(tree: ast.Module) -> set[str]:
    """Names a module binds at its top level (also inside top-level ``if`` / ``try`` blocks) by a
    definition or an assignment; imported names are not definitions."""
    names: set[str] = set()

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
                names.add(node.target.id)
            elif isinstance(node, ast.If):
                visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)

    visit(tree.body)
    return names


def test_the_packages_with_lazy_exports_are_found() -> None:
    assert {"lake_assets", "lake_assets.io", "lake_assets.spark", "lake_assets.ops.compact"} <= set(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES)
def test_every_lazy_export_imports_from_the_module_that_defines_it(package: str) -> None:
    module = importlib.import_module(package)
    exports = DECLARED[package]
    assert exports, package
    stale = {}
    for name, defining in sorted(exports.items()):
        source = importlib.import_module(defining)
        if name not in _top_level_definitions(ast.parse(inspect.getsource(source))):
            stale[name] = defining
            continue
        assert getattr(module, name) is getattr(source, name), name
    assert not stale, f"{package}: these entries name a module that does not define the name: {stale}"


@pytest.mark.parametrize("package", PACKAGES)
def test_type_checking_imports_and_all_agree_with_the_lazy_exports(package: str) -> None:
    """Type checkers see the ``TYPE_CHECKING`` imports, users see ``__all__``: both say what the
    lazy entries say."""
    module = importlib.import_module(package)
    exports = DECLARED[package]
    tree = ast.parse(inspect.getsource(module))
    checked: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom) and stmt.module is not None:
                    checked.update({alias.asname or alias.name: stmt.module for alias in stmt.names})
    assert checked == dict(exports)
    assert set(exports) <= set(module.__all__)

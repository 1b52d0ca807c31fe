"""The README's Python examples run as written, in order, in one namespace (a fresh directory)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_python_examples_run(tmp_path, monkeypatch, capsys) -> None:
    blocks = _python_blocks((REPO / "README.md").read_text())
    assert len(blocks) >= 2
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "readme"}
    for i, block in enumerate(blocks):
        # dont_inherit: as written, without this module's `from __future__ import annotations`
        # (Dagster resolves the README's parameter annotations at definition time)
        exec(compile(block, f"README.md python block {i + 1}", "exec", dont_inherit=True), namespace)
    assert (tmp_path / "example-warehouse" / "shop.db" / "orders").is_dir()


def test_core_demo_leaves_the_warehouse_of_make_demo_alone(tmp_path) -> None:
    (tmp_path / "warehouse").mkdir()
    (tmp_path / "warehouse" / "keep").write_text("make demo's data")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "lake_assets.demo.core"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "warehouse" / "keep").read_text() == "make demo's data"
    # an explicit warehouse that already has the table is refused, not wiped
    args = [sys.executable, "-m", "lake_assets.demo.core", "--warehouse", "wh"]
    assert subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, timeout=120).returncode == 0
    again = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert again.returncode != 0 and "already has shop.orders" in again.stderr

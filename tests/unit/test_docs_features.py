"""docs/features.md's Python blocks (the core API by example: the full form of README's core block,
deletion vectors, data evolution, two-phase commit, streams, lifecycle options) run as written, in
order, in one namespace (a fresh directory), as tests/unit/test_readme.py runs README's."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_readme import REPO, _python_blocks


def test_docs_features_python_examples_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    blocks = _python_blocks((REPO / "docs" / "features.md").read_text())
    assert len(blocks) == 6 and "shop.events" in blocks[-1]
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "features"}
    for i, block in enumerate(blocks):
        exec(compile(block, f"docs/features.md python block {i + 1}", "exec", dont_inherit=True), namespace)
    orders = namespace["orders"]
    # the two-phase commit's row landed once, under the schema the rollback kept (total, note)
    assert orders.to_arrow(filter=[("order_id", "=", 6)]).to_pylist() == [  # type: ignore[attr-defined]
        {"order_id": 6, "dt": "2024-01-03", "total": 60.0, "op": "+I", "note": "late"}]
    assert "changes" in capsys.readouterr().out  # the stream handed its changes to handle()

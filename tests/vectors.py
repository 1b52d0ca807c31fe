"""Where the shared pypaimon test vectors live (``/work/shared/paimon/vectors`` beside the repo)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS_DIR: Path = (Path(__file__).resolve().parents[1] / ".." / "shared" / "paimon" / "vectors").resolve()


def load_json(rel_path: str) -> Any:
    """Parse the JSON file at ``rel_path`` under VECTORS_DIR."""
    return json.loads((VECTORS_DIR / rel_path).read_text(encoding="utf-8"))

"""Where the pypaimon-written test vectors live (``tests/data/paimon_vectors``, in the repository)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

VECTORS_DIR: Path = Path(__file__).resolve().parent / "data" / "paimon_vectors"


def load_json(rel_path: str) -> Any:
    """Parse the JSON file at ``rel_path`` under VECTORS_DIR."""
    return json.loads((VECTORS_DIR / rel_path).read_text(encoding="utf-8"))

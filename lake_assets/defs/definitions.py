"""The code location: ``dagster dev -w workspace.yaml`` (or ``-m lake_assets.defs.definitions``).

Tables come from lake.yaml (``$LAKE_CONFIG`` overrides the path); a bad file fails the load with a
message naming the table entry and field.
"""

from lake_assets.defs.config import load_config
from lake_assets.defs.factory import build_definitions

defs = build_definitions(load_config())

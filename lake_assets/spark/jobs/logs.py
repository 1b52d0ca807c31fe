"""The jobs' logger: every line goes to stderr, so stdout carries only the JSON summary."""

from __future__ import annotations

import logging
import sys
from typing import TextIO

log = logging.getLogger("lake_assets.jobs")


class _JobsHandler(logging.StreamHandler[TextIO]):
    """The handler `setup_logging` installs (its class marks it, so it is installed once)."""


def setup_logging() -> None:
    """Log the jobs' INFO lines and above to stderr, once per process, not through the root logger."""
    if not any(isinstance(h, _JobsHandler) for h in log.handlers):
        handler = _JobsHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False

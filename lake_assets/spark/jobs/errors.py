"""Exit codes of the jobs and the classification of an error into one of them.

A job's body validates its input before `JobContext.start_run`; errors raised before that point
(phase ``"setup"``) are configuration errors, errors after it data, conflict or unexpected errors.
`UnsupportedFeatureError` is a configuration error in either phase: the table (or an argument) asks
for what lake_assets does not implement, the error says what the user can change, and running the
job again as it is fails the same way.
Errors raised on executors arrive as Java exceptions whose text carries the Python traceback, so
the lake_assets error inside is recovered from the text.
"""

from __future__ import annotations

import re
from typing import Literal

from lake_assets import errors as lake_errors
from lake_assets.errors import (
    CatalogError,
    CommitConflictError,
    LakeError,
    OptionError,
    SchemaError,
    UnsupportedFeatureError,
)

# The codes themselves are the core's single table (the Dagster resource reads it too).
from lake_assets.exit_codes import EXIT_CONFIG as EXIT_CONFIG
from lake_assets.exit_codes import EXIT_CONFLICT as EXIT_CONFLICT
from lake_assets.exit_codes import EXIT_DATA as EXIT_DATA
from lake_assets.exit_codes import EXIT_OK as EXIT_OK
from lake_assets.exit_codes import EXIT_UNEXPECTED as EXIT_UNEXPECTED

Phase = Literal["setup", "run"]


class UsageError(LakeError):
    """Bad command-line arguments or job configuration (exit code 2, whatever the phase)."""


_REMOTE_LAKE_ERROR = re.compile(r"lake_assets\.(?:errors|spark\.\w+)\.(\w+): ([^\n]*)")
# Spark error conditions that mean bad input data rather than a broken job.
_DATA_CONDITIONS = (
    "MALFORMED_RECORD_IN_PARSING", "CAST_INVALID_INPUT", "CAST_OVERFLOW", "USER_RAISED_EXCEPTION",
    "ARITHMETIC_OVERFLOW", "FAILED_READ_FILE", "CANNOT_PARSE_TIMESTAMP", "NOT_NULL_ASSERT_VIOLATION",
)
_CONFIG_CONDITIONS = ("PATH_NOT_FOUND", "TABLE_OR_VIEW_NOT_FOUND", "UNRESOLVED_COLUMN", "UNABLE_TO_INFER_SCHEMA")


def remote_lake_error(exc: BaseException) -> tuple[type[BaseException], str] | None:
    """The lake_assets error class and message inside an error raised on an executor (Python worker
    tracebacks travel as text inside the Java exception); None when there is none."""
    text = str(exc)
    for m in reversed(list(_REMOTE_LAKE_ERROR.finditer(text))):
        cls = getattr(lake_errors, m.group(1), None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            return cls, m.group(2).strip()
        if m.group(1).endswith("Error") or m.group(1).endswith("Failure"):
            return LakeError, m.group(2).strip()  # a LakeError subclass defined in the Spark layer
    return None


# The last line of a Python traceback: the exception (its module path kept: botocore.exceptions.X) and text.
_TRACEBACK = "Traceback (most recent call last):"
_RAISED_LINE = re.compile(
    r"^((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception|Failure|Exit|Interrupt))(?::[ \t]*(.*))?$", re.MULTILINE)


def worker_exception(exc: BaseException) -> str | None:
    """``Name: message`` of the exception a Python worker raised, from the traceback the Java exception
    carries as text (its first line, "An exception was thrown from the Python worker", names nothing);
    None without a traceback."""
    text = str(exc)
    at = text.rfind(_TRACEBACK)
    if at < 0:
        return None
    # the first line after the last traceback's frames (they are indented); Java's stack may follow
    raised = _RAISED_LINE.search(text, at + len(_TRACEBACK))
    if raised is None:
        return None
    name, detail = raised.group(1), (raised.group(2) or "").strip()
    return f"{name}: {detail}" if detail else name


def _spark_condition(exc: BaseException) -> str | None:
    get = getattr(exc, "getCondition", None) or getattr(exc, "getErrorClass", None)
    if get is not None:
        try:
            cond = get()
        except Exception:
            cond = None
        if cond:
            return str(cond)
    m = re.search(r"\[([A-Z][A-Z0-9_]+)(?:\.[A-Z0-9_]+)?\]", str(exc))
    return m.group(1) if m else None


def classify(exc: BaseException, phase: Phase) -> tuple[int, str]:
    """Exit code and a one-line message for an error raised in ``phase``."""
    if isinstance(exc, UsageError):
        return EXIT_CONFIG, str(exc)
    cls: type[BaseException] = type(exc)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else cls.__name__
    if not isinstance(exc, LakeError):
        remote = remote_lake_error(exc)
        if remote is not None:
            cls, message = remote
        else:
            message = worker_exception(exc) or message
    if issubclass(cls, CommitConflictError):
        return EXIT_CONFLICT, f"{cls.__name__}: {message}"
    if issubclass(cls, UnsupportedFeatureError):
        # a refusal (an option, file format or table kind lake_assets does not implement, also when
        # an executor meets it): the fix is the table's configuration or the job's arguments
        return EXIT_CONFIG, f"{cls.__name__}: {message}"
    config_errors = (CatalogError, OptionError, SchemaError)
    if phase == "setup" and issubclass(cls, config_errors):
        return EXIT_CONFIG, f"{cls.__name__}: {message}"
    if issubclass(cls, LakeError):
        return EXIT_DATA, f"{cls.__name__}: {message}"
    cond = _spark_condition(exc)
    if cond is not None and phase == "setup" and (cond in _CONFIG_CONDITIONS or type(exc).__name__ ==
                                                  "AnalysisException"):
        return EXIT_CONFIG, f"{cond}: {message}"
    if cond in _DATA_CONDITIONS:
        return EXIT_DATA, f"{cond}: {message}"
    return EXIT_UNEXPECTED, f"{cls.__name__}: {message}"

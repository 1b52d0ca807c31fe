"""The oracle build: missing pieces name themselves, CI turns them into failures, rebuilds are no-ops."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.java import build


def test_missing_jdk_is_named_and_fails_only_under_ci(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no java, no javac
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(build.JavaOracleUnavailable, match="`java` not found"):
        build.ensure_built()
    monkeypatch.setenv("CI", "true")
    assert build.main() == 1
    assert "error: Paimon Java oracle unavailable" in capsys.readouterr().err
    monkeypatch.setenv("CI", "false")
    assert build.main() == 0
    assert "differential tests will skip" in capsys.readouterr().err


def test_missing_hadoop_jars_are_named(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PAIMON_JAVA_HADOOP_JARS", str(tmp_path))
    with pytest.raises(build.JavaOracleUnavailable, match="hadoop-client-api-"):
        build._extra_jars()


def test_build_is_cached(java: object) -> None:
    # The session fixture built already: a second build compiles nothing and returns the same classes.
    first = build.ensure_built()
    classes = Path(first.classpath[0])
    stamp = (classes / ".complete").stat().st_mtime_ns
    again = build.ensure_built()
    assert again == first
    assert (classes / ".complete").stat().st_mtime_ns == stamp
    assert classes.name.startswith("classes-")

"""The unix-domain-socket Python worker transport is the default of sessions lake_assets builds."""

from __future__ import annotations

import pytest

from lake_assets.spark.session import session_conf

UDS = "spark.python.unix.domain.socket.enabled"


def test_sessions_default_to_the_unix_domain_socket_transport() -> None:
    assert session_conf()[UDS] == "true"
    assert session_conf({"spark.sql.shuffle.partitions": "2"})[UDS] == "true"


def test_a_callers_conf_turns_the_transport_off() -> None:
    assert session_conf({UDS: "false"})[UDS] == "false"


def test_the_shared_test_session_runs_on_it(spark) -> None:
    pytest.importorskip("pyspark")
    assert spark.sparkContext.getConf().get(UDS) == "true"
    # A Python worker round trip (Arrow UDF path) works over it.
    assert spark.range(10).rdd.map(lambda r: r.id * 2).sum() == 90

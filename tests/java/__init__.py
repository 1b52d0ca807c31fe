"""Paimon Java 0.9 as a test oracle: fetch + build (``build.py``) and a long-lived JVM client (``oracle.py``)."""

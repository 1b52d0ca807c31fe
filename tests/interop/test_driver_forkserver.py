"""The pypaimon drivers' fork server (driver_forkserver.py) gives each call what a fresh
``python -I script`` process gave it: its own exit code, output, environment, working directory
and module state, and a timeout that kills it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.interop.driver_server import DriverForkServer

SCRIPT = '''
import json, os, sys
import json as state  # a module every call shares with the server: changes must not carry over
seen = getattr(state, "_marker", None)
state._marker = sys.argv[1]
command = sys.argv[1]
if command == "fail":
    print("partial output")
    sys.exit("bad arguments: fail")
if command == "raise":
    raise ValueError("boom")
if command == "native":
    os.write(1, b"fd1 ")
    os.write(2, b"fd2")
    os._exit(3)
if command == "atexit":
    import atexit
    atexit.register(print, "goodbye")
if command == "interrupt":
    raise KeyboardInterrupt
if command == "thread":
    import threading, time
    threading.Thread(target=lambda: (time.sleep(0.2), print("joined", flush=True))).start()
if command == "hang":
    sys.stderr.write("started\\n")
    sys.stderr.flush()
    import time
    time.sleep(60)
print(json.dumps({"seen": seen, "env": os.environ.get("FORKSERVER_PROBE"), "cwd": os.getcwd(),
                  "argv": sys.argv[1:], "pid": os.getpid()}))
'''


@pytest.fixture
def server() -> Iterator[DriverForkServer]:
    srv = DriverForkServer(Path(sys.executable), preload=["json"])
    try:
        yield srv
    finally:
        srv.close()


@pytest.fixture
def script(tmp_path: Path) -> Path:
    path = tmp_path / "probe.py"
    path.write_text(SCRIPT)
    return path


def test_each_call_is_its_own_process_with_the_callers_env_and_cwd(server, script, tmp_path, monkeypatch):
    import json

    monkeypatch.chdir(tmp_path)
    first = json.loads(server.call(script, ["ok", "x y"], {"FORKSERVER_PROBE": "1"}, timeout=60)[1])
    other = tmp_path / "other"
    other.mkdir()
    monkeypatch.chdir(other)
    rc, out, err = server.call(script, ["ok"], {"FORKSERVER_PROBE": "2"}, timeout=60)
    second = json.loads(out)
    assert rc == 0 and err == ""
    assert first["argv"] == ["ok", "x y"] and first["env"] == "1" and first["cwd"] == str(tmp_path)
    assert second["env"] == "2" and second["cwd"] == str(other)
    assert first["seen"] is None and second["seen"] is None  # the first call's module state is gone
    assert first["pid"] != second["pid"] != os.getpid()


def test_exit_codes_and_output_as_a_process_gives_them(server, script):
    rc, out, err = server.call(script, ["fail"], {}, timeout=60)
    assert (rc, out, err) == (1, "partial output\n", "bad arguments: fail\n")
    rc, out, err = server.call(script, ["raise"], {}, timeout=60)
    assert rc == 1 and out == "" and err.startswith("Traceback") and err.endswith("ValueError: boom\n")
    assert server.call(script, ["native"], {}, timeout=60) == (3, "fd1 ", "fd2")
    rc, out, _ = server.call(script, ["atexit"], {}, timeout=60)  # the script's exit handlers run
    assert rc == 0 and out.endswith("}\ngoodbye\n")
    rc, out, _ = server.call(script, ["thread"], {}, timeout=60)  # its threads are joined first
    assert rc == 0 and out.endswith("}\njoined\n")
    rc, out, err = server.call(script, ["interrupt"], {}, timeout=60)  # Ctrl-C: SIGINT, as python ends
    assert rc == -2 and out == "" and err.startswith("Traceback") and err.endswith("KeyboardInterrupt\n")


def test_a_call_past_its_timeout_is_killed_and_the_next_call_works(server, script):
    with pytest.raises(TimeoutError, match="started"):
        server.call(script, ["hang"], {}, timeout=3)
    rc, out, _ = server.call(script, ["ok"], {}, timeout=60)
    assert rc == 0 and '"seen": null' in out

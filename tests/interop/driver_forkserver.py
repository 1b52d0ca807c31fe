"""A fork server for test worker scripts: import once, fork a fresh child per call.

The pypaimon drivers run under ``.venv-paimon/bin/python -I`` (that server never imports
``lake_assets``); the reliability suite's crash worker runs under the suite's own python with
``lake_assets`` preloaded (``tests/reliability/crash_run.py``). Starting a driver
costs about a second of CPU, nearly all of it importing pyarrow, pandas, polars and pypaimon, and
the interop, Spark and Dagster suites start it hundreds of times. This server imports those
modules once (``--preload``) and forks a child per request, the way ``multiprocessing``'s
forkserver with preloaded modules does: each call still runs in its own process, from the same
imported state a fresh interpreter would reach, so nothing one call does is seen by the next.
Only modules whose import starts no worker pool are preloaded (pyarrow's and pypaimon-rust's
pools start on first use, in the child).

Protocol: once the preloads are imported, one JSON line ``{"workdir"}`` (where the child's output
files are). Then one JSON request per line on stdin, ``{"script", "argv", "env", "cwd"}``; the child runs
``script`` as ``__main__`` with ``sys.argv = [script, *argv]``, the environment ``env`` and the
working directory ``cwd``, its stdout and stderr (file descriptors 1 and 2, so native output
too) captured to files; the reply is one JSON line ``{"rc", "stdout", "stderr"}`` once the child
has exited (``rc`` as ``subprocess`` reports it: negative for a signal). A child ends as the
interpreter ends a script: it joins the threads the script left running, runs the script's exit
handlers, and after an uncaught ``KeyboardInterrupt`` (traceback printed) kills itself with SIGINT,
so the caller sees -2 as from ``python script.py`` interrupted by Ctrl-C.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import json
import os
import runpy
import signal
import sys
import tempfile
import threading
import traceback
from typing import Any, NoReturn


def run_child(request: dict[str, Any], out_path: str, err_path: str) -> NoReturn:
    """In the forked child: become the driver process the request describes, then exit as it does.

    The child leaves with ``os._exit`` once its output is flushed, as both drivers do themselves,
    after the exit handlers the script registered. Those the server registered on import are
    dropped: polars' waits for its spill-cleanup thread, which the fork did not copy, forever."""
    atexit._clear()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # the protocol's stdin is the server's, never the driver's
    for fd, path in ((1, out_path), (2, err_path)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    sys.argv = [request["script"], *request["argv"]]
    if not sys.flags.safe_path:  # `python script` puts the script's folder first (-I and -P do not)
        sys.path[0] = os.path.dirname(os.path.abspath(request["script"]))
    code = 0
    interrupted = False
    try:
        runpy.run_path(request["script"], run_name="__main__")
    except SystemExit as exc:  # what the interpreter makes of it: None 0, an int itself, else printed and 1
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        traceback.print_exc()
        interrupted = True
    except BaseException:
        traceback.print_exc()
        code = 1
    # Py_FinalizeEx's order: wait for the non-daemon threads, then the exit handlers
    threading._shutdown()
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    if interrupted:  # as CPython exits after an uncaught KeyboardInterrupt: by SIGINT, default action
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def serve(preload: list[str]) -> None:
    """Answer requests until stdin closes."""
    for name in preload:
        with contextlib.suppress(ImportError):  # a driver that needs it reports it missing, as before
            importlib.import_module(name)
    workdir = tempfile.mkdtemp(prefix="pypaimon-forkserver-")
    out_path, err_path = os.path.join(workdir, "stdout"), os.path.join(workdir, "stderr")
    protocol_out = sys.stdout
    protocol_out.write(json.dumps({"workdir": workdir}) + "\n")  # ready
    protocol_out.flush()
    for line in sys.stdin:
        request = json.loads(line)
        protocol_out.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            run_child(request, out_path, err_path)
        _, status = os.waitpid(pid, 0)
        reply = {"rc": os.waitstatus_to_exitcode(status)}
        for key, path in (("stdout", out_path), ("stderr", err_path)):
            with open(path, encoding="utf-8", errors="replace") as fh:
                reply[key] = fh.read()
            os.unlink(path)
        protocol_out.write(json.dumps(reply) + "\n")
        protocol_out.flush()
    os.rmdir(workdir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--preload", action="append", default=[], help="a module to import before forking")
    serve(parser.parse_args().preload)


if __name__ == "__main__":
    main()

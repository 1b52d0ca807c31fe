"""A headless Chromium driven over the Chrome DevTools Protocol (plain JSON over a websocket).

Only what the UI test needs: open a page, wait until its text contains something, screenshot.
Every wait is bounded; `close` kills the browser's whole process group.
"""

from __future__ import annotations

import base64
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from websockets.sync.client import ClientConnection, connect

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-dev-shm-usage", "--window-size=1600,1000",
)


def find_chromium() -> str | None:
    return next((p for p in map(shutil.which, CHROMIUM_NAMES) if p), None)


class Browser:
    """One Chromium process and one page."""

    def __init__(self, binary: str, timeout: float = 30.0) -> None:
        self.profile = tempfile.mkdtemp(prefix="chromium-profile-")
        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-address=127.0.0.1",
             "--remote-debugging-port=0", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        self._ids = itertools.count(1)
        self.ws: ClientConnection | None = None
        try:
            port = self._devtools_port(timeout)
            self.ws = connect(self._page_websocket(port, timeout), max_size=64 * 2**20, open_timeout=timeout)
        except BaseException:
            self.close()
            raise

    def _devtools_port(self, timeout: float) -> int:
        marker = Path(self.profile) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode}")
            if marker.exists() and marker.read_text().strip():
                return int(marker.read_text().split()[0])
            time.sleep(0.1)
        raise TimeoutError("chromium did not open its DevTools port")

    def _page_websocket(self, port: int, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as resp:
                pages = [t for t in json.load(resp) if t.get("type") == "page"]
            if pages:
                return pages[0]["webSocketDebuggerUrl"]
            time.sleep(0.2)
        raise TimeoutError("chromium has no page target")

    def call(self, method: str, timeout: float = 30.0, **params: Any) -> dict[str, Any]:
        """Send one CDP command and wait (bounded) for its answer; events in between are skipped."""
        assert self.ws is not None
        msg_id = next(self._ids)
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no answer to {method}")
            reply = json.loads(self.ws.recv(timeout=remaining))
            if reply.get("id") == msg_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def open(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def text(self) -> str:
        result = self.call("Runtime.evaluate", expression="document.body ? document.body.innerText : ''",
                           returnByValue=True)
        return str(result.get("result", {}).get("value", ""))

    def wait_for_text(self, *needles: str, timeout: float = 60.0) -> str:
        """Poll the page text until it contains every needle; TimeoutError shows what it had."""
        deadline = time.monotonic() + timeout
        text = ""
        while time.monotonic() < deadline:
            text = self.text()
            if all(n in text for n in needles):
                return text
            time.sleep(0.5)
        missing = [n for n in needles if n not in text]
        raise TimeoutError(f"page never showed {missing}; it showed:\n{text[:3000]}")

    def click_text(self, text: str) -> bool:
        """Click the first element whose own text is ``text`` (buttons, tabs, rows)."""
        return bool(self._on_element(text, "el.click()"))

    def scroll_to_text(self, text: str) -> bool:
        """Scroll the first element whose own text is ``text`` to the top of the view."""
        return bool(self._on_element(text, "el.scrollIntoView({block: 'start'})"))

    def _on_element(self, text: str, action: str) -> object:
        script = (
            "(() => { const want = " + json.dumps(text) + ";"
            " const el = Array.from(document.querySelectorAll('*'))"
            ".find(e => e.children.length === 0 && e.textContent.trim() === want);"
            " if (!el) return false; " + action + "; return true; })()"
        )
        return self.call("Runtime.evaluate", expression=script, returnByValue=True)["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        if self.ws is not None:
            with contextlib.suppress(Exception):
                self.ws.close()
        kill_group(self.process)
        shutil.rmtree(self.profile, ignore_errors=True)


def kill_group(process: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM a process group started with start_new_session, then SIGKILL what is left."""
    if process.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue

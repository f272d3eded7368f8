"""Debian's Chromium, headless, for the browser tests (Swagger UI, the task console).

Both ways run Chromium with the same flags (``CHROMIUM_FLAGS``): no name resolution but 127.0.0.1, so a
page cannot fetch anything from a CDN or elsewhere.

- ``rendered_dom``: load a page once, let its timers run (virtual time) and answer the DOM (--dump-dom).
- ``Browser``: a page driven over the DevTools protocol on a pipe (--remote-debugging-pipe: JSON
  messages separated by NUL bytes on file descriptors 3 and 4), for pages that must be watched in real
  time (live updates), typed into, or photographed.
"""

from __future__ import annotations

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any, Callable

import pytest

#: Flags of every headless run.
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
]


def chromium_binary() -> str:
    """The path of Debian's chromium; fails the test when it is not installed."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Debian's chromium is not installed (scripts/test installs it: apt-get install chromium)")
    return chromium


def rendered_dom(url: str, profile: Path, virtual_time_budget_ms: int = 30_000) -> str:
    """The DOM Chromium has after running the page at ``url`` for the virtual time budget (--dump-dom)."""
    done = subprocess.run(
        [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
         f"--virtual-time-budget={virtual_time_budget_ms}", "--dump-dom", url],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, f"chromium exited {done.returncode}\n{done.stderr[-3000:]}"
    return done.stdout


def _wire_pipes(commands: int, answers: int) -> None:
    """In the child before exec: ``commands`` becomes descriptor 3, ``answers`` 4 (via copies above 9, so
    neither overwrites the other). dup2's copies are inheritable; Python's own descriptors are not (PEP
    446), so nothing else reaches Chromium although close_fds is off (it would close 3 and 4 after this)."""
    high_commands = fcntl.fcntl(commands, fcntl.F_DUPFD, 10)
    high_answers = fcntl.fcntl(answers, fcntl.F_DUPFD, 10)
    os.dup2(high_commands, 3)
    os.dup2(high_answers, 4)


class Browser:
    """One headless Chromium with one page, driven over the DevTools protocol on a pipe."""

    def __init__(self, profile: Path, width: int = 1280, height: int = 900) -> None:
        to_chromium_read, self._to_chromium = os.pipe()
        self._from_chromium, from_chromium_write = os.pipe()
        self._stderr = open(profile.parent / f"{profile.name}.chromium.log", "w")
        self.process = subprocess.Popen(
            [chromium_binary(), *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
             f"--window-size={width},{height}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=self._stderr, stderr=self._stderr,
            close_fds=False, preexec_fn=lambda: _wire_pipes(to_chromium_read, from_chromium_write),
        )
        os.close(to_chromium_read)
        os.close(from_chromium_write)
        self._buffer = b""
        self._next_id = 0
        self.exceptions: list[str] = []
        target = self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.command("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.command("Runtime.enable", session=True)
        self.command("Page.enable", session=True)
        self.command("Emulation.setDeviceMetricsOverride",
                     {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)

    def command(self, method: str, params: dict[str, Any] | None = None, *, session: bool = False,
                timeout: float = 30) -> dict[str, Any]:
        """Sends one DevTools command and answers its result; fails on an error answer."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self._session
        os.write(self._to_chromium, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            answer = self._receive(deadline, method)
            if answer.get("method") == "Runtime.exceptionThrown":
                details = answer["params"]["exceptionDetails"]
                self.exceptions.append(str(details.get("exception", {}).get("description") or details.get("text")))
            if answer.get("id") == self._next_id:
                assert "error" not in answer, f"{method}: {answer['error']}"
                return answer.get("result", {})

    def _receive(self, deadline: float, method: str) -> dict[str, Any]:
        """The next message from Chromium (an answer or an event)."""
        while b"\0" not in self._buffer:
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"chromium did not answer {method} in time\n{self.log_tail()}"
            readable, _, _ = select.select([self._from_chromium], [], [], min(remaining, 1.0))
            if readable:
                chunk = os.read(self._from_chromium, 1 << 20)
                assert chunk, f"chromium closed its DevTools pipe (exit {self.process.poll()})\n{self.log_tail()}"
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def open(self, url: str) -> None:
        """Navigates the page to ``url`` and waits until it has loaded."""
        self.command("Page.navigate", {"url": url}, session=True)
        self.wait_for(f"location.href === {json.dumps(url)} && document.readyState === 'complete'", f"{url} loaded")

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises are awaited); fails when it throws."""
        answer = self._evaluate(expression)
        assert "exceptionDetails" not in answer, f"{expression}: {answer['exceptionDetails']}"
        return answer["result"].get("value")

    def _evaluate(self, expression: str) -> dict[str, Any]:
        return self.command("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                            session=True)

    def wait_for(self, expression: str, what: str, timeout: float = 30,
                 describe: Callable[[], str] | None = None) -> Any:
        """Polls ``expression`` in the page until it is truthy (an exception counts as not yet: the page
        may still be loading); answers its value."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            answer = self._evaluate(expression)
            if "exceptionDetails" not in answer and answer["result"].get("value"):
                return answer["result"]["value"]
            time.sleep(0.1)
        raise AssertionError(f"the page did not show {what} within {timeout} s\n"
                             f"{describe() if describe else self.text()[:3000]}")

    def text(self) -> str:
        """The page's visible text."""
        return str(self.evaluate("document.body ? document.body.innerText : ''"))

    def html(self) -> str:
        """The page's DOM as markup."""
        return str(self.evaluate("document.documentElement.outerHTML"))

    def screenshot(self, path: Path) -> None:
        """A PNG of the whole page."""
        height = int(self.evaluate("Math.ceil(document.documentElement.scrollHeight)"))
        width = int(self.evaluate("Math.ceil(document.documentElement.scrollWidth)"))
        shot = self.command("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": width, "height": height, "scale": 1}}, session=True)
        path.write_bytes(base64.b64decode(shot["data"]))

    def log_tail(self) -> str:
        self._stderr.flush()
        return Path(self._stderr.name).read_text(errors="replace")[-3000:]

    def close(self) -> None:
        """Closes Chromium (and kills it if it does not exit)."""
        try:
            os.write(self._to_chromium, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)
        os.close(self._to_chromium)
        os.close(self._from_chromium)
        self._stderr.close()

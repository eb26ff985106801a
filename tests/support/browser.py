"""Headless Chromium driven over the DevTools protocol on a pipe, to measure pages as a
reader sees them: where an element is drawn at a given window width, and whether it is
inside the window.

``--remote-debugging-pipe`` makes Chromium read protocol messages (JSON, each ended by a NUL
byte) from its fd 3 and write its own to fd 4: no websocket, no library, no download, the
same Debian ``chromium`` the other browser test drives.

    with Browser(tmp_path) as browser:
        browser.open(page, width=390)
        boxes = browser.boxes({"verdict": "#verdict"})
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = (
    f"{CHROMIUM} is missing: the browser checks need Debian's Chromium. Install it with "
    "`apt-get update && apt-get install -y chromium` (as root; .ci/run does this on CI)."
)
#: Seconds any one protocol answer may take before the test fails instead of hanging.
TIMEOUT = 30.0


@dataclass(frozen=True)
class Box:
    """Where an element is drawn, in CSS pixels of the window (scrolled to the top)."""

    left: float
    right: float
    top: float
    bottom: float
    #: displayed, not hidden, with an area
    shown: bool
    #: partly hidden by an ancestor that clips or scrolls sideways
    clipped: bool
    #: the window's width without its scroll bar
    window: float
    text: str

    @property
    def width(self) -> float:
        return self.right - self.left

    @property
    def inside(self) -> bool:
        """Shown and wholly within the window's width (not off to the right, not clipped
        by a scrolling box): what a reader sees without scrolling sideways."""
        return (
            self.shown
            and not self.clipped
            and self.left >= -0.5
            and self.right <= self.window + 0.5
        )


# For each name, the first element the selector matches: its box, and whether an ancestor
# that clips or scrolls sideways hides part of it (a wide table in a scrolling box).
_MEASURE = """
(() => {
  const wanted = %s;
  const out = {};
  const win = document.documentElement.clientWidth;
  for (const [name, selector] of Object.entries(wanted)) {
    const el = document.querySelector(selector);
    if (!el) { out[name] = null; continue; }
    const r = el.getBoundingClientRect();
    let clipped = false;
    for (let a = el.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX === 'visible') continue;
      const c = a.getBoundingClientRect();
      if (r.right > c.right + 0.5 || r.left < c.left - 0.5) clipped = true;
    }
    const style = getComputedStyle(el);
    out[name] = {
      left: r.left, right: r.right,
      top: r.top + window.scrollY, bottom: r.bottom + window.scrollY,
      shown: style.display !== 'none' && style.visibility !== 'hidden'
        && r.width > 0 && r.height > 0,
      clipped: clipped, window: win, text: (el.textContent || '').trim().slice(0, 200),
    };
  }
  return JSON.stringify(out);
})()
"""


class Browser:
    """One headless Chromium with one page; see the module docstring."""

    def __init__(self, folder: Path) -> None:
        if not Path(CHROMIUM).exists():
            raise AssertionError(INSTALL_HINT)
        profile = folder / "chromium-profile"
        profile.mkdir(parents=True, exist_ok=True)
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def at_3_and_4() -> None:  # in the child, before exec: the pipe ends Chromium expects
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.process = subprocess.Popen(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--disable-dev-shm-usage",
                "--hide-scrollbars",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            pass_fds=(3, 4),
            preexec_fn=at_3_and_4,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._ids = 0
        self._events: list[dict[str, Any]] = []
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        self.call("Page.enable", session=self.session)

    # -- the protocol ---------------------------------------------------------------------
    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._from_chrome], [], [], max(left, 0))
            if not ready:
                raise AssertionError("Chromium did not answer within the time allowed")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise AssertionError("Chromium closed its protocol pipe (did it crash?)")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def call(
        self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None
    ) -> dict[str, Any]:
        """Send one command and return its result (events that arrive meanwhile are kept)."""
        self._ids += 1
        message: dict[str, Any] = {"id": self._ids, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self._send(message)
        deadline = time.monotonic() + TIMEOUT
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._ids:
                if "error" in reply:
                    raise AssertionError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result
            self._events.append(reply)

    def _wait_for(self, event: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while True:
            for i, seen in enumerate(self._events):
                if seen.get("method") == event and seen.get("sessionId") == self.session:
                    del self._events[: i + 1]
                    return
            self._events.append(self._receive(deadline))

    # -- what tests use -------------------------------------------------------------------
    def open(self, page: Path, *, width: int, height: int = 900) -> None:
        """Show ``page`` in a window ``width`` CSS pixels wide, as a phone (width <= 480:
        the page's viewport meta is honoured) or a desktop browser would."""
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width <= 480},
            session=self.session,
        )
        self._events.clear()
        self.call("Page.navigate", {"url": page.resolve().as_uri()}, session=self.session)
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True},
            session=self.session,
        )
        if "exceptionDetails" in result:
            raise AssertionError(f"the page's script failed: {result['exceptionDetails']}")
        return result["result"].get("value")

    def boxes(self, selectors: dict[str, str]) -> dict[str, Box | None]:
        """Each selector's first element as drawn (None: no element matches)."""
        raw = json.loads(self.evaluate(_MEASURE % json.dumps(selectors)))
        return {name: Box(**box) if box else None for name, box in raw.items()}

    def close(self) -> None:
        try:
            self._send({"id": self._ids + 1, "method": "Browser.close", "params": {}})
        except OSError:
            pass  # already gone
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

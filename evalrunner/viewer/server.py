"""Serve the viewer on the loopback address and open the browser on it.

The socket is bound here (127.0.0.1 only, port 0 for any free port) before uvicorn starts,
so the address printed and opened is the one actually served, and a busy port is a clear
error instead of a traceback.
"""

from __future__ import annotations

import socket
import threading
import webbrowser
from collections.abc import Callable
from typing import TYPE_CHECKING

from evalrunner.errors import ConfigError
from evalrunner.viewer.source import Source

if TYPE_CHECKING:
    from evalrunner.viewer.live import SuiteQuestions

HOST = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening socket on 127.0.0.1:``port`` (0: any free port)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind((HOST, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(
            f"cannot listen on {HOST}:{port} ({exc.strerror}); give another --port, or "
            "--port 0 for any free one"
        ) from None
    sock.listen(128)
    return sock


def serve(
    source: Source,
    *,
    port: int,
    open_browser: bool,
    path: str = "/",
    announce: Callable[[str], None] = print,
) -> None:
    """Serve until interrupted (Ctrl-C)."""
    import uvicorn

    from evalrunner.viewer.app import create_app

    sock = bind(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}{path}"
    config = uvicorn.Config(
        create_app(source), log_level="warning", lifespan="off", access_log=False
    )
    server = uvicorn.Server(config)
    announce(url)
    if open_browser:
        threading.Timer(0.5, webbrowser.open, args=(url,)).start()
    server.run(sockets=[sock])


class BackgroundViewer:
    """The viewer served from a thread of this process (``evalrunner run --view``): it shows
    the run while it goes, and keeps serving after it until :meth:`wait` is interrupted."""

    def __init__(
        self,
        source: Source,
        *,
        port: int = 0,
        open_browser: bool = True,
        questions: SuiteQuestions | None = None,
    ) -> None:
        import time

        import uvicorn

        from evalrunner.viewer.app import create_app

        sock = bind(port)
        self.url = f"http://{HOST}:{sock.getsockname()[1]}/"
        self._server = uvicorn.Server(
            uvicorn.Config(
                create_app(source, questions=questions), log_level="warning", lifespan="off"
            )
        )
        # uvicorn installs its signal handlers only on the main thread; from this one it
        # leaves Ctrl-C to the run, whose own stop handling stays in charge
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="viewer", daemon=True
        )
        self._thread.start()
        for _ in range(200):
            if self._server.started:
                break
            time.sleep(0.025)
        if open_browser:
            webbrowser.open(self.url)

    def wait(self) -> None:
        """Serve until Ctrl-C (KeyboardInterrupt), then stop."""
        try:
            while self._thread.is_alive():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            self.stop()

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)

"""An ASGI app served by a real uvicorn on a free loopback port, in a background thread.

Shared by the gate, proxy and integration tests: they talk real HTTP to it.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Self

import uvicorn


class ServedApp:
    """Bind a loopback socket, serve ``app`` on it, and stop cleanly."""

    name = "server"

    def __init__(self, app: Any, access_log: bool = True) -> None:
        self.app = app
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so,
        # and without it Nagle plus delayed ACKs add 40 ms to every response.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=1,
            access_log=access_log,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def start(self) -> Self:
        """Start serving; raise if the server is not up within 10 s."""
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError(f"{self.name} did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Ask uvicorn to exit, wait for the thread, release the socket."""
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()

"""Proxy fixtures: the proxy served by uvicorn on a free loopback port in a thread, in
front of the OpenAI double, and a store holding a template built from the τ-bench corpus."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from tests.proxy.stores import airline_store, private_copy

from warmstart.proxy import ProxySettings, create_app
from warmstart.proxy.app import Proxy


class RunningProxy:
    """A proxy app served by uvicorn in a background thread, on its own loopback port."""

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        self.app = create_app(settings)
        # IPPROTO_TCP explicitly: asyncio sets TCP_NODELAY only on sockets that say so.
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.base_url = f"{self.url}/v1"
        config = uvicorn.Config(
            self.app, log_level="warning", lifespan="on", timeout_graceful_shutdown=1
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def proxy(self) -> Proxy:
        return self.app.state.proxy  # type: ignore[no-any-return]

    def start(self) -> RunningProxy:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("proxy server did not start")
            time.sleep(0.01)
        return self

    def flush(self) -> None:
        """Wait for the proxy's background store writes."""
        assert self.proxy.flush(10), "store writes did not finish in 10 s"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


@pytest.fixture
def start_proxy() -> Iterator[Callable[..., RunningProxy]]:
    """Start proxies with given settings; all are stopped after the test."""
    running: list[RunningProxy] = []

    def start(**values: Any) -> RunningProxy:
        proxy = RunningProxy(ProxySettings(**values)).start()
        running.append(proxy)
        return proxy

    yield start
    for proxy in running:
        proxy.stop()


@pytest.fixture
def store_url(tmp_path_factory: pytest.TempPathFactory, tau_sample: Path, tmp_path: Path) -> str:
    """A private copy of a store holding template ``airline`` (τ-bench corpus)."""
    return private_copy(airline_store(tmp_path_factory, tau_sample), tmp_path / "store")

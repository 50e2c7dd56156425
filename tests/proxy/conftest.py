"""Proxy fixtures: the proxy served by uvicorn on a free loopback port in a thread, in
front of the OpenAI double, and a store holding a template built from the τ-bench corpus."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.proxy.stores import airline_store, private_copy
from tests.support.served import ServedApp

from warmstart.proxy import ProxySettings, create_app
from warmstart.proxy.app import Proxy


class RunningProxy(ServedApp):
    """A proxy app served by uvicorn in a background thread, on its own loopback port."""

    name = "proxy server"

    def __init__(self, settings: ProxySettings) -> None:
        self.settings = settings
        super().__init__(create_app(settings))
        self.base_url = f"{self.url}/v1"

    @property
    def proxy(self) -> Proxy:
        return self.app.state.proxy  # type: ignore[no-any-return]

    def flush(self) -> None:
        """Wait for the proxy's background store writes."""
        assert self.proxy.flush(10), "store writes did not finish in 10 s"


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

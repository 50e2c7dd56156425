"""Pytest fixtures around the OpenAI double, registered for the whole suite with
``pytest_plugins = ["tests.support.fixtures"]`` in ``tests/conftest.py``.

* ``openai_double``: a fresh, started :class:`~tests.support.openai_double.OpenAIDouble`
  per test (its own free port, empty script), stopped at teardown.
* ``closed_base_url``: an OpenAI base URL on a loopback port nothing listens on, for
  "endpoint down" tests (connection refused, immediately, without a timeout).
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest
from tests.support.openai_double import OpenAIDouble


@pytest.fixture
def openai_double() -> Iterator[OpenAIDouble]:
    """A started OpenAI double on a free loopback port; stopped after the test."""
    double = OpenAIDouble().start()
    try:
        yield double
    finally:
        double.stop()


@pytest.fixture
def closed_base_url() -> str:
    """``http://127.0.0.1:<port>/v1`` where nothing listens (the port was just freed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"

"""An OpenAI-compatible proxy that gives conversations a warm start, records and A/B tests.

Point an agent's base URL at ``warmstart proxy --upstream URL`` and new conversations
get a template's warm history after their system messages; ``--record`` writes every
conversation to the store and ``--ab P`` splits traffic into warm and cold arms. See
``docs/proxy.md``.

The server pieces (Starlette, httpx) load only when :func:`create_app` or :func:`serve`
is called, so :mod:`warmstart.proxy.warm` stays importable in a lean environment (the
Hermes plugin plans its warm histories with it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from warmstart.proxy.settings import ProxySettings

if TYPE_CHECKING:
    from starlette.applications import Starlette


def create_app(settings: ProxySettings) -> Starlette:
    """The proxy as an ASGI app (``app.state.proxy`` holds its state)."""
    from warmstart.proxy.app import create_app as _create_app

    return _create_app(settings)


def serve(settings: ProxySettings, log_level: str = "info") -> None:
    """Serve the proxy under uvicorn until interrupted."""
    from warmstart.proxy.server import serve as _serve

    _serve(settings, log_level)


def __getattr__(name: str) -> Any:
    if name in ("WarmPlan", "WarmPlanner"):
        from warmstart.proxy import warm

        return getattr(warm, name)
    raise AttributeError(name)


__all__ = ["ProxySettings", "WarmPlan", "WarmPlanner", "create_app", "serve"]

"""The human approval gate: agents ask before high-risk actions, people decide.

``create_app(settings)`` builds the server; :class:`GateClient` and
:func:`requires_approval` are what agents use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from warmstart.gate.client import Decision, GateClient, requires_approval
from warmstart.gate.settings import GateSettings

if TYPE_CHECKING:
    from fastapi import FastAPI


def create_app(settings: GateSettings | None = None) -> FastAPI:
    """Build the gate's FastAPI app (imported lazily: clients need no server deps)."""
    from warmstart.gate.app import create_app as _create_app

    return _create_app(settings)


__all__ = ["Decision", "GateClient", "GateSettings", "create_app", "requires_approval"]

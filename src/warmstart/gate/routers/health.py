"""``/health``: liveness and a little state (public)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from warmstart import __version__
from warmstart.gate.deps import Service
from warmstart.gate.notify import describe
from warmstart.gate.schemas import HealthOut

router = APIRouter(tags=["health"])


@router.get("/health", response_model=HealthOut)
async def health(service: Service) -> dict[str, Any]:
    """Whether the gate is up, which database it uses and how many requests wait."""
    pending = await service.run(service.store.count_pending)
    return {
        "status": "ok",
        "version": __version__,
        "database": "sqlite" if service.db.is_sqlite else "postgresql",
        "auth": service.credentials.enabled,
        "pending": pending,
        "channels": describe(service.settings.notify),
    }

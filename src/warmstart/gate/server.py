"""Running the gate under uvicorn, refusing to expose an unauthenticated gate."""

from __future__ import annotations

import logging

from warmstart.gate.settings import LOOPBACK_HOSTS, GateSettings
from warmstart.logs import configure_service_logging

log = logging.getLogger("warmstart.gate")


def effective_settings(settings: GateSettings) -> tuple[GateSettings, str | None]:
    """Force loopback when no token is configured; returns the settings and a warning."""
    if settings.tokens_configured:
        return settings, None
    if settings.host not in LOOPBACK_HOSTS:
        warning = (
            f"no tokens configured: binding to 127.0.0.1 instead of {settings.host}; set "
            "WARMSTART_GATE_REQUESTER_TOKENS and WARMSTART_GATE_APPROVER_TOKENS to serve others"
        )
        return settings.model_copy(update={"host": "127.0.0.1"}), warning
    return settings, (
        "no tokens configured: listening on loopback only; anyone on this machine can "
        "submit and approve"
    )


def configure_logging(level: str = "info") -> None:
    """Gate log lines to stderr."""
    configure_service_logging("gate", level)


def serve(settings: GateSettings, log_level: str = "info", access_log: bool = False) -> None:
    """Serve the gate until interrupted."""
    import uvicorn

    from warmstart.gate.app import create_app

    configure_logging(log_level)
    settings, warning = effective_settings(settings)
    if warning:
        log.warning(warning)
    app = create_app(settings)
    log.info("approval gate at %s (approver page %s/ui)", settings.base_url(), settings.base_url())
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        access_log=access_log,
        timeout_graceful_shutdown=3,
        lifespan="on",
    )
    uvicorn.Server(config).run()

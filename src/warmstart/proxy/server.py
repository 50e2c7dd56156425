"""Running the proxy under uvicorn."""

from __future__ import annotations

import logging

from warmstart.logs import configure_service_logging
from warmstart.proxy.settings import ProxySettings

log = logging.getLogger("warmstart.proxy")


def configure_logging(level: str = "info") -> None:
    """Proxy log lines to stderr (never a request header: credentials pass through here)."""
    configure_service_logging("proxy", level)


def serve(settings: ProxySettings, log_level: str = "info") -> None:
    """Serve the proxy until interrupted; a configured template must exist."""
    import uvicorn

    from warmstart.proxy.app import create_app
    from warmstart.store import safe_url

    app = create_app(settings)
    app.state.proxy.check()
    configure_logging(log_level)
    mode = (
        f"template {settings.template!r}"
        if settings.template
        else ("auto template choice" if settings.auto else "no injection")
    )
    extras = []
    if settings.record:
        extras.append("recording to " + safe_url(settings.db_url or _default_db()))
    if settings.ab is not None:
        extras.append(f"A/B with {settings.ab:.0%} warm")
    log.info(
        "proxy on http://%s:%s/v1 -> %s (%s%s)",
        settings.host,
        settings.port,
        settings.upstream,
        mode,
        "; " + "; ".join(extras) if extras else "",
    )
    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=5,
        server_header=False,
        date_header=True,
    )
    uvicorn.Server(config).run()


def _default_db() -> str:
    from warmstart.paths import default_db_url

    return default_db_url()

"""Log set-up for warmstart's long-running services (gate, proxy): one line each to stderr."""

from __future__ import annotations

import logging
import sys


def configure_service_logging(service: str, level: str = "info") -> None:
    """Send ``warmstart.<service>`` records to stderr as ``time service LEVEL message``."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"%(asctime)s {service} %(levelname)s %(message)s"))
    logger = logging.getLogger(f"warmstart.{service}")
    logger.handlers[:] = [handler]
    logger.setLevel(level.upper())
    logger.propagate = False

"""The background expiry sweeper: pending requests past their deadline become expired."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

log = logging.getLogger("warmstart.gate")


async def sweep_forever(sweep: Callable[[], Awaitable[int]], interval: float) -> None:
    """Call ``sweep`` every ``interval`` seconds until cancelled; errors are logged."""
    while True:
        try:
            await sweep()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("expiry sweep failed; retrying")
        await asyncio.sleep(interval)

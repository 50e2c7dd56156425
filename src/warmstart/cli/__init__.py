"""The ``warmstart`` command: one Typer app, one module per command group.

Each module parses, calls the library and renders. Library errors become one red
line and a non-zero exit; ``WARMSTART_RAISE_ERRORS=1`` shows the traceback instead.
"""

from __future__ import annotations

import os
import sys

from sqlalchemy.exc import SQLAlchemyError

# Command groups register themselves on import.
from warmstart.cli import analyze as _analyze  # noqa: F401
from warmstart.cli import demo as _demo  # noqa: F401
from warmstart.cli import eval as _eval  # noqa: F401
from warmstart.cli import gate as _gate  # noqa: F401
from warmstart.cli import ingest as _ingest  # noqa: F401
from warmstart.cli import inject as _inject  # noqa: F401
from warmstart.cli import mcp as _mcp  # noqa: F401
from warmstart.cli import proxy as _proxy  # noqa: F401
from warmstart.cli import review as _review  # noqa: F401
from warmstart.cli import sessions as _sessions  # noqa: F401
from warmstart.cli import templates as _templates  # noqa: F401
from warmstart.cli.app import app, console_err
from warmstart.errors import WarmstartError

__all__ = ["app", "main"]


def main() -> None:
    """Entry point of the console script.

    Click's standalone mode handles usage errors (a short message, exit 2); library
    errors are turned into one red line and exit 1 here.
    """
    if os.environ.get("WARMSTART_RAISE_ERRORS"):
        app()
        return
    try:
        app()
    except WarmstartError as exc:
        console_err.print(f"[red]error:[/red] {exc}", highlight=False)
        sys.exit(1)
    except SQLAlchemyError as exc:  # a store problem the library did not name itself
        first = str(getattr(exc, "orig", None) or exc).splitlines()[0]
        console_err.print(f"[red]database error:[/red] {first}", highlight=False)
        sys.exit(1)
    except KeyboardInterrupt:
        console_err.print("[red]interrupted[/red]")
        sys.exit(130)

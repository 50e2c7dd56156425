"""The root Typer application and the consoles every command group shares."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(
    name="warmstart",
    help="Give tool-calling agents experience: ingest past sessions, mine what worked, "
    "and inject a warm history into new sessions.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

console = Console(soft_wrap=True)
console_err = Console(stderr=True, soft_wrap=True)
if not console.is_terminal:
    # Piped output is read by people in files and CI logs: don't squeeze tables to 80.
    console.width = 160

"""`warmstart gate`: the human approval gate (serve, pending, approve, deny, audit)."""

from __future__ import annotations

import typer

from warmstart.cli.app import app

gate_app = typer.Typer(help="Human approval gate for high-risk agent actions.", no_args_is_help=True)
app.add_typer(gate_app, name="gate")

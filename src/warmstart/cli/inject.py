"""`warmstart inject`: print a warm history for a task."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from warmstart.cli.app import app, console_err
from warmstart.cli.options import DbOption
from warmstart.inject import ADDENDUM, FORMATS
from warmstart.templates import warm_history


@app.command()
def inject(
    name: Annotated[str, typer.Argument(help="Template name.")],
    task: Annotated[
        str | None, typer.Option(help="The task text; ranks examples by relevance.")
    ] = None,
    budget: Annotated[
        int | None, typer.Option(help="Token budget (default: the template's).")
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", help=f"Output format: {', '.join(FORMATS)}.")
    ] = "openai",
    no_addendum: Annotated[
        bool, typer.Option("--no-addendum", help="Leave out the explanatory system message.")
    ] = False,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File (default stdout).")
    ] = None,
    db: DbOption = None,
) -> None:
    """Print the warm conversation history of a template as JSON (validated)."""
    if fmt not in FORMATS:
        raise typer.BadParameter(f"choose one of {', '.join(FORMATS)}", param_hint="--format")
    out = warm_history(
        name,
        task=task,
        budget=budget,
        db=db,
        fmt=fmt,
        addendum=None if no_addendum else ADDENDUM,
        context="cli",
    )
    text = json.dumps(out, indent=2, ensure_ascii=False)
    if output:
        output.write_text(text + "\n", encoding="utf-8")
        console_err.print(f"wrote {output}", highlight=False)
    else:
        sys.stdout.write(text + "\n")

"""`warmstart ingest`: read session logs into the store."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from warmstart.cli.app import app, console, console_err
from warmstart.cli.options import DbOption, JsonFlag, print_json
from warmstart.errors import SourceError
from warmstart.ingestion import ingest as run_ingest
from warmstart.sources import source_names
from warmstart.sources.base import IngestReport


@app.command()
def ingest(
    paths: Annotated[
        list[Path], typer.Argument(help="Hermes state.db, OpenAI chat .jsonl, or τ-bench .json.")
    ],
    source: Annotated[
        str | None,
        typer.Option(help=f"Force a source instead of detecting it ({', '.join(source_names())})."),
    ] = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Ingest agent session logs into the store (re-ingesting adds only what is new)."""
    reports: list[IngestReport] = []
    failed: list[str] = []
    show = sys.stderr.isatty() and not as_json
    for path in paths:
        try:
            with Progress(
                SpinnerColumn(),
                TextColumn("[bold]{task.description}"),
                TextColumn("{task.fields[stats]}"),
                TimeElapsedColumn(),
                console=console_err,
                disable=not show,
                transient=True,
            ) as bar:
                task = bar.add_task(f"ingesting {path.name}", total=None, stats="")

                def tick(r: IngestReport, task: object = task, bar: Progress = bar) -> None:
                    bar.update(
                        task,  # type: ignore[arg-type]
                        stats=f"{r.added + r.updated} sessions, {r.calls} calls",
                    )

                report = run_ingest(path, db=db, source=source, progress=tick)
        except SourceError as exc:
            failed.append(str(exc))
            console_err.print(f"[red]error:[/red] {exc}", highlight=False)
            continue
        reports.append(report)
        if not as_json:
            _print_report(report)
    if as_json:
        print_json({"reports": [r.as_dict() for r in reports], "errors": failed})
    if not any(r.read_anything for r in reports):
        raise typer.Exit(1)


def _print_report(r: IngestReport) -> None:
    console.print(
        f"[bold]{r.path}[/bold] ({r.source}): {r.added} sessions added, {r.updated} updated, "
        f"{r.unchanged} unchanged; {r.messages:,} messages, {r.calls:,} tool calls, "
        f"{r.failures:,} judged failed",
        highlight=False,
    )
    skipped = sum(r.skipped.values())
    if skipped:
        console.print(f"[yellow]skipped {skipped} item(s):[/yellow]", highlight=False)
        for reason, n in r.skipped.most_common():
            console.print(f"  {n:>6}  {reason}", highlight=False)
        for where in r.examples[:5]:
            console.print(f"          e.g. {where}", style="dim", highlight=False)

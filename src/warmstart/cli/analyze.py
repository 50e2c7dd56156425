"""`warmstart analyze` and `warmstart report`: where tool calls fail, in tables or HTML."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from warmstart.cli.app import app, console
from warmstart.cli.options import DbOption, JsonFlag, Output, parse_since, print_json, print_rows
from warmstart.config import MiningConfig, load_config
from warmstart.store import SessionFilter

if TYPE_CHECKING:
    from warmstart.analytics import Analysis

STATUS_COLOURS = {
    "supported": "green",
    "contradicted": "red",
    "inconclusive": "yellow",
    "not enough data": "bright_black",
}

SourceOption = Annotated[str | None, typer.Option(help="Only this source.")]
TypeOption = Annotated[
    str | None, typer.Option("--type", help="Only this task type (code/file/research/mixed).")
]
SinceOption = Annotated[str | None, typer.Option(help="Started at or after (2026-11-01 or 7d).")]
ModelOption = Annotated[str | None, typer.Option(help="Only this model.")]
ShortOption = Annotated[
    int | None,
    typer.Option(
        "--short-messages",
        min=1,
        help="Sessions under this many messages are short (default: config, 20).",
        show_default=False,
    ),
]
MarathonOption = Annotated[
    int | None,
    typer.Option(
        "--marathon-messages",
        min=2,
        help="Sessions with at least this many messages are marathons (default: config, 100).",
        show_default=False,
    ),
]
TurnsOption = Annotated[int, typer.Option("--max-turns", min=2, help="Turns in the turn curves.")]
MinSessionsOption = Annotated[
    int, typer.Option("--min-sessions", min=1, help="Sessions a group needs for a verdict.")
]


def _config(short: int | None, marathon: int | None) -> MiningConfig:
    """The configured thresholds, overridden by the flags."""
    cfg = load_config()
    if short is not None:
        cfg = replace(cfg, short_messages=short)
    if marathon is not None:
        cfg = replace(cfg, marathon_messages=marathon)
    if cfg.marathon_messages <= cfg.short_messages:
        raise typer.BadParameter(
            f"marathon threshold ({cfg.marathon_messages}) must be above the short one "
            f"({cfg.short_messages})",
            param_hint="--marathon-messages",
        )
    return cfg


def _run(
    db: str | None,
    source: str | None,
    task_type: str | None,
    since: str | None,
    model: str | None,
    short_messages: int | None,
    marathon_messages: int | None,
    max_turns: int,
    min_sessions: int,
) -> Analysis:
    """Both commands: parse the filters and thresholds, then analyse."""
    from warmstart.analytics import analyze as run

    flt = SessionFilter(source=source, task_type=task_type, since=parse_since(since), model=model)
    cfg = _config(short_messages, marathon_messages)
    return run(db, flt, cfg, max_turns=max_turns, min_sessions=min_sessions)


@app.command()
def analyze(
    source: SourceOption = None,
    task_type: TypeOption = None,
    since: SinceOption = None,
    model: ModelOption = None,
    short_messages: ShortOption = None,
    marathon_messages: MarathonOption = None,
    max_turns: TurnsOption = 30,
    min_sessions: MinSessionsOption = 10,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show where tool calls fail: per tool, by turn, by session length and outcome."""
    from warmstart.analytics.tables import tables

    result = _run(
        db,
        source,
        task_type,
        since,
        model,
        short_messages,
        marathon_messages,
        max_turns,
        min_sessions,
    )
    if as_json:
        print_json(result.as_dict())
        return
    for table in tables(result):
        print_rows(table.rows, table.columns, Output.table, title=table.title)
    console.print("[bold]verdicts[/bold]")
    for verdict in result.verdicts:
        colour = STATUS_COLOURS.get(verdict.status, "white")
        console.print(f"[{colour}]{verdict.status.upper()}[/{colour}]", end=" ")
        console.print(verdict.claim, highlight=False, markup=False)
        console.print(f"    {verdict.summary}", highlight=False, markup=False)


@app.command()
def report(
    output: Annotated[
        Path, typer.Option("--output", "-o", help="Where to write the HTML file.")
    ] = Path("report.html"),
    source: SourceOption = None,
    task_type: TypeOption = None,
    since: SinceOption = None,
    model: ModelOption = None,
    short_messages: ShortOption = None,
    marathon_messages: MarathonOption = None,
    max_turns: TurnsOption = 30,
    min_sessions: MinSessionsOption = 10,
    db: DbOption = None,
) -> None:
    """Write one self-contained HTML report with charts (works offline)."""
    from warmstart.analytics import write_report

    result = _run(
        db,
        source,
        task_type,
        since,
        model,
        short_messages,
        marathon_messages,
        max_turns,
        min_sessions,
    )
    path = write_report(result, output)
    size = path.stat().st_size / 1024
    console.print(
        f"wrote {path} ({size:.0f} KB): {result.sessions:,} sessions, {result.calls:,} calls",
        highlight=False,
        markup=False,
    )

"""`warmstart sessions list|show`: what the store holds."""

from __future__ import annotations

from typing import Annotated

import typer

from warmstart.cli.app import app, console
from warmstart.cli.options import (
    CsvFlag,
    DbOption,
    JsonFlag,
    NlFlag,
    Output,
    fmt_cell,
    fmt_time,
    output_mode,
    parse_since,
    print_json,
    print_rows,
)
from warmstart.store import SessionFilter, Store

sessions_app = typer.Typer(help="List and inspect stored sessions.", no_args_is_help=True)
app.add_typer(sessions_app, name="sessions")

COLUMNS = (
    "id",
    "source",
    "task_type",
    "messages",
    "calls",
    "failures",
    "tools",
    "outcome",
    "started",
)


@sessions_app.command("list")
def list_sessions(
    source: Annotated[str | None, typer.Option(help="Only this source.")] = None,
    task_type: Annotated[
        str | None, typer.Option("--type", help="Only this task type (code/file/research/mixed).")
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Started at or after (2026-11-01 or 7d).")
    ] = None,
    model: Annotated[str | None, typer.Option(help="Only this model.")] = None,
    limit: Annotated[int, typer.Option(help="At most this many rows.")] = 50,
    db: DbOption = None,
    as_json: JsonFlag = False,
    nl: NlFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """List sessions with their mined counts."""
    flt = SessionFilter(source=source, task_type=task_type, since=parse_since(since), model=model)
    rows = [
        {
            "id": r["id"],
            "source": r["source"],
            "task_type": r["task_type"],
            "messages": r["n_messages"],
            "calls": r["n_calls"],
            "failures": r["n_failures"],
            "tools": r["n_distinct_tools"],
            "recoveries": r["n_recoveries"],
            "first_success_turn": r["first_success_turn"],
            "outcome": r["outcome"],
            "model": r["model"],
            "started": fmt_time(r["started_at"]),
        }
        for r in Store(db).list_sessions(flt, limit=limit)
    ]
    print_rows(rows, COLUMNS, output_mode(as_json, nl, as_csv), title="sessions")


@sessions_app.command("show")
def show_session(
    session_id: Annotated[str, typer.Argument(help="source:id key, or a unique id.")],
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show one session: counts, and every tool call with its judged outcome."""
    data = Store(db).get_session(session_id)
    if as_json:
        print_json(data)
        return
    console.print(
        f"[bold]{data['id']}[/bold]  {data['task_type']}  {data['n_messages']} messages, "
        f"{data['n_calls']} calls, {data['n_failures']} failed, "
        f"{data['n_recoveries']} recovered, outcome {fmt_cell(data['outcome'])}",
        highlight=False,
    )
    rows = [
        {
            "#": c["idx"],
            "turn": c["turn"],
            "tool": c["tool"],
            "ok": "yes" if c["ok"] else "NO",
            "why": c["error_kind"] or "",
            "arguments": c["arguments_json"],
            "result": (c["result"] or "").replace("\n", " "),
        }
        for c in data["calls"]
    ]
    print_rows(rows, ("#", "turn", "tool", "ok", "why", "arguments", "result"), Output.table)

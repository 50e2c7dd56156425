"""`warmstart demo`: the whole loop on the bundled τ-bench airline sample."""

from __future__ import annotations

import json
import tempfile
from importlib import resources
from pathlib import Path
from typing import Annotated

import typer

from warmstart.cli.app import app, console
from warmstart.cli.options import print_json
from warmstart.ingestion import ingest
from warmstart.store import Store, safe_url
from warmstart.templates import build_template, warm_history

DEMO_TASK = "I want to change my flight to May 20"


def sample_path() -> Path:
    """The bundled τ-bench airline trajectories (MIT, Sierra; licence beside it)."""
    return Path(str(resources.files("warmstart") / "data" / "tau_bench_airline.json.gz"))


@app.command()
def demo(
    db: Annotated[
        str | None,
        typer.Option("--db", help="Store URL (default: a new SQLite file in a temp directory)."),
    ] = None,
    budget: Annotated[int, typer.Option(help="Token budget of the warm history.")] = 1200,
    head: Annotated[int, typer.Option(help="Warm messages to print.")] = 7,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON for scripts.")] = False,
) -> None:
    """Ingest the bundled τ-bench sample, build a template and show its warm history."""
    if db is None:
        folder = Path(tempfile.mkdtemp(prefix="warmstart-demo-"))
        db = f"sqlite:///{folder / 'warmstart.db'}"
    report = ingest(sample_path(), db=db, source="tau-bench")
    summary = Store(db).summary()
    tpl = build_template(
        "airline-demo",
        db,
        budget=budget,
        tags=["airline", "demo"],
        description="τ-bench airline (GPT-4o trajectories)",
    )
    warm = warm_history("airline-demo", task=DEMO_TASK, budget=budget, db=db, context="demo")
    tools = sorted({e.tool for e in tpl.examples})
    if as_json:
        print_json(
            {
                "ingest": report.as_dict(),
                "summary": summary,
                "template": {
                    "name": tpl.name,
                    "version": tpl.version,
                    "examples": len(tpl.examples),
                    "tools": tools,
                },
                "warm_history": warm,
                "store": safe_url(db),
            }
        )
        return
    console.rule("[bold]1. ingest[/bold]")
    console.print(
        f"{summary['sessions']} sessions, {summary['messages']:,} messages, "
        f"{summary['calls']:,} tool calls, {summary['failures']} judged failed, "
        f"{summary['recovery_pairs']} recovery pairs, {summary['distinct_tools']} tools",
        highlight=False,
    )
    types = ", ".join(f"{k} {v}" for k, v in sorted(summary["task_types"].items()))
    console.print(f"task types: {types}", highlight=False)
    console.rule("[bold]2. build[/bold]")
    recov = sum(1 for e in tpl.examples if e.is_recovery)
    console.print(
        f"template airline-demo v{tpl.version}: {len(tpl.examples)} examples "
        f"({recov} recovery pairs), {len(tools)} distinct tools",
        highlight=False,
    )
    console.print(f"tools: {', '.join(tools)}", highlight=False)
    console.rule("[bold]3. inject[/bold]")
    console.print(
        f"warm history for {DEMO_TASK!r} within {budget} tokens: {len(warm)} messages; head:",
        highlight=False,
    )
    for msg in warm[:head]:
        body = msg.get("content")
        if msg.get("tool_calls"):
            fn = msg["tool_calls"][0]["function"]
            body = f"{fn['name']}({fn['arguments']})"
        text = " ".join(str(body).split())
        console.print(f"  [cyan]{msg['role']:>9}[/cyan]  {text[:110]}", highlight=False)
    console.rule()
    console.print(f"store: {safe_url(db)}", highlight=False)
    console.print(
        f"try: warmstart templates show airline-demo --db {json.dumps(safe_url(db))}",
        highlight=False,
    )

"""`warmstart create|build|templates ...`: make, list, inspect and move templates."""

from __future__ import annotations

import json
import sys
from contextlib import nullcontext
from pathlib import Path
from typing import Annotated

import typer

from warmstart.cli.app import app, console, console_err
from warmstart.cli.options import (
    CsvFlag,
    DbOption,
    JsonFlag,
    NlFlag,
    fmt_time,
    output_mode,
    print_json,
    print_rows,
    split_tags,
)
from warmstart.model import Template
from warmstart.store import Store
from warmstart.templates import (
    build_template,
    create_template,
    export_template,
    import_template,
)

templates_app = typer.Typer(
    help="List, show, delete, export and import templates.", no_args_is_help=True
)
app.add_typer(templates_app, name="templates")

TypeOption = Annotated[
    str | None, typer.Option("--type", help="Task type: code, file, research or mixed.")
]
TagsOption = Annotated[str | None, typer.Option(help="Comma-separated tags, e.g. airline,prod.")]


def _summary(t: Template) -> dict[str, object]:
    return {
        "name": t.name,
        "version": t.version,
        "task_type": t.task_type,
        "tags": t.tags,
        "examples": t.example_count,
        "budget": t.budget,
        "uses": t.usage_count,
        "created": fmt_time(t.created_at),
        "description": t.description,
    }


def _announce(t: Template, as_json: bool) -> None:
    if as_json:
        print_json(_summary(t) | {"tools": sorted({e.tool for e in t.examples})})
        return
    tools = sorted({e.tool for e in t.examples})
    recov = sum(1 for e in t.examples if e.is_recovery)
    console.print(
        f"template [bold]{t.name}[/bold] v{t.version}: {len(t.examples)} examples "
        f"({recov} recovery pairs) covering {len(tools)} tools, type {t.task_type}, "
        f"budget {t.budget}",
        highlight=False,
    )


@app.command()
def build(
    name: Annotated[str, typer.Argument(help="Template name (letters, digits, . _ -).")],
    source: Annotated[str | None, typer.Option(help="Only sessions from this source.")] = None,
    task_type: TypeOption = None,
    tags: TagsOption = None,
    min_messages: Annotated[
        int | None, typer.Option(help="Only sessions with at least this many messages.")
    ] = None,
    max_sessions: Annotated[
        int | None, typer.Option(help="Use at most this many sessions (longest first).")
    ] = None,
    budget: Annotated[int, typer.Option(help="Default token budget of the warm history.")] = 2000,
    max_examples: Annotated[int, typer.Option(help="Candidate examples kept.")] = 64,
    description: Annotated[str, typer.Option(help="Free text.")] = "",
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Mine the store into a template (a new version if the name exists)."""
    with console_err.status("mining tool calls…") if sys.stderr.isatty() else nullcontext():
        tpl = build_template(
            name,
            db,
            source=source,
            task_type=task_type,
            tags=split_tags(tags),
            min_messages=min_messages,
            max_sessions=max_sessions,
            budget=budget,
            max_examples=max_examples,
            description=description,
        )
    _announce(tpl, as_json)


@app.command()
def create(
    session_id: Annotated[str, typer.Argument(help="The session to learn from (source:id).")],
    name: Annotated[str, typer.Option("--name", help="Template name.")],
    task_type: TypeOption = None,
    max_examples: Annotated[int, typer.Option(help="At most this many examples.")] = 20,
    description: Annotated[str, typer.Option(help="Free text.")] = "",
    tags: TagsOption = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Create a template from one stored session."""
    tpl = create_template(
        session_id,
        name,
        db,
        task_type=task_type,
        max_examples=max_examples,
        description=description,
        tags=split_tags(tags),
    )
    _announce(tpl, as_json)


@templates_app.command("list")
def list_templates(
    task_type: TypeOption = None,
    tags: TagsOption = None,
    all_versions: Annotated[
        bool, typer.Option("--all", help="Every version, not just current.")
    ] = False,
    db: DbOption = None,
    as_json: JsonFlag = False,
    nl: NlFlag = False,
    as_csv: CsvFlag = False,
) -> None:
    """List templates (filter by type and tags)."""
    rows = [
        _summary(t) for t in Store(db).list_templates(task_type, split_tags(tags), all_versions)
    ]
    cols = ("name", "version", "task_type", "tags", "examples", "budget", "uses", "created")
    print_rows(rows, cols, output_mode(as_json, nl, as_csv), title="templates")


@templates_app.command("show")
def show(
    name: str,
    version: Annotated[int | None, typer.Option(help="A specific version.")] = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show a template and its examples."""
    tpl = Store(db).load_template(name, version)
    if as_json:
        print_json(export_template(name, db, version) | {"uses": tpl.usage_count})
        return
    _announce(tpl, False)
    rows = [
        {
            "#": i,
            "tool": e.tool,
            "kind": "recovery" if e.is_recovery else "success",
            "tokens": e.tokens,
            "err_rate": round(e.tool_error_rate, 3),
            "intent": e.intent.replace("\n", " "),
            "arguments": e.arguments,
        }
        for i, e in enumerate(tpl.examples)
    ]
    print_rows(
        rows, ("#", "tool", "kind", "tokens", "err_rate", "intent", "arguments"), output_mode(False)
    )


@templates_app.command("delete")
def delete(
    name: str,
    version: Annotated[int | None, typer.Option(help="Only this version.")] = None,
    db: DbOption = None,
) -> None:
    """Delete a template (all versions, or one)."""
    n = Store(db).delete_template(name, version)
    console.print(f"deleted {n} version(s) of {name}", highlight=False)


@templates_app.command("stats")
def stats(db: DbOption = None, as_json: JsonFlag = False) -> None:
    """Totals: templates, by type, examples, usage."""
    data = Store(db).template_stats()
    if as_json:
        print_json(data)
        return
    console.print(
        f"{data['templates']} templates ({data['versions']} versions), "
        f"{data['examples']} examples, used {data['uses']} times "
        f"({data['tokens_injected']:,} tokens injected)",
        highlight=False,
    )
    for kind, n in sorted(data["by_type"].items()):
        console.print(f"  {kind:<9} {n}", highlight=False)


@templates_app.command("export")
def export(
    name: str,
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="File (default stdout).")
    ] = None,
    version: Annotated[int | None, typer.Option(help="A specific version.")] = None,
    db: DbOption = None,
) -> None:
    """Export a template as JSON (examples are already redacted)."""
    text = json.dumps(export_template(name, db, version), indent=2, ensure_ascii=False)
    if output:
        output.write_text(text + "\n", encoding="utf-8")
        console_err.print(f"wrote {output}", highlight=False)
    else:
        sys.stdout.write(text + "\n")


@templates_app.command("import")
def import_(
    file: Annotated[Path, typer.Argument(help="A file written by `templates export`.")],
    name: Annotated[str | None, typer.Option(help="Store under this name instead.")] = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Import a template export (redacted again on the way in)."""
    tpl = import_template(file, db, name)
    _announce(tpl, as_json)

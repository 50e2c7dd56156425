"""`warmstart review`, `warmstart memory ...` and `warmstart skills ...`: the review stores.

Thin: parse, call :mod:`warmstart.review`, render. The store home is ``--home``, else
``$HERMES_HOME``, else ``[review] home`` in the config file, else ``$WARMSTART_HOME``.
"""

from __future__ import annotations

import json
import sys
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from warmstart.cli.app import app, console, console_err
from warmstart.cli.options import DbOption, JsonFlag, fmt_time, print_json
from warmstart.review.config import HERMES_HOME_ENV, ReviewConfig
from warmstart.review.errors import MemoryFileError, PendingError
from warmstart.review.memory_store import (
    FILENAMES,
    TARGETS,
    MemoryStore,
    parse_entries,
    render_entries,
)
from warmstart.review.pending import PendingStore
from warmstart.review.provenance import USER_CLI, Provenance, ProvenanceLog
from warmstart.review.skill_store import SKILL_FILE, SkillStore
from warmstart.review.tools import ReviewTools
from warmstart.store import Store

if TYPE_CHECKING:  # the reviewer pulls in the runtime and openai: load it only to review
    from warmstart.review.reviewer import ReviewOutcome

memory_app = typer.Typer(help="Show, edit and approve the agent's memory.", no_args_is_help=True)
skills_app = typer.Typer(help="List, show and delete the agent's skills.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")
app.add_typer(skills_app, name="skills")

HomeOption = Annotated[
    Path | None,
    typer.Option(
        "--home",
        envvar=HERMES_HOME_ENV,
        help="Store home holding memories/ and skills/ (default: $HERMES_HOME, "
        "[review] home, then $WARMSTART_HOME).",
        show_default=False,
    ),
]


class Kind(StrEnum):
    """Which review to run."""

    memory = "memory"
    skills = "skills"
    both = "both"


class TargetChoice(StrEnum):
    """Which memory file."""

    memory = "memory"
    user = "user"
    all = "all"


def _config(home: Path | None, **overrides: Any) -> ReviewConfig:
    return ReviewConfig.load(home=home, **overrides)


def _memory_store(config: ReviewConfig) -> MemoryStore:
    return MemoryStore.at_home(
        config.resolved_home,
        memory_limit=config.memory_char_limit,
        user_limit=config.user_char_limit,
    )


def _targets(choice: TargetChoice) -> list[str]:
    return list(TARGETS) if choice is TargetChoice.all else [choice.value]


def _cli_tools(config: ReviewConfig) -> ReviewTools:
    return ReviewTools.at_home(
        config.resolved_home,
        provenance=Provenance(write_origin=USER_CLI, platform="cli"),
        memory_limit=config.memory_char_limit,
        user_limit=config.user_char_limit,
    )


def stored_messages(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Store message rows back into OpenAI chat messages."""
    messages: list[dict[str, Any]] = []
    for row in rows:
        message: dict[str, Any] = {"role": row["role"], "content": row.get("content")}
        calls = json.loads(row["tool_calls_json"]) if row.get("tool_calls_json") else []
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.get("id") or f"call_{row.get('idx', 0)}_{i}",
                    "type": "function",
                    "function": {"name": c.get("name", ""), "arguments": c.get("arguments") or ""},
                }
                for i, c in enumerate(calls)
            ]
        if row.get("tool_call_id"):
            message["tool_call_id"] = row["tool_call_id"]
        if row.get("name") and row["role"] == "tool":
            message["name"] = row["name"]
        messages.append(message)
    return messages


# review --------------------------------------------------------------------------


@app.command("review")
def review(
    session_id: Annotated[str, typer.Argument(help="Stored session: source:id key or unique id.")],
    kind: Annotated[Kind, typer.Option(help="Review memory, skills or both.")] = Kind.both,
    endpoint: Annotated[
        str | None,
        typer.Option(
            help="OpenAI-compatible base URL (default: $WARMSTART_ENDPOINT).", show_default=False
        ),
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="Model (default: $WARMSTART_MODEL).", show_default=False)
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key", help="API key (default: $WARMSTART_API_KEY).", show_default=False
        ),
    ] = None,
    max_turns: Annotated[
        int | None,
        typer.Option(help="Request limit of the review (default 16).", show_default=False),
    ] = None,
    home: HomeOption = None,
    db: DbOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Review a stored session now and print what it saved to memory and skills."""
    data = Store(db).get_session(session_id)
    metadata = data.get("metadata") or {}
    parent = metadata.get("parent_session_id")
    config = _config(
        home,
        model=model,
        base_url=endpoint,
        api_key=api_key,
        max_turns=max_turns,
        session_id=data["id"],
        parent_session_id=str(parent) if parent else None,
        platform="cli",
        notifications=False,
    )
    from warmstart.review.reviewer import Reviewer

    outcome = Reviewer(config).review_now(stored_messages(data["messages"]), kind.value)
    if as_json:
        print_json(outcome.to_dict())
    else:
        _render_outcome(outcome)
    if not outcome.ok:
        raise typer.Exit(1)


def _render_outcome(outcome: ReviewOutcome) -> None:
    console.print(outcome.summary or "Self-improvement review: nothing saved.", highlight=False)
    for change in outcome.changes:
        result = json.loads(change["result"])
        console.print(f"  {change['tool']}: {result.get('message', '')}", highlight=False)
    for denied in outcome.denied:
        console.print(
            f"  denied {denied['tool']} ({denied['error_kind']}): {denied['result'][:160]}",
            highlight=False,
        )
    for error in outcome.errors:
        console_err.print(f"  [yellow]{error}[/yellow]", highlight=False)
    if not outcome.ok:
        why = outcome.error or outcome.stop_reason
        console_err.print(f"[red]error:[/red] the review did not finish: {why}", highlight=False)


# memory --------------------------------------------------------------------------


@memory_app.command("show")
def memory_show(
    target: Annotated[TargetChoice, typer.Option(help="memory, user or all.")] = TargetChoice.all,
    provenance: Annotated[
        bool, typer.Option("--provenance", help="Show where each entry came from.")
    ] = False,
    home: HomeOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Show MEMORY.md and USER.md entries with their character usage."""
    config = _config(home)
    store = _memory_store(config)
    log = ProvenanceLog.at_home(config.resolved_home)
    report: dict[str, Any] = {}
    for name in _targets(target):
        entries = store.entries(name)
        origins = log.for_memory(name, entries) if provenance else [None] * len(entries)
        used, limit = store.usage(name)
        report[name] = {
            "file": str(store.path(name)),
            "chars": used,
            "limit": limit,
            "entries": [
                {"text": e, **({"provenance": o} if provenance else {})}
                for e, o in zip(entries, origins, strict=True)
            ],
        }
    if as_json:
        print_json(report)
        return
    for name, data in report.items():
        count = len(data["entries"])
        console.print(
            f"[bold]{FILENAMES[name]}[/bold] ({name}): {data['chars']:,}/{data['limit']:,} chars, "
            f"{count} {'entry' if count == 1 else 'entries'}",
            highlight=False,
        )
        if not data["entries"]:
            console.print("  (empty)")
        for number, entry in enumerate(data["entries"], 1):
            console.print(f"  {number}. {entry['text']}", highlight=False, markup=False)
            if provenance:
                console.print(
                    f"     {_origin_line(entry['provenance'])}", highlight=False, markup=False
                )


def _origin_line(row: dict[str, Any] | None) -> str:
    if row is None:
        return "from: unknown (not written through warmstart)"
    parts = [f"from: {row.get('write_origin')}"]
    for key, label in (
        ("session_id", "session"),
        ("parent_session_id", "parent"),
        ("platform", "platform"),
        ("tool_call_id", "call"),
    ):
        if row.get(key):
            parts.append(f"{label} {row[key]}")
    if row.get("pending_id"):
        parts.append(f"approved from pending {row['pending_id']}")
    parts.append(fmt_time(row.get("at")))
    return " · ".join(parts)


@memory_app.command("edit")
def memory_edit(
    target: Annotated[TargetChoice, typer.Option(help="memory or user.")] = TargetChoice.memory,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from-file",
            help="Take the new text from this file ('-' for stdin).",
            show_default=False,
        ),
    ] = None,
    home: HomeOption = None,
) -> None:
    """Edit MEMORY.md or USER.md in $EDITOR (entries separated by a line holding §)."""
    if target is TargetChoice.all:
        raise typer.BadParameter("edit one file at a time: memory or user", param_hint="--target")
    config = _config(home)
    store = _memory_store(config)
    try:
        current = store.read_text(target.value)
    except MemoryFileError as exc:
        console_err.print(f"[yellow]warning:[/yellow] {exc.message}", highlight=False)
        current = store.path(target.value).read_bytes().decode("utf-8", errors="replace")
    if from_file is not None:
        text = sys.stdin.read() if str(from_file) == "-" else from_file.read_text(encoding="utf-8")
    else:
        edited = click.edit(current, extension=".md", require_save=True)
        if edited is None:
            console.print("No changes.")
            return
        text = edited
    entries = parse_entries(text)
    if render_entries(entries) == render_entries(parse_entries(current)):
        console.print("No changes.")
        return
    change = store.set_entries(target.value, entries)
    ProvenanceLog.at_home(config.resolved_home).record_many(
        Provenance(write_origin=USER_CLI, platform="cli"),
        [{"subsystem": "memory", "target": target.value, "action": "add", "status": "applied",
          "content": e} for e in change.after if e not in change.before],
    )  # fmt: skip
    console.print(
        f"Saved {FILENAMES[target.value]}: {len(change.after)} entries, {change.usage}.",
        highlight=False,
    )


@memory_app.command("clear")
def memory_clear(
    target: Annotated[TargetChoice, typer.Option(help="memory, user or all.")] = TargetChoice.all,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    home: HomeOption = None,
) -> None:
    """Remove every entry from MEMORY.md and/or USER.md."""
    config = _config(home)
    store = _memory_store(config)
    names = _targets(target)
    files = " and ".join(FILENAMES[n] for n in names)
    if not yes and not typer.confirm(f"Remove every entry from {files} in {store.directory}?"):
        raise typer.Abort()
    for name in names:
        store.clear(name)
    console.print(f"Cleared {files}.", highlight=False)


@memory_app.command("pending")
def memory_pending(home: HomeOption = None, as_json: JsonFlag = False) -> None:
    """List memory and skill writes staged for approval."""
    config = _config(home)
    records = PendingStore(config.resolved_home).records()
    if as_json:
        print_json(records)
        return
    if not records:
        console.print("No pending writes.")
        return
    for record in records:
        console.print(
            f"{record['id']}  {record.get('subsystem')}  {record.get('origin')}  "
            f"{fmt_time(record.get('created_at'))}  {record.get('summary', '')}",
            highlight=False,
            markup=False,
        )


@memory_app.command("approve")
def memory_approve(
    pending_id: Annotated[str, typer.Argument(help="Id from `warmstart memory pending`.")],
    home: HomeOption = None,
) -> None:
    """Apply a staged write now (it keeps its original provenance)."""
    result = _cli_tools(_config(home)).apply_pending(pending_id)
    console.print(f"Approved {pending_id}: {result['message']}", highlight=False)


@memory_app.command("reject")
def memory_reject(
    pending_id: Annotated[str, typer.Argument(help="Id from `warmstart memory pending`.")],
    home: HomeOption = None,
) -> None:
    """Discard a staged write without applying it."""
    if not PendingStore(_config(home).resolved_home).discard(pending_id):
        raise PendingError(f"no pending write {pending_id!r} (see `warmstart memory pending`)")
    console.print(f"Rejected {pending_id}.", highlight=False)


# skills --------------------------------------------------------------------------


@skills_app.command("list")
def skills_list(home: HomeOption = None, as_json: JsonFlag = False) -> None:
    """List skills with their category and description."""
    store = SkillStore.at_home(_config(home).resolved_home)
    skills = store.list_skills()
    rows = [
        {
            "name": s.name,
            "category": s.category,
            "description": s.description,
            "files": s.files,
            "error": s.error,
            "path": str(s.path),
        }
        for s in skills
    ]
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print(f"No skills in {store.root}.", highlight=False)
        return
    for row in rows:
        where = f"{row['category']}/" if row["category"] else ""
        about = f"[red]broken: {row['error']}[/red]" if row["error"] else row["description"]
        console.print(f"[bold]{where}{row['name']}[/bold]  {about}", highlight=False)


@skills_app.command("show")
def skills_show(
    name: Annotated[str, typer.Argument(help="Skill name.")],
    file: Annotated[
        str | None,
        typer.Option("--file", help="A support file instead of SKILL.md.", show_default=False),
    ] = None,
    provenance: Annotated[
        bool, typer.Option("--provenance", help="List the recorded writes to this skill.")
    ] = False,
    home: HomeOption = None,
) -> None:
    """Print a skill's SKILL.md (or a support file)."""
    config = _config(home)
    store = SkillStore.at_home(config.resolved_home)
    text = store.read(name, None if file in (None, SKILL_FILE) else file)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    if provenance:
        rows = ProvenanceLog.at_home(config.resolved_home).for_skill(name)
        console.print(f"[bold]writes to {name}[/bold]: {len(rows)}", highlight=False)
        for row in rows:
            what = row.get("action", "?") + (f" {row['file_path']}" if row.get("file_path") else "")
            console.print(
                f"  {what} ({row.get('status')}) {_origin_line(row)}", highlight=False, markup=False
            )


@skills_app.command("delete")
def skills_delete(
    name: Annotated[str, typer.Argument(help="Skill name.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    home: HomeOption = None,
) -> None:
    """Delete a skill folder and everything in it."""
    config = _config(home)
    store = SkillStore.at_home(config.resolved_home)
    folder = store.require(name)
    if not yes and not typer.confirm(f"Delete skill {name!r} ({folder})?"):
        raise typer.Abort()
    change = store.delete(name)
    ProvenanceLog.at_home(config.resolved_home).record(
        Provenance(write_origin=USER_CLI, platform="cli"), subsystem="skills", action="delete",
        name=name,
    )  # fmt: skip
    console.print(change.message, highlight=False)

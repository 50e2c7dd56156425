"""`warmstart gate`: the human approval gate (serve, pending, show, approve, deny, audit)."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from warmstart.cli.app import app, console
from warmstart.errors import ApprovalError

gate_app = typer.Typer(
    help="Human approval gate for high-risk agent actions.", no_args_is_help=True
)
app.add_typer(gate_app, name="gate")

UrlOpt = Annotated[
    str | None,
    typer.Option(
        "--url", envvar="WARMSTART_GATE_URL", help="gate URL [default: http://127.0.0.1:6000]"
    ),
]
TokenOpt = Annotated[
    str | None,
    typer.Option(
        "--token", envvar="WARMSTART_GATE_TOKEN", help="approver token", show_default=False
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]


def _client(url: str | None, token: str | None) -> Any:
    from warmstart.gate.client import GateClient

    return GateClient(url, token or "")


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, indent=2, ensure_ascii=False))


@gate_app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="interface [default: 127.0.0.1]")] = None,
    port: Annotated[int | None, typer.Option(help="port [default: 6000]")] = None,
    db: Annotated[
        str | None, typer.Option("--db", help="SQLAlchemy URL of the gate database")
    ] = None,
    rate_limit: Annotated[
        int | None, typer.Option(help="submissions per action per hour, 0 for none [default: 10]")
    ] = None,
    notify: Annotated[
        list[str] | None, typer.Option(help="apprise URL, repeatable, tried in order")
    ] = None,
    auto_approve: Annotated[
        list[str] | None, typer.Option(help="action approved without asking, repeatable")
    ] = None,
    public_url: Annotated[str | None, typer.Option(help="URL people reach the gate at")] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning")] = "info",
) -> None:
    """Run the approval gate server."""
    from warmstart.gate.server import serve as run_server
    from warmstart.gate.settings import GateSettings

    overrides: dict[str, Any] = {
        "host": host,
        "port": port,
        "db_url": db,
        "rate_limit": rate_limit,
        "notify": notify or None,
        "auto_approve": auto_approve or None,
        "public_url": public_url,
    }
    settings = GateSettings(**{k: v for k, v in overrides.items() if v is not None})
    run_server(settings, log_level=log_level)


@gate_app.command()
def pending(url: UrlOpt = None, token: TokenOpt = None, as_json: JsonOpt = False) -> None:
    """List requests waiting for a decision."""
    with _client(url, token) as client:
        rows = client.list_requests("pending")
    if as_json:
        _print_json(rows)
        return
    if not rows:
        console.print("no pending requests")
        return
    table = Table("id", "action", "requester", "expires", "description")
    for row in rows:
        table.add_row(
            row["id"], row["action"], row["requester"], row["expires_at"], row["description"]
        )
    console.print(table)


@gate_app.command()
def show(
    request_id: Annotated[str, typer.Argument(help="request id")],
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show one request with its details."""
    with _client(url, token) as client:
        row = client.get(request_id)
    if as_json:
        _print_json(row)
        return
    for key in (
        "id",
        "action",
        "description",
        "requester",
        "session_key",
        "status",
        "created_at",
        "expires_at",
        "decided_at",
        "decided_by",
        "reason",
        "comment",
    ):
        if row.get(key) is not None:
            console.print(f"[bold]{key}[/bold]: {row[key]}", highlight=False, markup=True)
    console.print("[bold]details[/bold]:")
    typer.echo(json.dumps(row["details"], indent=2, ensure_ascii=False))


@gate_app.command()
def approve(
    request_id: Annotated[str, typer.Argument(help="request id")],
    comment: Annotated[str | None, typer.Option(help="note kept in the audit log")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Approve a pending request."""
    with _client(url, token) as client:
        row = client.approve(request_id, comment)
    typer.echo(f"approved {row['id']} ({row['action']} from {row['requester']})")


@gate_app.command()
def deny(
    request_id: Annotated[str, typer.Argument(help="request id")],
    reason: Annotated[str, typer.Option(help="why (required)")],
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Deny a pending request, with a reason."""
    with _client(url, token) as client:
        row = client.deny(request_id, reason)
    typer.echo(f"denied {row['id']} ({row['action']} from {row['requester']}): {reason}")


@gate_app.command()
def audit(
    verify: Annotated[bool, typer.Option("--verify", help="check the hash chain")] = False,
    limit: Annotated[int, typer.Option(help="rows to show (1-500)")] = 20,
    url: UrlOpt = None,
    token: TokenOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Show the audit log, or verify its hash chain with --verify."""
    with _client(url, token) as client:
        if verify:
            result = client.verify_audit()
            if as_json:
                _print_json(result)
            elif result["ok"]:
                typer.echo(f"audit chain intact: {result['rows']} rows")
            if not result["ok"]:
                raise ApprovalError(f"audit chain broken: {result['problem']}")
            return
        rows = client.audit(limit)
    if as_json:
        _print_json(rows)
        return
    table = Table("seq", "at", "event", "request", "actor")
    table.add_column("data", no_wrap=True, overflow="ellipsis", max_width=60)
    for row in rows:
        table.add_row(
            str(row["seq"]),
            row["at"],
            row["event"],
            row["request_id"] or "",
            row["actor"],
            json.dumps(row["data"], ensure_ascii=False),
        )
    console.print(table)


@gate_app.command()
def allow(
    session_key: Annotated[str, typer.Argument(help="session key")],
    actions: Annotated[list[str], typer.Argument(help="actions to auto-approve")],
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Auto-approve named actions within one session (never high-risk ones)."""
    with _client(url, token) as client:
        allowed = client.allow_session(session_key, actions)
    typer.echo(f"session {session_key} auto-approves: {', '.join(allowed)}")


@gate_app.command()
def token() -> None:
    """Print a new random token (use as NAME:TOKEN in the token settings)."""
    from warmstart.gate.security import new_token

    typer.echo(new_token())

"""`warmstart mcp`: warmstart's tools and templates for MCP clients."""

from __future__ import annotations

from typing import Annotated

import typer

from warmstart.cli.app import app
from warmstart.cli.options import DbOption


@app.command("mcp")
def mcp(
    db: DbOption = None,
    http: Annotated[
        bool, typer.Option("--http", help="Serve streamable HTTP instead of stdio.")
    ] = False,
    host: Annotated[str, typer.Option(help="Interface for --http.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port for --http.")] = 8788,
    gate_url: Annotated[
        str | None,
        typer.Option(
            envvar="WARMSTART_GATE_URL",
            help="Approval gate URL; adds the request_approval tool.",
            show_default=False,
        ),
    ] = None,
    gate_token: Annotated[
        str | None,
        typer.Option(
            envvar="WARMSTART_GATE_TOKEN", help="Requester token for the gate.", show_default=False
        ),
    ] = None,
) -> None:
    """Serve warmstart's tools and templates to MCP clients (stdio, or --http)."""
    from warmstart.integrations.mcp_server import serve

    serve(
        db,
        transport="streamable-http" if http else "stdio",
        host=host,
        port=port,
        gate_url=gate_url,
        gate_token=gate_token,
    )

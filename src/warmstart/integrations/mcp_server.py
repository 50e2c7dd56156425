"""warmstart as an MCP server: tools and template resources for any MCP client.

``warmstart mcp`` serves over stdio (what desktop clients and agent frameworks spawn) or,
with ``--http``, over streamable HTTP. Built on the official ``mcp`` SDK's
:class:`~mcp.server.mcpserver.MCPServer`.

Tools:

* ``warm_session``: build / list / load / delete templates; the same handler as the
  OpenAI-style tool in :mod:`warmstart.integrations.warm_session`, so every framework sees
  the same behaviour. A failed action comes back as an MCP tool error with its message.
* ``analyze_summary``: the headline of ``warmstart analyze`` (error and recovery rates
  with intervals, the tools and error messages that fail most, the verdicts) and the
  store's totals, optionally for one source or task type.
* ``request_approval`` (only when a gate URL is configured): ask the approval gate and
  wait for a person's decision; the answer says approved, denied or expired.

Resources: ``warmstart://templates`` lists the templates; ``warmstart://templates/{name}``
is a template's warm history as OpenAI chat messages (JSON).

Store work runs on worker threads so one slow query does not stall the session.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any, Literal

import anyio
from pydantic import Field

from warmstart.errors import ApprovalError, WarmstartError

SERVER_NAME = "warmstart"
INSTRUCTIONS = (
    "warmstart mines past agent sessions into templates of worked tool-call examples. "
    "Use warm_session to list, load, build or delete templates; load one before a task "
    "to see how its tools were called successfully before. analyze_summary reports "
    "where tool calls fail. Read warmstart://templates/{name} for a template's warm history."
)


def create_server(
    db: str | None = None,
    *,
    gate_url: str | None = None,
    gate_token: str | None = None,
    approval_timeout: int = 300,
) -> Any:
    """The MCP server (an ``MCPServer``) over the store at ``db``.

    ``gate_url`` adds the ``request_approval`` tool; ``gate_token`` is the requester token
    it sends. Nothing touches the store until a tool or resource is used.
    """
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError

    from warmstart import __version__

    # bm25s logs index building at DEBUG on its own logger; keep the server's stderr quiet.
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    server = MCPServer(
        SERVER_NAME,
        title="warmstart",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
    )

    @server.tool(
        name="warm_session",
        description=(
            "Manage warm-start templates mined from past sessions. 'build' mines the session "
            "store into a template, 'list' shows templates, 'load' returns a template's warm "
            "history (worked tool-call examples) for a task, 'delete' removes a template."
        ),
    )
    async def warm_session(
        action: Annotated[
            Literal["build", "list", "load", "delete"], Field(description="What to do")
        ],
        name: Annotated[str | None, Field(description="Template name (build/load/delete)")] = None,
        task: Annotated[str | None, Field(description="Task text to rank examples (load)")] = None,
        budget: Annotated[int | None, Field(description="Token budget (build/load)", gt=0)] = None,
        task_type: Annotated[
            Literal["code", "file", "research", "mixed"] | None,
            Field(description="Only sessions of this type (build) / filter (list)"),
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Tags (build) / filter (list)")] = None,
        source: Annotated[str | None, Field(description="Only sessions from this source")] = None,
    ) -> str:
        from warmstart.integrations.warm_session import handle_warm_session

        args = {
            key: value
            for key, value in {
                "action": action,
                "name": name,
                "task": task,
                "budget": budget,
                "task_type": task_type,
                "tags": tags,
                "source": source,
            }.items()
            if value is not None
        }
        result = await anyio.to_thread.run_sync(lambda: handle_warm_session(args, db=db))
        decoded = json.loads(result)
        if not decoded.get("success"):
            raise ToolError(str(decoded.get("error") or "warm_session failed"))
        return result

    @server.tool(
        name="analyze_summary",
        description=(
            "Where tool calls fail in the session store: totals, the error and recovery "
            "rates with 95% intervals, the tools that fail most, the most frequent error "
            "messages, and verdicts on the claims warm starts rest on."
        ),
    )
    async def analyze_summary(
        source: Annotated[str | None, Field(description="Only sessions from this source")] = None,
        task_type: Annotated[
            Literal["code", "file", "research", "mixed"] | None,
            Field(description="Only sessions of this task type"),
        ] = None,
        top: Annotated[int, Field(description="How many tools and errors", ge=1, le=50)] = 10,
    ) -> str:
        try:
            summary = await anyio.to_thread.run_sync(
                lambda: summarize(db, source=source, task_type=task_type, top=top)
            )
        except WarmstartError as exc:
            raise ToolError(str(exc)) from exc
        return json.dumps(summary, ensure_ascii=False, default=str)

    if gate_url:

        @server.tool(
            name="request_approval",
            description=(
                "Ask a person, through the warmstart approval gate, to approve a high-risk "
                "action before doing it. Waits for the decision and returns it; do the "
                "action only when 'approved' is true."
            ),
        )
        async def request_approval(
            action: Annotated[str, Field(description="Action name, e.g. deploy_production")],
            description: Annotated[str, Field(description="What will happen, for the person")],
            details: Annotated[
                dict[str, Any] | None, Field(description="Exact parameters of the action")
            ] = None,
            timeout: Annotated[
                int, Field(description="Seconds to wait for a decision", ge=1, le=86_400)
            ] = approval_timeout,
        ) -> str:
            from warmstart.gate.client import GateClient

            def ask() -> dict[str, Any]:
                with GateClient(gate_url, gate_token) as client:
                    decision = client.request(action, description, details or {}, timeout)
                    if decision.approved:
                        client.consume(decision)
                return {
                    "approved": decision.approved,
                    "status": decision.status,
                    "id": decision.id,
                    "decided_by": decision.decided_by,
                    "reason": decision.reason,
                    "comment": decision.comment,
                }

            try:
                answer = await anyio.to_thread.run_sync(ask)
            except ApprovalError as exc:
                raise ToolError(f"approval gate: {exc}") from exc
            return json.dumps(answer, ensure_ascii=False)

    @server.resource(
        "warmstart://templates",
        name="templates",
        description="The templates in the store (current versions).",
        mime_type="application/json",
    )
    async def templates() -> str:
        def run() -> list[dict[str, Any]]:
            from warmstart.store import Store

            return [
                {
                    "name": t.name,
                    "version": t.version,
                    "task_type": t.task_type,
                    "tags": t.tags,
                    "examples": t.example_count,
                    "uri": f"warmstart://templates/{t.name}",
                }
                for t in Store(db).list_templates()
            ]

        return json.dumps(await anyio.to_thread.run_sync(run), ensure_ascii=False)

    @server.resource(
        "warmstart://templates/{name}",
        name="template",
        description="A template's warm history: OpenAI chat messages to prepend to a chat.",
        mime_type="application/json",
    )
    async def template(name: str) -> str:
        from warmstart.templates import warm_history

        try:
            messages = await anyio.to_thread.run_sync(
                lambda: warm_history(name, db=db, context="mcp")
            )
        except WarmstartError as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        return json.dumps(messages, ensure_ascii=False)

    return server


def summarize(
    db: str | None = None,
    *,
    source: str | None = None,
    task_type: str | None = None,
    top: int = 10,
) -> dict[str, Any]:
    """A compact view of :func:`warmstart.analytics.analyze` plus the store's totals.

    The full analysis (turn curves, length buckets, per-session distributions) is large;
    an agent reading a tool result needs the headline figures, the worst tools and
    errors, and the verdicts. ``warmstart analyze --json`` has everything.
    """
    from warmstart.analytics import analyze
    from warmstart.store import SessionFilter, Store

    flt = SessionFilter(source=source, task_type=task_type)
    analysis = analyze(db, flt).as_dict()
    totals = Store(db).summary(flt)
    tools = sorted(analysis["tools"], key=lambda t: (-t["failures"], -t["calls"], t["tool"]))
    return {
        "sessions": analysis["sessions"],
        "calls": analysis["calls"],
        "failures": analysis["failures"],
        "error_rate": analysis["error"],
        "recovery_rate": analysis["recovery"],
        "recovery_pairs": totals["recovery_pairs"],
        "distinct_tools": totals["distinct_tools"],
        "task_types": totals["task_types"],
        "sources": totals["sources"],
        "tools": [
            {
                "tool": t["tool"],
                "calls": t["calls"],
                "failures": t["failures"],
                "error_rate": t["error"],
            }
            for t in tools[:top]
        ],
        "errors": [
            {k: e[k] for k in ("tool", "kind", "pattern", "count", "example")}
            for e in analysis["errors"][:top]
        ],
        "verdicts": [
            {k: v[k] for k in ("claim", "status", "summary")} for v in analysis["verdicts"]
        ],
    }


def serve(
    db: str | None = None,
    *,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8788,
    gate_url: str | None = None,
    gate_token: str | None = None,
) -> None:
    """Run the MCP server until the client disconnects (stdio) or it is interrupted (HTTP)."""
    server = create_server(db, gate_url=gate_url, gate_token=gate_token)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host=host, port=port)

"""The ``warm_session`` tool: an OpenAI tool schema plus a handler that never raises.

Actions: ``build`` (mine the store into a template), ``list`` (templates),
``load`` (the warm history of a template for a task), ``delete``. The handler
returns a JSON string with ``success`` and ``error`` so an agent sees a tool
result whatever happens.
"""

from __future__ import annotations

import json
from typing import Any

from warmstart.errors import WarmstartError
from warmstart.store import Store
from warmstart.templates import build_template, warm_history

ACTIONS = ("build", "list", "load", "delete")

WARM_SESSION_SCHEMA: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "warm_session",
        "description": (
            "Manage warm-start templates mined from past sessions. 'build' mines the session "
            "store into a template, 'list' shows templates, 'load' returns a template's warm "
            "history (worked tool-call examples) for a task, 'delete' removes a template."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "action": {"type": "string", "enum": list(ACTIONS)},
                "name": {"type": "string", "description": "Template name (build/load/delete)."},
                "task": {"type": "string", "description": "Task text to rank examples (load)."},
                "budget": {"type": "integer", "description": "Token budget (build/load)."},
                "task_type": {
                    "type": "string",
                    "enum": ["code", "file", "research", "mixed"],
                    "description": "Only sessions of this type (build) / filter (list).",
                },
                "tags": {"type": "array", "items": {"type": "string"}},
                "source": {"type": "string", "description": "Only sessions from this source."},
            },
            "required": ["action"],
            "additionalProperties": False,
        },
    },
}


def _fail(message: str) -> str:
    return json.dumps({"success": False, "error": message})


def _ok(**data: Any) -> str:
    return json.dumps({"success": True, "error": None, **data}, ensure_ascii=False, default=str)


def handle_warm_session(args: dict[str, Any] | str, db: str | None = None, **_: Any) -> str:
    """Run one ``warm_session`` action; always returns a JSON string."""
    if isinstance(args, str):
        try:
            args = json.loads(args or "{}")
        except ValueError:
            return _fail("arguments are not valid JSON")
    if not isinstance(args, dict):
        return _fail("arguments must be a JSON object")
    action = args.get("action")
    if action not in ACTIONS:
        return _fail(f"unknown action {action!r}; use one of {', '.join(ACTIONS)}")
    name = args.get("name")
    if action != "list" and not isinstance(name, str):
        return _fail(f"action {action!r} needs a template 'name'")
    budget = args.get("budget")
    if budget is not None and (not isinstance(budget, int) or budget <= 0):
        return _fail("'budget' must be a positive integer")
    tags = args.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        return _fail("'tags' must be a list of strings")
    try:
        if action == "build":
            tpl = build_template(
                str(name),
                db,
                task_type=args.get("task_type"),
                tags=tags,
                source=args.get("source"),
                budget=budget or 2000,
            )
            return _ok(
                name=tpl.name,
                version=tpl.version,
                examples=len(tpl.examples),
                tools=sorted({e.tool for e in tpl.examples}),
            )
        if action == "list":
            templates = Store(db).list_templates(args.get("task_type"), tags)
            return _ok(
                templates=[
                    {
                        "name": t.name,
                        "version": t.version,
                        "task_type": t.task_type,
                        "tags": t.tags,
                        "examples": t.example_count,
                        "uses": t.usage_count,
                    }
                    for t in templates
                ]
            )
        if action == "load":
            task = args.get("task")
            messages = warm_history(
                str(name),
                task=task if isinstance(task, str) else None,
                budget=budget,
                db=db,
                context="tool",
            )
            return _ok(name=name, messages=messages)
        count = Store(db).delete_template(str(name))
        return _ok(name=name, deleted_versions=count)
    except WarmstartError as exc:
        return _fail(str(exc))

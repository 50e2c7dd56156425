"""Decode OpenAI-format chat messages (dicts) into :class:`Message`, counting what is bad.

Shared by every source whose sessions are OpenAI messages (JSONL, τ-bench).
Content given as a list of parts keeps its text parts; ``arguments`` given as an
object is re-serialised to the JSON string OpenAI uses; arguments that are not
JSON are kept raw (the miner judges the call) and counted.
"""

from __future__ import annotations

import json
from typing import Any

from warmstart.model import ROLES, Message, ToolCallSpec
from warmstart.sources.base import IngestReport


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one (for optional nested objects)."""
    return value if isinstance(value, dict) else {}


def content_text(content: Any) -> str | None:
    """Text of a message content: a string, or the text parts of a list."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                if isinstance(text, str):
                    parts.append(text)
                elif part.get("type") in ("image_url", "image", "input_image"):
                    parts.append("[image]")
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)


def parse_tool_calls(raw: Any, report: IngestReport, where: str) -> list[ToolCallSpec]:
    """OpenAI ``tool_calls`` (a list, or JSON text of one) as specs; bad entries counted."""
    if raw is None or raw == "":
        return []
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            report.skip("tool_calls is not JSON", where)
            return []
    if not isinstance(raw, list):
        report.skip("tool_calls is not a list", where)
        return []
    specs: list[ToolCallSpec] = []
    for item in raw:
        if not isinstance(item, dict):
            report.skip("tool call is not an object", where)
            continue
        fn = as_dict(item.get("function")) or item
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            report.skip("tool call has no function name", where)
            continue
        args = fn.get("arguments", fn.get("input", "{}"))
        if isinstance(args, str):
            try:
                json.loads(args)
            except ValueError:
                report.skip("tool call arguments are not JSON", where)
        else:
            args = json.dumps(args, ensure_ascii=False, default=str)
        call_id = item.get("id") or item.get("call_id")
        if call_id is not None and not isinstance(call_id, str):
            call_id = str(call_id)
        if not call_id:
            report.skip("tool call has no id", where)
            call_id = None
        specs.append(ToolCallSpec(id=call_id, name=name, arguments=args))
    return specs


def parse_message(obj: Any, report: IngestReport, where: str) -> Message | None:
    """One message dict as a :class:`Message`, or ``None`` (counted) when unusable."""
    if not isinstance(obj, dict):
        report.skip("message is not an object", where)
        return None
    role = obj.get("role")
    if role == "function":
        role = "tool"
    if role == "developer":
        role = "system"
    if role not in ROLES:
        report.skip(f"unknown role {str(role)[:40]!r}", where)
        return None
    timestamp = obj.get("timestamp")
    return Message(
        role=role,
        content=content_text(obj.get("content")),
        tool_calls=parse_tool_calls(obj.get("tool_calls"), report, where)
        if role == "assistant"
        else [],
        tool_call_id=str(obj["tool_call_id"]) if obj.get("tool_call_id") is not None else None,
        name=obj.get("name") if isinstance(obj.get("name"), str) else None,
        timestamp=float(timestamp) if isinstance(timestamp, int | float) else None,
    )


def parse_messages(raw: Any, report: IngestReport, where: str) -> list[Message]:
    """A list of message dicts; unusable ones are counted and left out."""
    out = []
    for i, obj in enumerate(raw):
        msg = parse_message(obj, report, f"{where} message {i}")
        if msg is not None:
            out.append(msg)
    return out


def tool_names(tools: Any) -> list[str] | None:
    """Names from an OpenAI ``tools`` list (function schemas), or ``None``."""
    if not isinstance(tools, list):
        return None
    names = []
    for tool in tools:
        if isinstance(tool, dict):
            fn = as_dict(tool.get("function")) or tool
            name = fn.get("name")
            if isinstance(name, str):
                names.append(name)
        elif isinstance(tool, str):
            names.append(tool)
    return names

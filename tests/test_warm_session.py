"""The warm_session tool: schema, every action, and errors as JSON (never exceptions)."""

from __future__ import annotations

import json
from pathlib import Path

import warmstart
from warmstart.inject import validate_openai
from warmstart.integrations.warm_session import WARM_SESSION_SCHEMA, handle_warm_session


def call(args: object, db: str) -> dict[str, object]:
    out = handle_warm_session(args, db=db)  # type: ignore[arg-type]
    assert isinstance(out, str)
    return json.loads(out)  # type: ignore[no-any-return]


def test_schema_is_an_openai_tool() -> None:
    fn = WARM_SESSION_SCHEMA["function"]
    assert fn["name"] == "warm_session"
    assert fn["parameters"]["properties"]["action"]["enum"] == ["build", "list", "load", "delete"]


def test_actions_round_trip(sqlite_url: str, tau_sample: Path) -> None:
    warmstart.ingest(tau_sample, db=sqlite_url)
    built = call({"action": "build", "name": "air", "budget": 800}, sqlite_url)
    assert built["success"] is True and built["error"] is None and built["examples"]
    listed = call('{"action": "list"}', sqlite_url)
    assert [t["name"] for t in listed["templates"]] == ["air"]  # type: ignore[index]
    loaded = call({"action": "load", "name": "air", "task": "cancel"}, sqlite_url)
    validate_openai(loaded["messages"])  # type: ignore[arg-type]
    deleted = call({"action": "delete", "name": "air"}, sqlite_url)
    assert deleted["deleted_versions"] == 1


def test_errors_come_back_as_json(sqlite_url: str) -> None:
    cases = [
        ("{oops", "not valid JSON"),
        ([1, 2], "must be a JSON object"),
        ({"action": "explode"}, "unknown action"),
        ({"action": "load"}, "needs a template 'name'"),
        ({"action": "load", "name": "ghost"}, "no template 'ghost'"),
        ({"action": "build", "name": "../x"}, "must not contain"),
        ({"action": "load", "name": "x", "budget": -1}, "positive integer"),
    ]
    for args, message in cases:
        out = call(args, sqlite_url)
        assert out["success"] is False and message in str(out["error"]), (args, out)

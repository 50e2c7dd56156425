"""Pairing, judging, retries, recovery pairs, counts and classification of one session."""

from __future__ import annotations

import json

from warmstart.config import MiningConfig
from warmstart.mining.classify import classify
from warmstart.mining.miner import mine_session
from warmstart.model import Message, Session, ToolCallSpec


def call(cid: str | None, name: str, **args: object) -> ToolCallSpec:
    return ToolCallSpec(id=cid, name=name, arguments=json.dumps(args))


def asst(*calls: ToolCallSpec) -> Message:
    return Message("assistant", None, list(calls))


def tool(cid: str | None, content: str) -> Message:
    return Message("tool", content, tool_call_id=cid)


def session(*messages: Message, tools: list[str] | None = None) -> Session:
    return Session("test", "s1", list(messages), tools=tools)


CFG = MiningConfig()


def test_pairs_by_id_even_out_of_order() -> None:
    s = session(
        Message("user", "read two files"),
        asst(call("a", "read_file", path="x"), call("b", "read_file", path="y")),
        tool("b", "contents of y"),
        tool("a", "contents of x"),
    )
    calls, stats = mine_session(s, CFG)
    assert [(c.call_id, c.result, c.paired_by) for c in calls] == [
        ("a", "contents of x", "id"),
        ("b", "contents of y", "id"),
    ]
    assert calls[0].intent == "read two files"
    assert stats.calls == 2 and stats.failures == 0 and stats.first_success_turn == 0


def test_positional_fallback_is_recorded() -> None:
    s = session(asst(call(None, "read_file", path="x")), tool(None, "data"))
    calls, _ = mine_session(s, CFG)
    assert calls[0].paired_by == "position"
    assert calls[0].result == "data"


def test_unanswered_call_is_a_failure_with_evidence() -> None:
    s = session(asst(call("a", "read_file", path="x")), Message("assistant", "done"))
    calls, stats = mine_session(s, CFG)
    assert calls[0].paired_by == "none"
    assert (calls[0].ok, calls[0].error_kind) == (False, "no-result")
    assert stats.failures == 1


def test_recovery_pair_and_retry_link() -> None:
    s = session(
        Message("user", "pay"),
        asst(call("1", "book", amount=10)),
        tool("1", "Error: payment amount does not add up"),
        asst(call("2", "book", amount=15)),
        tool("2", '{"reservation_id": "ZFA04Y"}'),
    )
    calls, stats = mine_session(s, CFG)
    assert not calls[0].ok and calls[0].error_kind == "error-prefix"
    assert calls[0].recovered_by == 1
    assert calls[1].ok and calls[1].retry_of == 0
    assert stats.recoveries == 1 and stats.first_success_turn == 1


def test_recovery_window_is_respected() -> None:
    msgs: list[Message] = [asst(call("0", "book", a=1)), tool("0", "Error: no")]
    for i in range(1, 6):
        msgs += [asst(call(str(i), "other", i=i)), tool(str(i), "ok")]
    msgs += [asst(call("9", "book", a=2)), tool("9", "ok")]
    calls, _ = mine_session(session(*msgs), MiningConfig(recovery_window=3))
    assert calls[0].recovered_by is None
    calls, _ = mine_session(session(*msgs), MiningConfig(recovery_window=10))
    assert calls[0].recovered_by == 6


def test_bad_arguments_unknown_tools_trivial_and_truncation() -> None:
    s = session(
        asst(ToolCallSpec("1", "read_file", "{not json")),
        tool("1", "x" * 2000),
        asst(call("2", "launch_rockets")),
        tool("2", "ok"),
        asst(call("3", "memory", action="add")),
        tool("3", "saved"),
        tools=["read_file", "memory"],
    )
    calls, stats = mine_session(s, CFG)
    assert calls[0].error_kind == "bad-arguments" and not calls[0].args_valid
    assert len(calls[0].result or "") == 500 and calls[0].result_chars == 2000
    assert calls[1].error_kind == "unknown-tool"
    assert calls[2].trivial
    assert stats.calls == 2 and stats.failures == 2 and stats.distinct_tools == 2


def test_classification_uses_the_majority_rule() -> None:
    assert classify(["execute_code"] * 7 + ["read_file"] * 3, CFG) == "code"
    assert classify(["execute_code"] * 6 + ["read_file"] * 4, CFG) == "mixed"
    assert classify(["read_file", "write_file", "patch"], CFG) == "file"
    assert classify(["web_search", "browser_click", "browser_type"], CFG) == "research"
    assert classify([], CFG) == "mixed"
    custom = MiningConfig(categories={"code": ("get_user_details",)})
    assert classify(["get_user_details"] * 3, custom) == "code"

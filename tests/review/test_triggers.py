"""When reviews fire: user turns for memory, tool iterations for skills, resets."""

from __future__ import annotations

from typing import Any

from warmstart.review import Triggers, TurnStats


def turn(iterations: int = 0, *tools: str) -> TurnStats:
    return TurnStats(user_turns=1, tool_iterations=iterations, tools_called=frozenset(tools))


def test_memory_review_after_n_user_turns() -> None:
    triggers = Triggers(memory_every=3, skills_every=0)
    assert [triggers.observe(turn()) for _ in range(7)] == [
        None, None, "memory", None, None, "memory", None,
    ]  # fmt: skip


def test_skill_review_after_n_tool_iterations_across_turns() -> None:
    triggers = Triggers(memory_every=0, skills_every=10)
    assert triggers.observe(turn(4)) is None
    assert triggers.observe(turn(5)) is None
    assert triggers.observe(turn(1)) == "skills"
    assert triggers.iterations_since_skill == 0


def test_both_due_at_once_is_one_combined_review() -> None:
    triggers = Triggers(memory_every=1, skills_every=2)
    assert triggers.observe(turn(2)) == "both"


def test_counters_reset_when_the_agent_called_the_tool_itself() -> None:
    triggers = Triggers(memory_every=2, skills_every=3)
    assert triggers.observe(turn(2)) is None
    assert triggers.observe(turn(2, "memory", "skill_manage")) is None  # both would be due
    assert (triggers.turns_since_memory, triggers.iterations_since_skill) == (0, 0)
    assert triggers.observe(turn(2)) is None
    assert triggers.observe(turn(1)) == "both"


def test_zero_disables_a_trigger() -> None:
    triggers = Triggers(memory_every=0, skills_every=0)
    assert {triggers.observe(turn(50)) for _ in range(20)} == {None}


def test_stats_from_messages_count_requests_that_asked_for_tools() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "deploy"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "terminal", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": "memory", "arguments": "{}"}},
        ]},
        {"role": "tool", "tool_call_id": "a", "content": "ok"},
        {"role": "tool", "tool_call_id": "b", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]  # fmt: skip
    stats = TurnStats.from_messages(messages)
    assert stats == TurnStats(1, 1, frozenset({"terminal", "memory"}))

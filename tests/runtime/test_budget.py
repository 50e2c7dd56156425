"""Token counting and the example-preserving fallback shrinker."""

from __future__ import annotations

from typing import Any

from warmstart.runtime import count_tokens, drop_examples_to_fit
from warmstart.runtime.budget import split_examples
from warmstart.tokens import count_tokens as count_text


def call_msg(
    call_id: str, name: str = "read_file", arguments: str = '{"path": "a"}'
) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        ],
    }


def result_msg(call_id: str, content: str = "ok") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": "read_file", "content": content}


def example(i: int, recovery: bool = False) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": f"read file number {i}"}]
    if recovery:
        messages += [call_msg(f"f{i}"), result_msg(f"f{i}", "Error: no such file")]
    messages += [call_msg(f"c{i}"), result_msg(f"c{i}", "contents " * 10)]
    return messages


def test_count_tokens_counts_content_calls_and_overhead() -> None:
    assert count_tokens([]) == 0
    one = [{"role": "user", "content": "hello world"}]
    assert count_tokens(one) == 3 + 4 + 2
    bigger = [*one, call_msg("x")]
    assert count_tokens(bigger) > count_tokens(one) + 4
    # special-token text is ordinary text, never an error
    assert count_text("<|endoftext|>") > 1


def test_split_examples_keeps_calls_with_results() -> None:
    messages = [{"role": "system", "content": "s"}, *example(1, recovery=True), *example(2)]
    head, examples = split_examples(messages)
    assert head == [{"role": "system", "content": "s"}]
    assert [len(e) for e in examples] == [5, 3]


def test_split_examples_without_user_messages_splits_at_assistant() -> None:
    messages = [call_msg("a"), result_msg("a"), call_msg("b"), result_msg("b")]
    assert split_examples(messages)[1] == [messages[:2], messages[2:]]


def test_drop_examples_from_the_end() -> None:
    messages = example(1, recovery=True) + example(2) + example(3)
    one = count_tokens(example(1, recovery=True))
    kept = drop_examples_to_fit(messages, one + 5)
    assert kept == example(1, recovery=True)  # the recovery pair stays whole
    assert drop_examples_to_fit(messages, 10_000) == messages
    assert drop_examples_to_fit(messages, 5) == []


def test_every_kept_call_is_answered() -> None:
    messages = [m for i in range(8) for m in example(i, recovery=i % 2 == 0)]
    for budget in range(50, count_tokens(messages), 37):
        kept = drop_examples_to_fit(messages, budget)
        assert count_tokens(kept) <= budget
        calls = [c["id"] for m in kept for c in m.get("tool_calls", ())]
        answers = [m["tool_call_id"] for m in kept if m["role"] == "tool"]
        assert calls == answers
        assert kept == messages[: len(kept)]

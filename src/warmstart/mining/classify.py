"""Task type of a session: a category wins when it holds more than 60% of the calls."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from warmstart.config import MiningConfig


def classify(tools: Iterable[str], config: MiningConfig) -> str:
    """``code``, ``file``, ``research`` or ``mixed`` from the tools a session called."""
    counts: Counter[str] = Counter()
    total = 0
    for tool in tools:
        total += 1
        category = config.category_of(tool)
        if category:
            counts[category] += 1
    if not total or not counts:
        return "mixed"
    category, n = counts.most_common(1)[0]
    return category if n / total > config.majority else "mixed"

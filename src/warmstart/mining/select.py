"""Choose the examples that fill a token budget best.

Greedy over a score per example that rewards covering a tool not yet shown,
favours tools that often fail and, for those, recovery pairs (pitfall and fix),
penalises near-duplicates (same tool, same argument keys, same kind) and, given a
task text, adds BM25 relevance over the example's intent, tool and arguments.
With many examples only a shortlist is scored per pick (the most relevant, the
best per tool and the best overall), so a query stays fast on 100,000 examples.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import bm25s
import numpy as np
import Stemmer

from warmstart.model import Example

W_NEW_TOOL = 2.0
W_REPEAT_TOOL = 0.6
W_FAIL = 1.0
W_RECOVERY = 0.5
W_RECOVERY_FAIL = 1.0
W_RELEVANCE = 4.0
W_DUPLICATE = 1.5
W_TOKENS = 0.2
W_BUDGET_SHARE = 1.0
SHORTLIST_RELEVANT = 256
SHORTLIST_STATIC = 256
PER_TOOL_STATIC = 4

_TOKEN_RE = re.compile(r"(?u)\b\w\w+\b")
_STEMMER = Stemmer.Stemmer("english")


def _shape(ex: Example) -> str:
    try:
        args = json.loads(ex.arguments)
        keys = ",".join(sorted(args)) if isinstance(args, dict) else type(args).__name__
    except (ValueError, RecursionError):
        keys = "?"
    return f"{ex.tool}|{keys}|{'R' if ex.is_recovery else 'S'}"


def _doc(ex: Example) -> str:
    return " ".join((ex.intent, ex.tool.replace("_", " "), ex.arguments))


class Selector:
    """A reusable index over one template's examples; :meth:`select` answers queries."""

    def __init__(self, examples: Sequence[Example]) -> None:
        self.examples = list(examples)
        n = len(self.examples)
        tools = sorted({ex.tool for ex in self.examples})
        tool_ids = {t: i for i, t in enumerate(tools)}
        shapes: dict[str, int] = {}
        self.tool = np.array([tool_ids[ex.tool] for ex in self.examples], dtype=np.int64)
        self.shape = np.array(
            [shapes.setdefault(_shape(ex), len(shapes)) for ex in self.examples], dtype=np.int64
        )
        self.n_tools = len(tools)
        self.n_shapes = len(shapes)
        self.tokens = np.array([max(ex.tokens, 1) for ex in self.examples], dtype=np.int64)
        err = np.array([ex.tool_error_rate for ex in self.examples], dtype=np.float64)
        # A recovery whose failure was only inferred from a retry teaches less than
        # one whose result said what went wrong, so it counts half.
        rec = np.array(
            [
                (0.5 if ex.error_kind == "retry" else 1.0) if ex.is_recovery else 0.0
                for ex in self.examples
            ],
            dtype=np.float64,
        )
        median = float(np.median(self.tokens)) if n else 1.0
        self.static = (
            1.0
            + W_FAIL * err
            + rec * (W_RECOVERY + W_RECOVERY_FAIL * err)
            - W_TOKENS * self.tokens / max(median, 1.0)
        )
        order = np.argsort(-self.static, kind="stable") if n else np.array([], dtype=np.int64)
        self.top_static = order[:SHORTLIST_STATIC]
        per_tool: list[int] = []
        counts = np.zeros(self.n_tools, dtype=np.int64)
        for i in order:
            t = self.tool[i]
            if counts[t] < PER_TOOL_STATIC:
                counts[t] += 1
                per_tool.append(int(i))
        self.per_tool_static = np.array(per_tool, dtype=np.int64)
        self.retriever: bm25s.BM25 | None = None
        if n:
            corpus = bm25s.tokenize(
                [_doc(ex) for ex in self.examples],
                stopwords="en",
                stemmer=_STEMMER.stemWords,
                show_progress=False,
            )
            self.retriever = bm25s.BM25()
            self.retriever.index(corpus, show_progress=False)
            self.stopwords = set(bm25s.stopwords.STOPWORDS_EN)

    def relevance(self, task: str) -> np.ndarray:
        """BM25 scores of every example for ``task``, scaled to 0..1."""
        scores = np.zeros(len(self.examples), dtype=np.float64)
        if self.retriever is None:
            return scores
        words = [w for w in _TOKEN_RE.findall(task.lower()) if w not in self.stopwords]
        words = _STEMMER.stemWords(words)
        vocab = self.retriever.vocab_dict
        words = [w for w in words if w in vocab]
        if not words:
            return scores
        scores = np.asarray(self.retriever.get_scores(words), dtype=np.float64)
        top = float(scores.max()) if scores.size else 0.0
        return scores / top if top > 0 else scores

    def select(
        self, budget: int, task: str | None = None, max_examples: int | None = None
    ) -> list[Example]:
        """The examples to show, best first, whose tokens sum to at most ``budget``."""
        n = len(self.examples)
        if n == 0 or budget <= 0:
            return []
        rel_all = self.relevance(task) if task else None
        if n <= SHORTLIST_RELEVANT + SHORTLIST_STATIC:
            cand = np.arange(n)
        else:
            parts = [self.top_static, self.per_tool_static]
            if rel_all is not None:
                k = min(SHORTLIST_RELEVANT, n)
                parts.append(np.argpartition(-rel_all, k - 1)[:k])
            cand = np.unique(np.concatenate(parts))
        static = self.static[cand].copy()
        if rel_all is not None:
            static += W_RELEVANCE * rel_all[cand]
        tool = self.tool[cand]
        shape = self.shape[cand]
        tokens = self.tokens[cand]
        open_ = np.ones(len(cand), dtype=bool)
        tool_used = np.zeros(self.n_tools, dtype=np.float64)
        shape_used = np.zeros(self.n_shapes, dtype=np.float64)
        left = budget
        chosen: list[int] = []
        limit = max_examples or n
        while len(chosen) < limit:
            fits = open_ & (tokens <= left)
            if not fits.any():
                break
            score = (
                static
                + np.where(tool_used[tool] == 0, W_NEW_TOOL, -W_REPEAT_TOOL * tool_used[tool])
                - W_DUPLICATE * shape_used[shape]
                - W_BUDGET_SHARE * tokens / left
            )
            score = np.where(fits, score, -np.inf)
            best = int(np.argmax(score))
            chosen.append(int(cand[best]))
            open_[best] = False
            left -= int(tokens[best])
            tool_used[tool[best]] += 1
            shape_used[shape[best]] += 1
        return [self.examples[i] for i in chosen]

"""Planning a conversation's warm prefix: which template, how many tokens, or why cold.

:class:`WarmPlanner` answers once per conversation (the proxy and the Hermes plugin both
keep the answer for the conversation's later requests). It never raises for a template
or store problem: the conversation then runs cold, and :class:`WarmPlan` says why, so
the proxy can tell the client in a header instead of failing its request.

The context-window guard of :mod:`warmstart.runtime.context` decides whether a warm
history fits: a window below ``min_context`` means cold, and the history gets at most
``warm_share`` of the window (and at most the template's or the configured budget).
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from warmstart.errors import (
    ContextWindowTooSmall,
    InjectError,
    StoreError,
    TemplateError,
    WarmstartError,
)
from warmstart.model import Template

log = logging.getLogger("warmstart.proxy")

COLD_NO_TEMPLATE = "no-template"
COLD_AB = "ab"
COLD_CONTEXT = "context"
COLD_TEMPLATE_ERROR = "template-error"
COLD_STORE_ERROR = "store-error"
COLD_NOT_CHAT = "not-chat"

_WORD_RE = re.compile(r"(?u)\b\w\w+\b")


@dataclass(frozen=True)
class WarmPlan:
    """The warm prefix of one conversation, or the reason it has none.

    ``fragment`` is ``messages`` encoded as JSON without the brackets, made once so every
    request of the conversation carries the very same bytes.
    """

    messages: tuple[dict[str, Any], ...] = ()
    fragment: str = ""
    template: str | None = None
    version: int | None = None
    template_id: int | None = None
    examples: int = 0
    tokens: int = 0
    window: int | None = None
    reason: str | None = None

    @property
    def warm(self) -> bool:
        """Whether there is anything to inject."""
        return bool(self.messages)

    def header(self) -> str:
        """The ``X-Warmstart-Warm`` value: ``warm; template=NAME; ...`` or ``cold; reason=WHY``."""
        if self.warm:
            return (
                f"warm; template={self.template}; version={self.version}; "
                f"examples={self.examples}; tokens={self.tokens}"
            )
        return f"cold; reason={self.reason or COLD_NO_TEMPLATE}"

    def cold(self, reason: str) -> WarmPlan:
        """The same conversation sent cold for ``reason`` (its template kept for the record)."""
        return WarmPlan(template=self.template, version=self.version, reason=reason)


def cold(reason: str) -> WarmPlan:
    """A plan without a prefix."""
    return WarmPlan(reason=reason)


def task_text(messages: Sequence[Any]) -> str | None:
    """The first user message's text (text parts of multimodal content joined)."""
    for message in messages:
        if isinstance(message, dict) and message.get("role") == "user":
            return content_text(message.get("content"))
    return None


def content_text(content: Any) -> str | None:
    """Message content as plain text: strings as they are, text parts joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            p["text"]
            for p in content
            if isinstance(p, dict) and isinstance(p.get("text"), str) and p.get("type") == "text"
        ]
        return "\n".join(parts) if parts else None
    return None


def tool_names(tools: Any) -> list[str]:
    """Names of the tools a chat request offers (``tools`` and legacy ``functions``)."""
    names: list[str] = []
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        function = tool.get("function") if "function" in tool else tool
        if isinstance(function, dict) and isinstance(function.get("name"), str):
            names.append(function["name"])
    return names


class _Loaded:
    """One template version as planning uses it: examples, their index, tools and words."""

    def __init__(self, template: Template) -> None:
        self.template = template
        self.tools = frozenset(ex.tool for ex in template.examples)
        self.words = _words(
            " ".join(f"{ex.intent} {ex.tool.replace('_', ' ')}" for ex in template.examples)
        )
        self._selector: Any = None
        self._lock = threading.Lock()

    def selector(self) -> Any:
        """The example selector (its BM25 index is built on first use)."""
        with self._lock:
            if self._selector is None:
                from warmstart.mining.select import Selector

                self._selector = Selector(self.template.examples)
            return self._selector


class WarmPlanner:
    """Plans warm prefixes against one store; thread-safe, cheap to call per conversation.

    Template listings are cached for ``list_ttl`` seconds (a rebuilt template is picked
    up within that time) and window sizes per model for ``guard_ttl`` seconds (a probe
    costs an HTTP round trip or three).
    """

    def __init__(
        self,
        db: str | None = None,
        *,
        template: str | None = None,
        auto: bool = False,
        budget: int | None = None,
        warm_share: float = 0.10,
        context_length: int | None = None,
        min_context: int = 8192,
        base_url: str | None = None,
        usage_context: str = "proxy",
        list_ttl: float = 10.0,
        guard_ttl: float = 600.0,
    ) -> None:
        self.db = db
        self.template = template
        self.auto = auto
        self.budget = budget
        self.warm_share = warm_share
        self.context_length = context_length
        self.min_context = min_context
        self.base_url = base_url
        self.usage_context = usage_context
        self.list_ttl = list_ttl
        self.guard_ttl = guard_ttl
        self._lock = threading.Lock()
        self._listing: tuple[float, list[Template]] | None = None
        self._loaded_versions: dict[int, _Loaded] = {}
        self._windows: dict[str, tuple[float, int | ContextWindowTooSmall]] = {}

    # -- the one entry point ------------------------------------------------------------
    def plan(
        self,
        task: str | None,
        tools: Sequence[str] = (),
        model: str | None = None,
        api_key: str | None = None,
    ) -> WarmPlan:
        """The warm prefix for a conversation about ``task`` offering ``tools``."""
        try:
            return self._plan(task, tools, model or "", api_key)
        except ContextWindowTooSmall as exc:
            log.info("conversation goes cold: %s", exc)
            return cold(COLD_CONTEXT)
        except (TemplateError, InjectError) as exc:
            log.warning("conversation goes cold: template problem: %s", exc)
            return cold(COLD_TEMPLATE_ERROR)
        except StoreError as exc:
            log.warning("conversation goes cold: store problem: %s", exc)
            return cold(COLD_STORE_ERROR)
        except WarmstartError as exc:
            log.warning("conversation goes cold: %s", exc)
            return cold(COLD_TEMPLATE_ERROR)

    def _plan(
        self, task: str | None, tools: Sequence[str], model: str, api_key: str | None
    ) -> WarmPlan:
        # The same steps as :func:`warmstart.templates.warm_history`, on a template version
        # loaded once (the listing is cached, so a plan costs no query) and with the
        # examples' stored token counts instead of re-tokenizing the rendered messages.
        from warmstart.inject import ADDENDUM, render
        from warmstart.runtime.context import warm_budget

        meta = self._choose(task, tools)
        if meta is None:
            return cold(COLD_NO_TEMPLATE)
        window = self.window(model, api_key)
        budget = min(self.budget or meta.budget, warm_budget(window, self.warm_share))
        loaded = self._loaded(meta)
        # The addendum that leads the history counts against the budget too.
        examples = loaded.selector().select(budget - _addendum_tokens(), task)
        if not examples:
            log.info(
                "template %r has no example within %s tokens of a %s-token window; cold",
                meta.name,
                budget,
                window,
            )
            return WarmPlan(template=meta.name, version=meta.version, reason=COLD_CONTEXT)
        messages = render(examples, "openai", ADDENDUM)
        encoded = json.dumps(messages, ensure_ascii=False, separators=(",", ":"))
        return WarmPlan(
            messages=tuple(messages),
            fragment=encoded[1:-1],
            template=meta.name,
            version=meta.version,
            template_id=meta.id,
            examples=len(examples),
            tokens=_addendum_tokens() + sum(max(ex.tokens, 0) for ex in examples),
            window=window,
        )

    def record_use(self, plan: WarmPlan, task: str | None) -> None:
        """Count the use of the plan's template (least-used-first selection reads it)."""
        if not plan.warm or plan.template_id is None:
            return
        from warmstart.store import Store

        try:
            Store(self.db).record_usage(
                plan.template_id, task, plan.examples, plan.tokens, self.usage_context
            )
        except WarmstartError as exc:
            log.warning("could not record use of template %r: %s", plan.template, exc)

    # -- the context guard --------------------------------------------------------------
    def window(self, model: str, api_key: str | None = None) -> int:
        """The model's window via the runtime's guard, cached; raises ContextWindowTooSmall."""
        now = time.monotonic()
        with self._lock:
            hit = self._windows.get(model)
        if hit is not None and hit[0] > now:
            if isinstance(hit[1], ContextWindowTooSmall):
                raise hit[1]
            return hit[1]
        from warmstart.runtime.context import check_context

        answer: int | ContextWindowTooSmall
        try:
            answer = check_context(
                model,
                minimum=self.min_context,
                base_url=self.base_url,
                config_override=self.context_length,
                api_key=api_key,
            )
        except ContextWindowTooSmall as exc:
            answer = exc
        with self._lock:
            self._windows[model] = (now + self.guard_ttl, answer)
        if isinstance(answer, ContextWindowTooSmall):
            raise answer
        return answer

    # -- choosing a template ------------------------------------------------------------
    def templates(self) -> list[Template]:
        """Current template versions (metadata only), cached for ``list_ttl`` seconds."""
        now = time.monotonic()
        with self._lock:
            if self._listing is not None and self._listing[0] > now:
                return self._listing[1]
        from warmstart.store import Store

        listing = Store(self.db).list_templates()
        with self._lock:
            self._listing = (now + self.list_ttl, listing)
        return listing

    def _choose(self, task: str | None, tools: Sequence[str]) -> Template | None:
        listing = self.templates()
        if self.template:
            for meta in listing:
                if meta.name == self.template:
                    return meta
            raise TemplateError(f"no template {self.template!r} in the store")
        if not self.auto:
            return None
        return self.best(task, tools, listing)

    def best(
        self, task: str | None, tools: Sequence[str], listing: Sequence[Template] | None = None
    ) -> Template | None:
        """The template that fits a conversation best, or None when none fits.

        Scores, highest first: the share of a template's tools the client offers (a
        template teaching tools the client lacks would invite calls that cannot work,
        so with tools offered and none shared it is out), the share of the task's words
        the template's examples use, and a task-type match (from the offered tools).
        Ties go to the least used, then the newest template.
        """
        from warmstart.config import load_config
        from warmstart.mining.classify import classify

        listing = self.templates() if listing is None else listing
        offered = frozenset(tools)
        words = _words(task or "")
        task_type = classify(offered, load_config()) if offered else None
        ranked: list[tuple[float, int, int, Template]] = []
        for meta in listing:
            profile = self._loaded(meta)
            if offered:
                if not profile.tools & offered:
                    continue
                coverage = len(profile.tools & offered) / max(len(profile.tools), 1)
            else:
                coverage = 1.0
            overlap = len(words & profile.words) / len(words) if words else 0.0
            if task_type and meta.task_type == task_type:
                type_score = 1.0
            elif meta.task_type == "mixed" or not task_type:
                type_score = 0.5
            else:
                type_score = 0.0
            score = 2.0 * coverage + 2.0 * overlap + 0.5 * type_score
            ranked.append((-score, meta.usage_count, -meta.version, meta))
        if not ranked:
            return None
        ranked.sort(key=lambda r: r[:3])
        return ranked[0][3]

    def _loaded(self, meta: Template) -> _Loaded:
        """A template version's examples and index, loaded once (versions never change)."""
        key = meta.id if meta.id is not None else -1
        with self._lock:
            hit = self._loaded_versions.get(key)
        if hit is not None:
            return hit
        from warmstart.store import Store

        loaded = _Loaded(Store(self.db).load_template(meta.name, meta.version))
        with self._lock:
            if len(self._loaded_versions) > 64:
                self._loaded_versions.clear()
            return self._loaded_versions.setdefault(key, loaded)


def fits(plan: WarmPlan, messages: Sequence[Any], body_size: int, reserve: int = 0) -> bool:
    """Whether the plan's prefix, the request and ``reserve`` output tokens fit the window.

    A token is at least one byte of the JSON body, so a body no longer than the room left
    fits without counting; only near the limit are the messages counted exactly.
    """
    if not plan.warm or plan.window is None:
        return True
    room = plan.window - plan.tokens - max(reserve, 0)
    if body_size <= room:
        return True
    from warmstart.tokens import message_tokens

    return 3 + message_tokens([m for m in messages if isinstance(m, dict)]) <= room


def _words(text: str) -> frozenset[str]:
    """Stemmed content words, as the example selector's BM25 index sees them."""
    import bm25s

    stop = bm25s.stopwords.STOPWORDS_EN
    words = [w for w in _WORD_RE.findall(text.lower()) if w not in stop]
    return frozenset(_stemmer().stemWords(words)) if words else frozenset()


_ADDENDUM_TOKENS: list[int] = []


def _addendum_tokens() -> int:
    """Tokens of the system addendum that leads every warm history (counted once)."""
    if not _ADDENDUM_TOKENS:
        from warmstart.inject import ADDENDUM
        from warmstart.tokens import PER_MESSAGE, count_tokens

        _ADDENDUM_TOKENS.append(PER_MESSAGE + count_tokens(ADDENDUM))
    return _ADDENDUM_TOKENS[0]


_STEMMERS: dict[int, Any] = {}


def _stemmer() -> Any:
    """One PyStemmer instance per thread (they are not thread-safe)."""
    import Stemmer

    ident = threading.get_ident()
    stemmer = _STEMMERS.get(ident)
    if stemmer is None:
        stemmer = _STEMMERS[ident] = Stemmer.Stemmer("english")
    return stemmer

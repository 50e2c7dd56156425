"""Templates: build from the store, create from one session, pick, export, import.

A template's examples are a redacted candidate set chosen for tool coverage;
:func:`warm_history` then picks the ones that fit a token budget and, given a task
text, are most relevant to it. Rebuilding a name stores a new version and keeps
the old ones.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from warmstart.errors import TemplateError
from warmstart.inject import ADDENDUM, render, splice
from warmstart.mining.examples import Pool, collect_pool, materialize
from warmstart.mining.select import Selector
from warmstart.model import Example, Template
from warmstart.names import validate_name
from warmstart.store import SessionFilter, Store
from warmstart.tokens import message_tokens

EXPORT_FORMAT = "warmstart-template"
EXPORT_VERSION = 1
TASK_TYPES = ("code", "file", "research", "mixed")

# A template version's examples never change once stored (a rebuild is a new row),
# so its selector (and BM25 index) is cached per store URL, row id and creation time.
_SELECTORS: dict[tuple[str, int, float], tuple[Template, Selector]] = {}


def _selector(template: Template, db_url: str) -> Selector:
    if template.id is None:
        return Selector(template.examples)
    key = (db_url, template.id, template.created_at or 0.0)
    hit = _SELECTORS.get(key)
    if hit is None:
        if len(_SELECTORS) > 32:
            _SELECTORS.clear()
        hit = _SELECTORS[key] = (template, Selector(template.examples))
    return hit[1]


def _load(store: Store, name: str) -> tuple[Template, Selector]:
    """The current version of ``name`` and its selector, from cache when unchanged."""
    key = (store.url, *store.template_key(name))
    hit = _SELECTORS.get(key)
    if hit is None:
        template = store.load_template(name)
        _selector(template, store.url)
        hit = _SELECTORS[key]
    return hit


def _check_type(task_type: str | None) -> None:
    if task_type is not None and task_type not in TASK_TYPES:
        raise TemplateError(
            f"unknown task type {task_type!r}; choose one of {', '.join(TASK_TYPES)}"
        )


def _from_pool(
    name: str,
    pool: Pool,
    *,
    task_type: str | None,
    tags: Sequence[str],
    description: str,
    budget: int,
    max_examples: int,
    what: str,
) -> Template:
    if not pool.examples:
        raise TemplateError(
            f"no successful tool calls found in {what}; nothing to build template {name!r} from"
        )
    chosen = Selector(pool.examples).select(budget=10**9, max_examples=max_examples)
    if task_type is None:
        task_type = Counter(pool.task_types).most_common(1)[0][0] if pool.task_types else "mixed"
    return Template(
        name=name,
        examples=chosen,
        task_type=task_type,
        tags=sorted({t.strip() for t in tags if t.strip()}),
        description=description,
        budget=budget,
        source_sessions=sorted({ex.session_key for ex in chosen}),
        example_count=len(chosen),
    )


def build_template(
    name: str,
    db: str | None = None,
    *,
    source: str | None = None,
    task_type: str | None = None,
    tags: Sequence[str] = (),
    min_messages: int | None = None,
    max_sessions: int | None = None,
    budget: int = 2000,
    max_examples: int = 64,
    description: str = "",
) -> Template:
    """Mine the store into a new version of template ``name``."""
    validate_name(name)
    _check_type(task_type)
    store = Store(db)
    flt = SessionFilter(
        source=source, task_type=task_type, min_messages=min_messages, max_sessions=max_sessions
    )
    pool = collect_pool(store.iter_calls(flt))
    template = _from_pool(
        name,
        pool,
        task_type=task_type,
        tags=tags,
        description=description or f"built from {pool.sessions} sessions",
        budget=budget,
        max_examples=max_examples,
        what="the store" + (f" (source={source})" if source else ""),
    )
    return store.save_template(template)


def create_template(
    session_id: str,
    name: str,
    db: str | None = None,
    *,
    task_type: str | None = None,
    max_examples: int = 20,
    description: str = "",
    tags: Sequence[str] = (),
    budget: int = 2000,
) -> Template:
    """A template from the calls of one stored session."""
    validate_name(name)
    _check_type(task_type)
    store = Store(db)
    key = store.resolve_session(session_id)
    pool = collect_pool(store.iter_calls(SessionFilter(ids=[key])))
    template = _from_pool(
        name,
        pool,
        task_type=task_type,
        tags=tags,
        description=description or f"from session {key}",
        budget=budget,
        max_examples=max_examples,
        what=f"session {key}",
    )
    return store.save_template(template)


def warm_history(
    name: str,
    task: str | None = None,
    budget: int | None = None,
    db: str | None = None,
    fmt: str = "openai",
    addendum: str | None = ADDENDUM,
    record: bool = True,
    context: str = "library",
) -> Any:
    """Warm messages from template ``name`` for ``task``, within ``budget`` tokens."""
    store = Store(db)
    template, selector = _load(store, name)
    examples = selector.select(budget or template.budget, task)
    out = render(examples, fmt, addendum)
    if record and template.id is not None:
        tokens = message_tokens(out if isinstance(out, list) else to_list(out))
        store.record_usage(template.id, task, len(examples), tokens, context)
    return out


def to_list(out: Any) -> list[dict[str, Any]]:
    """Anthropic output as a flat list, for counting."""
    return list(out.get("messages", [])) if isinstance(out, dict) else list(out)


def inject_into_messages(
    template: str | Template,
    messages: Sequence[dict[str, Any]],
    task: str | None = None,
    budget: int | None = None,
    db: str | None = None,
) -> list[dict[str, Any]]:
    """``messages`` with the warm history after the leading system messages.

    The task text defaults to the first user message. The use is counted.
    """
    store = Store(db)
    if isinstance(template, str):
        tpl, selector = _load(store, template)
    else:
        tpl, selector = template, _selector(template, store.url)
    if task is None:
        task = next(
            (
                m["content"]
                for m in messages
                if m.get("role") == "user" and isinstance(m.get("content"), str)
            ),
            None,
        )
    examples = selector.select(budget or tpl.budget, task)
    warm = render(examples, "openai")
    if tpl.id is not None:
        store.record_usage(tpl.id, task, len(examples), message_tokens(warm), "inject")
    return splice(warm, messages)


def best_template(
    task_type: str | None = None, tags: Sequence[str] = (), db: str | None = None
) -> Template | None:
    """The template that best matches a task type and tags; least used first among equals."""
    candidates = Store(db).list_templates()
    if not candidates:
        return None
    wanted = set(tags)

    def rank(t: Template) -> tuple[float, int, int]:
        type_score = (
            2.0
            if task_type and t.task_type == task_type
            else (1.0 if t.task_type == "mixed" or not task_type else 0.0)
        )
        return (-(type_score + len(wanted & set(t.tags))), t.usage_count, -t.version)

    best = min(candidates, key=rank)
    if task_type and best.task_type not in (task_type, "mixed") and not wanted & set(best.tags):
        return None
    return Store(db).load_template(best.name, best.version)


def export_template(name: str, db: str | None = None, version: int | None = None) -> dict[str, Any]:
    """A JSON-ready export of one template version (examples already redacted)."""
    tpl = Store(db).load_template(name, version)
    return {
        "format": EXPORT_FORMAT,
        "format_version": EXPORT_VERSION,
        "name": tpl.name,
        "version": tpl.version,
        "task_type": tpl.task_type,
        "tags": tpl.tags,
        "description": tpl.description,
        "budget": tpl.budget,
        "source_sessions": tpl.source_sessions,
        "examples": [
            {
                "tool": ex.tool,
                "intent": ex.intent,
                "arguments": ex.arguments,
                "result": ex.result,
                "result_chars": ex.result_chars,
                "failed_arguments": ex.failed_arguments,
                "failed_result": ex.failed_result,
                "error_kind": ex.error_kind,
                "tool_error_rate": ex.tool_error_rate,
                "task_type": ex.task_type,
            }
            for ex in tpl.examples
        ],
    }


def import_template(
    data: dict[str, Any] | str | Path, db: str | None = None, name: str | None = None
) -> Template:
    """Import an export (dict, JSON text or file); examples are redacted again on the way in."""
    origin = "import"
    if isinstance(data, Path):
        origin = str(data)
        try:
            data = data.read_text(encoding="utf-8")
        except OSError as exc:
            raise TemplateError(f"{origin}: cannot read: {exc.strerror or exc}") from exc
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError as exc:
            raise TemplateError(f"{origin}: not JSON ({exc})") from exc
    if not isinstance(data, dict) or data.get("format") != EXPORT_FORMAT:
        raise TemplateError(f"{origin}: not a warmstart template export")
    raw = data.get("examples")
    if not isinstance(raw, list):
        raise TemplateError(f"{origin}: 'examples' must be a list")
    examples: list[Example] = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict) or not isinstance(item.get("tool"), str):
            raise TemplateError(f"{origin}: example {i} has no tool name")
        try:
            ex = Example(
                tool=item["tool"],
                intent=str(item.get("intent") or ""),
                arguments=str(item.get("arguments") or "{}"),
                result=str(item.get("result") or ""),
                result_chars=int(item.get("result_chars") or 0),
                failed_arguments=item.get("failed_arguments"),
                failed_result=item.get("failed_result"),
                error_kind=item.get("error_kind"),
                tool_error_rate=float(item.get("tool_error_rate") or 0.0),
                task_type=str(item.get("task_type") or "mixed"),
            )
        except (TypeError, ValueError) as exc:
            raise TemplateError(f"{origin}: example {i} is malformed ({exc})") from exc
        examples.append(materialize(ex))
    render(examples, "openai")  # validates arguments and pairing before anything is stored
    tpl_name = validate_name(name or str(data.get("name") or ""))
    task_type = str(data.get("task_type") or "mixed")
    _check_type(task_type)
    tags = data.get("tags") or []
    return Store(db).save_template(
        Template(
            name=tpl_name,
            examples=examples,
            task_type=task_type,
            tags=[str(t) for t in tags] if isinstance(tags, list) else [],
            description=str(data.get("description") or ""),
            budget=int(data.get("budget") or 2000),
            source_sessions=[str(s) for s in data.get("source_sessions") or []],
        )
    )

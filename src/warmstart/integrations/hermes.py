"""The Hermes Agent plugin: warm starts, the ``warm_session`` tool and the approval gate.

Hermes finds this module through the ``hermes_agent.plugins`` entry point and calls
:func:`register` once the user has run ``hermes plugins enable warmstart``. It registers:

* the ``warm_session`` tool (build / list / load / delete) in the ``skills`` toolset;
* a ``pre_llm_call`` hook that, on the first turn of a new session, plans the session's
  warm history from the configured template or the one that best matches the user's
  first message;
* an ``llm_request`` middleware that puts that history after the system prompt of every
  API request of the session. This is how Hermes' own ``prefill_messages`` work (after
  the system message, at API-call time, never saved to the session), but a plugin cannot
  set ``prefill_messages``: the installed Hermes reads them only from
  ``prefill_messages_file`` when an agent is built, and hooks never see the agent. The
  middleware hands Hermes the same messages on the same path, per session, and the same
  prefix on every request keeps the provider's prompt cache warm. With ``mode: context``
  (or a Hermes without middleware) the hook instead returns the examples as text, which
  Hermes appends to the first user message (also ephemeral and replayed byte for byte);
* when a gate URL is configured, a ``pre_tool_call`` hook that sends calls of tools
  matching the high-risk patterns to the approval gate and waits: the tool runs only
  after a person approves; a denial, an expiry or any failure blocks it (fail closed,
  because Hermes runs the tool when a hook raises).

Configuration: ``plugins.entries.warmstart`` in Hermes' ``config.yaml``, overridden by
``WARMSTART_HERMES_*`` environment variables (see ``docs/hermes-plugin.md``). The store
is ``db`` / ``$WARMSTART_DB`` (default: ``$WARMSTART_HOME``); the gate is ``gate_url`` /
``$WARMSTART_GATE_URL`` with ``$WARMSTART_GATE_TOKEN``.

Only the standard library is imported here; warmstart's own modules load on first use,
inside Hermes' process and virtualenv.
"""

from __future__ import annotations

import fnmatch
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("warmstart.hermes")

PLUGIN_NAME = "warmstart"
TOOLSET = "skills"
ENV_PREFIX = "WARMSTART_HERMES_"
MODES = ("prefill", "context", "off")
MAX_SESSIONS = 1024
CONTEXT_HEADER = (
    "Worked examples of tool calls that succeeded in earlier sessions (and mistakes that "
    "were then fixed). Follow their argument formats; they are examples, not requests."
)


@dataclass(frozen=True)
class PluginConfig:
    """Everything the plugin can be told; see :meth:`load` for where values come from."""

    db: str | None = None
    template: str | None = None
    mode: str = "prefill"
    budget: int | None = None
    context_length: int | None = None
    min_context: int = 8192
    gate_url: str | None = None
    gate_token: str | None = None
    high_risk: tuple[str, ...] | None = None
    gate_timeout: int = 300

    @classmethod
    def load(
        cls, entries: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
    ) -> PluginConfig:
        """Values from Hermes' ``plugins.entries.warmstart`` overridden by the environment.

        ``WARMSTART_HERMES_<KEY>`` overrides key ``<key>``; the store and the gate also
        honour warmstart's usual ``WARMSTART_DB``, ``WARMSTART_GATE_URL`` and
        ``WARMSTART_GATE_TOKEN``. ``high_risk`` is a list (or a comma-separated string)
        of ``fnmatch`` patterns: ``NAME`` matches tool names, ``NAME:ARGS`` also the
        tool's arguments as compact JSON (``terminal:*rm -rf*``).
        """
        env = os.environ if env is None else env
        values: dict[str, Any] = dict(entries or {})
        shared = {
            "db": "WARMSTART_DB",
            "gate_url": "WARMSTART_GATE_URL",
            "gate_token": "WARMSTART_GATE_TOKEN",
        }
        for key, name in shared.items():
            if env.get(name):
                values[key] = env[name]
        for key in cls.__dataclass_fields__:
            name = ENV_PREFIX + key.upper()
            if env.get(name):
                values[key] = env[name]
        unknown = set(values) - set(cls.__dataclass_fields__)
        if unknown:
            log.warning("warmstart plugin: ignoring unknown settings %s", sorted(unknown))
        return cls(
            db=_text(values.get("db")),
            template=_text(values.get("template")),
            mode=_mode(values.get("mode")),
            budget=_positive(values.get("budget"), "budget"),
            context_length=_positive(values.get("context_length"), "context_length"),
            min_context=_positive(values.get("min_context"), "min_context") or 8192,
            gate_url=_text(values.get("gate_url")),
            gate_token=_text(values.get("gate_token")),
            high_risk=_patterns(values.get("high_risk")),
            gate_timeout=_positive(values.get("gate_timeout"), "gate_timeout") or 300,
        )


def _text(value: Any) -> str | None:
    if value is None:
        return None
    return str(value).strip() or None


def _mode(value: Any) -> str:
    mode = str(value or "prefill").strip().lower()
    if mode not in MODES:
        log.warning("warmstart plugin: unknown mode %r; using prefill", value)
        return "prefill"
    return mode


def _positive(value: Any, key: str) -> int | None:
    if value is None or value == "":
        return None
    try:
        number = int(str(value).replace("_", ""))
    except ValueError:
        log.warning("warmstart plugin: %s must be a positive integer, got %r", key, value)
        return None
    return number if number > 0 else None


def _patterns(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = value.split(",") if isinstance(value, str) else list(value)
    return tuple(str(p).strip() for p in items if str(p).strip())


def matches(patterns: tuple[str, ...], tool: str, args: Any) -> str | None:
    """The first pattern a call matches (``NAME`` or ``NAME:ARGS``), or None."""
    encoded: str | None = None
    for pattern in patterns:
        name, sep, arg_pattern = pattern.partition(":")
        if not fnmatch.fnmatchcase(tool, name):
            continue
        if not sep:
            return pattern
        if encoded is None:
            encoded = json.dumps(args or {}, sort_keys=True, ensure_ascii=False, default=str)
        if fnmatch.fnmatchcase(encoded, arg_pattern):
            return pattern
    return None


def render_context(messages: Any) -> str:
    """Warm messages as text for ``pre_llm_call`` context: task, call and result per example."""
    lines = [CONTEXT_HEADER]
    number = 0
    for message in messages:
        role = message.get("role")
        if role == "user":
            number += 1
            lines.append(f"\nExample {number}. Task: {message.get('content') or ''}")
        elif role == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                lines.append(f"  Call: {function.get('name')}({function.get('arguments')})")
        elif role == "tool":
            lines.append(f"  Result: {message.get('content') or ''}")
    return "\n".join(lines)


class WarmstartPlugin:
    """The plugin's state: configuration, per-session warm plans, the lazy planner."""

    def __init__(self, config: PluginConfig) -> None:
        self.config = config
        self._plans: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()
        self._planner: Any = None
        self._high_risk: tuple[str, ...] | None = config.high_risk

    # -- the tool ---------------------------------------------------------------------
    def warm_session(self, args: Any, **_: Any) -> str:
        """The ``warm_session`` tool handler (never raises: Hermes shows the JSON)."""
        from warmstart.integrations.warm_session import handle_warm_session

        return handle_warm_session(args if args is not None else {}, db=self.config.db)

    # -- warm starts --------------------------------------------------------------------
    def planner(self) -> Any:
        """The warm planner (created on first use: it imports the store)."""
        with self._lock:
            if self._planner is None:
                from warmstart.proxy.warm import WarmPlanner

                c = self.config
                self._planner = WarmPlanner(
                    c.db,
                    template=c.template,
                    auto=c.template is None,
                    budget=c.budget,
                    context_length=c.context_length,
                    min_context=c.min_context,
                    usage_context="hermes",
                )
            return self._planner

    def plan_for(self, session_id: str) -> Any:
        """The warm plan of a session, or None when it has none yet."""
        with self._lock:
            plan = self._plans.get(session_id)
            if plan is not None:
                self._plans.move_to_end(session_id)
            return plan

    def start_session(self, session_id: str, task: str | None, model: str | None) -> Any:
        """Plan a new session's warm history (once) and remember it for its requests."""
        existing = self.plan_for(session_id)
        if existing is not None:
            return existing
        planner = self.planner()
        plan = planner.plan(task, (), model or "")
        if plan.warm:
            planner.record_use(plan, task)
            log.info(
                "warmstart: session %s starts warm from template %r (%d examples, %d tokens)",
                session_id,
                plan.template,
                plan.examples,
                plan.tokens,
            )
        else:
            log.info("warmstart: session %s starts cold (%s)", session_id, plan.reason)
        with self._lock:
            plan = self._plans.setdefault(session_id, plan)
            while len(self._plans) > MAX_SESSIONS:
                self._plans.popitem(last=False)
        return plan

    def pre_llm_call(
        self,
        session_id: str = "",
        user_message: Any = None,
        is_first_turn: bool = False,
        model: str = "",
        **_: Any,
    ) -> dict[str, str] | None:
        """Hook: plan the warm history on a session's first turn.

        Returns ``{"context": ...}`` (the examples as text) in ``context`` mode; in
        ``prefill`` mode the middleware injects the messages and this returns None.
        """
        if self.config.mode == "off" or not session_id or not is_first_turn:
            return None
        try:
            task = user_message if isinstance(user_message, str) else None
            plan = self.start_session(session_id, task, model)
        except Exception:  # a warm start is an extra; never break the agent's turn
            log.exception("warmstart: planning the warm history failed; the session runs cold")
            return None
        if self.config.mode == "context" and plan.warm:
            return {"context": render_context(plan.messages)}
        return None

    def llm_request(
        self, request: Any = None, session_id: str = "", **_: Any
    ) -> dict[str, Any] | None:
        """Middleware: the session's warm messages after the system prompt of each request."""
        if self.config.mode != "prefill" or not isinstance(request, dict):
            return None
        plan = self.plan_for(session_id) if session_id else None
        if plan is None or not plan.warm:
            return None
        messages = request.get("messages")
        if not isinstance(messages, list):
            log.debug("warmstart: request without chat messages (api mode?); not injected")
            return None
        from warmstart.inject import splice

        return {"request": {**request, "messages": splice(plan.messages, messages)}}

    # -- the approval gate --------------------------------------------------------------
    def high_risk(self) -> tuple[str, ...]:
        """The configured patterns, else the gate's own list of high-risk action names."""
        if self._high_risk is None:
            from warmstart.gate.settings import DEFAULT_HIGH_RISK

            self._high_risk = tuple(DEFAULT_HIGH_RISK)
        return self._high_risk

    def pre_tool_call(
        self,
        tool_name: str = "",
        args: Any = None,
        session_id: str = "",
        tool_call_id: str = "",
        **_: Any,
    ) -> dict[str, str] | None:
        """Hook: hold a high-risk call until the gate approves it; block it otherwise."""
        try:
            pattern = matches(self.high_risk(), tool_name, args)
            if pattern is None:
                return None
            return self._ask_gate(tool_name, args, session_id, tool_call_id, pattern)
        except Exception as exc:  # fail closed: Hermes would run the tool if this raised
            log.exception("warmstart: approval check for %s failed", tool_name)
            return {
                "action": "block",
                "message": f"BLOCKED: could not get approval for {tool_name} ({exc})",
            }

    def _ask_gate(
        self, tool: str, args: Any, session_id: str, tool_call_id: str, pattern: str
    ) -> dict[str, str] | None:
        from warmstart.gate.client import GateClient

        details = {
            "tool": tool,
            "arguments": args if isinstance(args, dict) else {},
            "session_id": session_id or None,
            "tool_call_id": tool_call_id or None,
            "matched": pattern,
            "agent": "hermes",
        }
        description = f"Hermes Agent wants to call {tool} (matches high-risk pattern {pattern})"
        log.info("warmstart: asking the approval gate before %s", tool)
        with GateClient(self.config.gate_url, self.config.gate_token) as client:
            decision = client.request(
                tool,
                description,
                details,
                self.config.gate_timeout,
                session_key=f"hermes:{session_id}" if session_id else None,
            )
            if decision.approved:
                client.consume(decision)
                log.info("warmstart: %s approved by %s", tool, decision.decided_by)
                return None
        why = f": {decision.reason}" if decision.reason else ""
        return {
            "action": "block",
            "message": f"BLOCKED by the approval gate: {tool} was {decision.status}{why}",
        }


def _hermes_entries() -> dict[str, Any]:
    """``plugins.entries.warmstart`` from Hermes' config, when Hermes can tell."""
    try:
        from hermes_cli.config import load_config

        config = load_config() or {}
        entries = ((config.get("plugins") or {}).get("entries") or {}).get(PLUGIN_NAME) or {}
        return dict(entries) if isinstance(entries, dict) else {}
    except Exception:  # outside Hermes, or an unreadable config: environment only
        return {}


def register(ctx: Any) -> WarmstartPlugin:
    """Hermes' entry point: register the tool, the warm-start hooks and the gate hook."""
    config = PluginConfig.load(_hermes_entries())
    plugin = WarmstartPlugin(config)
    from warmstart.integrations.warm_session import WARM_SESSION_SCHEMA

    ctx.register_tool(
        name="warm_session",
        toolset=TOOLSET,
        schema=WARM_SESSION_SCHEMA["function"],
        handler=plugin.warm_session,
        description="Warm-start templates mined from past sessions",
        emoji="🔥",
    )
    if config.mode != "off":
        if config.mode == "prefill" and not hasattr(ctx, "register_middleware"):
            log.warning("warmstart: this Hermes has no request middleware; using context mode")
            plugin.config = config = PluginConfig(**{**config.__dict__, "mode": "context"})
        ctx.register_hook("pre_llm_call", plugin.pre_llm_call)
        if config.mode == "prefill":
            ctx.register_middleware("llm_request", plugin.llm_request)
    if config.gate_url:
        ctx.register_hook("pre_tool_call", plugin.pre_tool_call)
    return plugin

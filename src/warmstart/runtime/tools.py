"""The tool registry, and how tools are executed: on a worker thread, under a timeout.

A tool is a name, an OpenAI function schema and a Python callable that takes the parsed
arguments as one ``dict`` (so a model that invents an extra key does not break the call
signature) and returns a ``str`` or any JSON-able value.

Every tool runs on a worker thread so a hung tool cannot hang the run: after its timeout
the runtime answers the model with an error and moves on. Python cannot kill a thread,
so the abandoned call keeps running in the background until it returns; tools with side
effects should carry their own deadlines too. Workers are reused (starting a thread costs
about 0.3 ms, handing work to an idle one about 0.05 ms, and the runtime's budget is 1 ms
a turn); a worker busy with a hung call is never handed new work, and idle workers exit
after a minute. A tool (or runtime) with no timeout runs on the caller's thread.
"""

from __future__ import annotations

import json
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from warmstart.errors import ConfigError

ToolFunction = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class Tool:
    """One registered tool.

    ``timeout`` overrides the runtime's default for this tool (None: use the default);
    ``needs_approval`` False skips the approval hook (read-only, harmless tools).
    """

    name: str
    schema: dict[str, Any]
    function: ToolFunction
    timeout: float | None = None
    needs_approval: bool = True


def _normalise_schema(
    name: str,
    schema: Mapping[str, Any] | None,
    description: str,
    parameters: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """Accept a full ``{"type": "function", "function": {...}}`` schema or its inner part."""
    if schema is None:
        function: dict[str, Any] = {
            "name": name,
            "description": description,
            "parameters": dict(parameters or {"type": "object", "properties": {}}),
        }
    else:
        function = dict(schema.get("function", schema))
        function.setdefault("name", name)
        function.setdefault("parameters", {"type": "object", "properties": {}})
    if function["name"] != name:
        raise ConfigError(f"tool {name!r}: schema names a different tool {function['name']!r}")
    return {"type": "function", "function": function}


@dataclass
class ToolRegistry:
    """Tools by name; the runtime offers a run the (whitelisted) schemas from here."""

    _tools: dict[str, Tool] = field(default_factory=dict)

    @classmethod
    def of(cls, tools: Iterable[Tool]) -> ToolRegistry:
        """A registry holding ``tools``."""
        registry = cls()
        for tool in tools:
            registry.add(tool)
        return registry

    def add(self, tool: Tool) -> Tool:
        """Register a :class:`Tool`; a duplicate name is a :class:`ConfigError`."""
        if tool.name in self._tools:
            raise ConfigError(f"tool {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        return tool

    def register(
        self,
        name: str,
        function: ToolFunction,
        *,
        description: str = "",
        parameters: Mapping[str, Any] | None = None,
        schema: Mapping[str, Any] | None = None,
        timeout: float | None = None,
        needs_approval: bool = True,
    ) -> Tool:
        """Register ``function`` under ``name`` with a schema built from the parts given."""
        tool = Tool(
            name=name,
            schema=_normalise_schema(name, schema, description, parameters),
            function=function,
            timeout=timeout,
            needs_approval=needs_approval,
        )
        return self.add(tool)

    def get(self, name: str) -> Tool | None:
        """The tool called ``name``, or None."""
        return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def names(self) -> list[str]:
        """Registered names, in registration order."""
        return list(self._tools)

    def schemas(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        """OpenAI tool schemas for ``names`` (all tools when None), registry order."""
        wanted = None if names is None else set(names)
        return [t.schema for t in self._tools.values() if wanted is None or t.name in wanted]


@dataclass(frozen=True)
class ToolOutcome:
    """What running one tool produced: text for the model, or an error and its kind."""

    ok: bool
    content: str
    error: str | None = None
    error_kind: str | None = None
    detail: str | None = None
    duration: float = 0.0


def render_result(value: Any) -> str:
    """A tool's return value as the text the model sees (JSON for non-strings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


class _Workers:
    """Daemon threads reused across tool calls; one job per worker at a time."""

    def __init__(self, idle_seconds: float = 60.0) -> None:
        self._idle: list[queue.SimpleQueue[Callable[[], None]]] = []
        self._lock = threading.Lock()
        self._idle_seconds = idle_seconds

    def submit(self, job: Callable[[], None], name: str) -> None:
        """Run ``job`` on an idle worker, or on a new one when all are busy (or hung)."""
        with self._lock:
            inbox = self._idle.pop() if self._idle else None
        if inbox is None:
            inbox = queue.SimpleQueue()
            worker = threading.Thread(target=self._work, args=(inbox,), name=name, daemon=True)
            worker.start()
        inbox.put(job)

    def _work(self, inbox: queue.SimpleQueue[Callable[[], None]]) -> None:
        while True:
            try:
                job = inbox.get(timeout=self._idle_seconds)
            except queue.Empty:
                with self._lock:
                    if inbox in self._idle:  # nobody picked us meanwhile: retire
                        self._idle.remove(inbox)
                        return
                continue  # a job is on its way
            job()
            with self._lock:
                self._idle.append(inbox)


_WORKERS = _Workers()


def run_tool(tool: Tool, arguments: dict[str, Any], timeout: float | None) -> ToolOutcome:
    """Call ``tool`` on a worker thread and wait at most ``timeout`` seconds.

    ``timeout`` None runs the tool on the calling thread instead: no deadline, and no
    thread handoff (about 0.05 ms idle, more on a loaded machine). Exceptions become
    failed outcomes (``Error: Type: message`` for the model, the traceback kept in
    ``detail``); a timeout abandons the call (see module docstring).
    """
    box: dict[str, Any] = {}
    done = threading.Event()

    def job() -> None:
        try:
            box["value"] = tool.function(arguments)
        except BaseException as exc:  # a tool's SystemExit must not end the run either
            box["error"] = exc
            box["traceback"] = traceback.format_exc()
        finally:
            done.set()

    started = time.perf_counter()
    if timeout is None:  # no deadline asked for: skip the thread handoff entirely
        job()
        finished = True
    else:
        _WORKERS.submit(job, f"warmstart-tool-{tool.name}")
        finished = done.wait(timeout)
    duration = time.perf_counter() - started
    if not finished:
        message = f"tool {tool.name!r} timed out after {timeout:g} s"
        return ToolOutcome(False, f"Error: {message}", message, "timeout", None, duration)
    if "error" in box:
        exc = box["error"]
        message = f"{type(exc).__name__}: {exc}"
        return ToolOutcome(
            False, f"Error: {message}", message, "exception", box["traceback"], duration
        )
    return ToolOutcome(True, render_result(box.get("value")), duration=duration)

"""BFCL multi-turn as an A/B environment, with the benchmark's own tools and state check.

Uses the ``bfcl-eval`` package (Berkeley Function Calling Leaderboard), which ships the
multi-turn tasks, their ground truth, the function docs and the executable tool classes
(``GorillaFileSystem``, ``TwitterAPI``, ``MathAPI``, ``TravelAPI``, ...). A task's user
turns are run one after another in one conversation; the tools are bound methods of
fresh class instances loaded with the task's initial state; after each turn the ground
truth calls are replayed on a second set of instances and BFCL's own
``state_checker`` and ``response_checker`` compare the two (turns whose ground truth is
empty must see no calls, as BFCL's irrelevance check requires). A task succeeds when
every turn passes.

``--tasks`` is ``CATEGORY``, ``CATEGORY:N`` (the first N tasks) or
``CATEGORY:ID,ID,...``; supported categories are :data:`CATEGORIES`
(``multi_turn_miss_func`` is not: it withholds functions until a later turn).

Installing: ``bfcl-eval==2026.3.23`` pins ``numpy==1.26.4`` and ``filelock==3.20.0``,
which conflict with warmstart's own pins, and pulls in torch through
sentence-transformers; so it is not a pip extra of warmstart. The multi-turn classes
need only the standard library and ``mpmath``, so install it beside warmstart with::

    pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0
"""

from __future__ import annotations

import copy
import importlib
import json
import uuid
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

from warmstart.evaluate.environments.base import Environment, Episode, Task
from warmstart.evaluate.errors import EnvironmentUnavailable
from warmstart.runtime import RunResult, ToolRegistry

CATEGORIES = ("multi_turn_base", "multi_turn_long_context", "multi_turn_miss_param")
INSTALL = "pip install --no-deps bfcl-eval==2026.3.23 mpmath==1.3.0"
_TYPES: dict[str, str | None] = {"dict": "object", "float": "number", "tuple": "array", "any": None}


@dataclass(frozen=True)
class Bfcl:
    """The parts of ``bfcl-eval`` the adapter uses."""

    data: Path
    class_modules: dict[str, str]
    doc_files: dict[str, str]
    stateless: frozenset[str]
    checker: ModuleType
    utils: ModuleType


def load_bfcl() -> Bfcl:
    """Import ``bfcl-eval``, or raise :class:`EnvironmentUnavailable` saying how to get it."""
    try:
        import bfcl_eval
        from bfcl_eval.constants import executable_backend_config as backend
        from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils
    except ImportError as exc:
        missing = getattr(exc, "name", None) or str(exc)
        raise EnvironmentUnavailable(
            f"the bfcl environment needs the bfcl-eval package, which is not installed "
            f"(cannot import {missing}); install it with: {INSTALL}"
        ) from exc
    return Bfcl(
        data=Path(bfcl_eval.__file__).parent / "data",
        class_modules=dict(backend.CLASS_FILE_PATH_MAPPING),
        doc_files=dict(backend.MULTI_TURN_FUNC_DOC_FILE_MAPPING),
        stateless=frozenset(backend.STATELESS_CLASSES),
        checker=multi_turn_checker,
        utils=multi_turn_utils,
    )


def to_json_schema(node: Any) -> Any:
    """A BFCL parameter doc as JSON Schema (``dict`` -> ``object``, ``float`` -> ``number``...)."""
    if isinstance(node, list):
        return [to_json_schema(n) for n in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "type" and isinstance(value, str):
            mapped = _TYPES.get(value, value)
            if mapped is not None:
                out[key] = mapped
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: to_json_schema(sub) for name, sub in value.items()}
        elif key in ("items", "additionalProperties"):
            out[key] = to_json_schema(value)
        else:
            out[key] = value
    return out


def _jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return [
            json.loads(line)
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()
        ]
    except (OSError, ValueError) as exc:
        raise EnvironmentUnavailable(f"cannot read BFCL data {path}: {exc}") from exc


def _data_file(data: Path, category: str, prefix: str = "") -> Path:
    folder = data / prefix if prefix else data
    found = sorted(folder.glob(f"BFCL_v*_{category}.json"))
    if not found:
        raise EnvironmentUnavailable(f"bfcl-eval has no data for category {category!r} in {folder}")
    return found[-1]


def _bfcl_text(value: Any) -> str:
    """A tool's return value as BFCL's own executor renders it (for its response check)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        try:
            return json.dumps(value)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


class BfclEpisode(Episode):
    """One attempt: fresh instances, their methods as tools, a per-turn state check."""

    def __init__(self, env: BfclEnvironment, task: Task) -> None:
        self.bfcl = env.bfcl
        self.task = task
        self.entry: dict[str, Any] = task.data["entry"]
        self.ground_truth: list[list[str]] = task.data["ground_truth"]
        self.long_context = env.long_context
        self.model_name = f"warmstart_{uuid.uuid4().hex}"
        self.instances: dict[str, Any] = {}
        for class_name in self.entry["involved_classes"]:
            module = importlib.import_module(self.bfcl.class_modules[class_name])
            instance = getattr(module, class_name)()
            if class_name not in self.bfcl.stateless:
                config = self.entry.get("initial_config", {}).get(class_name, {})
                instance._load_scenario(copy.deepcopy(config), long_context=self.long_context)
            self.instances[class_name] = instance
        self.results: list[str] = []
        self.turn_calls = 0
        self.checked = 0
        self.failure: str | None = None
        excluded = set(self.entry.get("excluded_function") or ())
        self.tools = ToolRegistry()
        for class_name, instance in self.instances.items():
            for doc in env.docs(class_name):
                name = doc.get("name")
                method = getattr(instance, str(name), None)
                if not name or name in excluded or name in self.tools or not callable(method):
                    continue
                self.tools.register(
                    name,
                    self._bind(method),
                    description=str(doc.get("description", "")),
                    parameters=to_json_schema(doc.get("parameters") or {"type": "dict"}),
                )
        self.system = task.system

    def _bind(self, method: Any) -> Any:
        def call(args: dict[str, Any]) -> Any:
            self.turn_calls += 1
            try:
                value = method(**args)
            except Exception as exc:
                self.results.append(f"Error during execution: {exc}")
                raise
            self.results.append(_bfcl_text(value))
            return value

        return call

    def after_turn(self, index: int, result: RunResult) -> None:
        """Replay this turn's ground truth and compare state and responses, as BFCL does."""
        calls, self.turn_calls = self.turn_calls, 0
        expected = self.ground_truth[index] if index < len(self.ground_truth) else []
        gt_results, gt_instances = self.bfcl.utils.execute_multi_turn_func_call(
            func_call_list=expected,
            initial_config=self.entry.get("initial_config", {}),
            involved_classes=self.entry["involved_classes"],
            model_name=self.model_name,
            test_entry_id=self.entry["id"],
            long_context=self.long_context,
            is_evaL_run=True,
        )
        self.checked += 1
        if self.failure is not None:
            return
        if not expected:
            if calls:
                self.failure = f"turn {index}: calls made where none were expected"
            return
        if not calls:
            self.failure = f"turn {index}: no calls made"
            return
        state = self.bfcl.checker.state_checker(self.instances, gt_instances)
        if not state.get("valid"):
            self.failure = f"turn {index}: {state.get('error_message')}"
            return
        response = self.bfcl.checker.response_checker(self.results, gt_results, index)
        if not response.get("valid"):
            self.failure = f"turn {index}: {response.get('error_message')}"

    def check(self) -> bool:
        return self.checked == len(self.task.turns) and self.failure is None

    def close(self) -> None:
        """Drop the ground-truth instances BFCL keeps in its module globals."""
        names = vars(self.bfcl.utils)
        for key in [k for k in names if k.startswith(self.model_name)]:
            del names[key]


class BfclEnvironment(Environment):
    """BFCL multi-turn tasks of one category."""

    name = "bfcl"

    def __init__(self, bfcl: Bfcl, category: str, tasks: list[Task]) -> None:
        self.bfcl = bfcl
        self.category = category
        self.long_context = "long_context" in category
        self.tasks = tasks

    @classmethod
    def from_spec(cls, spec: str) -> BfclEnvironment:
        """``CATEGORY``, ``CATEGORY:N`` or ``CATEGORY:ID,ID``; see the module docs."""
        bfcl = load_bfcl()
        category, _, which = spec.strip().removeprefix("bfcl:").partition(":")
        if category not in CATEGORIES:
            raise EnvironmentUnavailable(
                f"unsupported BFCL category {category!r}; choose from {', '.join(CATEGORIES)}"
            )
        entries = _jsonl(_data_file(bfcl.data, category))
        answers = {
            a["id"]: a["ground_truth"]
            for a in _jsonl(_data_file(bfcl.data, category, "possible_answer"))
        }
        if which.isdigit():
            entries = entries[: int(which)]
        elif which:
            wanted = [w.strip() for w in which.split(",") if w.strip()]
            by_id = {e["id"]: e for e in entries}
            missing = [w for w in wanted if w not in by_id]
            if missing:
                raise EnvironmentUnavailable(f"no BFCL task {missing[0]!r} in {category}")
            entries = [by_id[w] for w in wanted]
        tasks = []
        for entry in entries:
            turns = [
                "\n".join(m.get("content", "") for m in turn if m.get("role") == "user")
                for turn in entry["question"]
            ]
            tasks.append(
                Task(
                    id=entry["id"],
                    turns=turns,
                    data={"entry": entry, "ground_truth": answers.get(entry["id"], [])},
                )
            )
        if not tasks:
            raise EnvironmentUnavailable(f"no BFCL tasks selected by {spec!r}")
        return cls(bfcl, category, tasks)

    def docs(self, class_name: str) -> list[dict[str, Any]]:
        """The function docs of one tool class."""
        return _docs(self.bfcl.data, self.bfcl.doc_files[class_name])

    def episode(self, task: Task) -> BfclEpisode:
        return BfclEpisode(self, task)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "category": self.category}


@cache
def _docs(data: Path, file: str) -> list[dict[str, Any]]:
    return _jsonl(data / "multi_turn_func_doc" / file)

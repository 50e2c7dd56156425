"""A/B tool environments: a small registry of named factories.

A factory takes the ``--tasks`` argument (a file path, or a spec such as
``multi_turn_base:20`` for BFCL) and returns an :class:`Environment`. Built in:

* ``workspace``: file and code tools confined to a temporary directory, tasks from JSONL
  (:mod:`warmstart.evaluate.environments.workspace`);
* ``bfcl``: BFCL multi-turn tasks with the benchmark's own executable tool classes and
  state check; needs the ``bfcl-eval`` package
  (:mod:`warmstart.evaluate.environments.bfcl`).

Add your own with :func:`register_environment`.
"""

from __future__ import annotations

from collections.abc import Callable

from warmstart.evaluate.environments.base import Environment, Episode, Task
from warmstart.evaluate.errors import EnvironmentUnavailable

EnvironmentFactory = Callable[[str], Environment]

_FACTORIES: dict[str, EnvironmentFactory] = {}


def register_environment(name: str, factory: EnvironmentFactory, *, replace: bool = False) -> None:
    """Make ``factory`` available as ``--env NAME``; an existing name needs ``replace``."""
    if not name or not name.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"environment name {name!r} must be letters, digits, - or _")
    if name in _FACTORIES and not replace:
        raise ValueError(f"environment {name!r} is already registered")
    _FACTORIES[name] = factory


def unregister_environment(name: str) -> None:
    """Remove a registered environment (tests, plugins that replace a built-in)."""
    _FACTORIES.pop(name, None)


def environment_names() -> list[str]:
    """Registered environment names, sorted."""
    return sorted(_FACTORIES)


def load_environment(name: str, tasks: str) -> Environment:
    """Build environment ``name`` over ``tasks``; :class:`EnvironmentUnavailable` if it
    is unknown or cannot load (a missing optional package, a bad task file)."""
    factory = _FACTORIES.get(name)
    if factory is None:
        raise EnvironmentUnavailable(
            f"unknown environment {name!r}; choose from {', '.join(environment_names())}"
        )
    return factory(tasks)


def _workspace(tasks: str) -> Environment:
    from warmstart.evaluate.environments.workspace import WorkspaceEnvironment

    return WorkspaceEnvironment.from_file(tasks)


def _bfcl(tasks: str) -> Environment:
    from warmstart.evaluate.environments.bfcl import BfclEnvironment

    return BfclEnvironment.from_spec(tasks)


register_environment("workspace", _workspace)
register_environment("bfcl", _bfcl)

__all__ = [
    "Environment",
    "EnvironmentFactory",
    "EnvironmentUnavailable",
    "Episode",
    "Task",
    "environment_names",
    "load_environment",
    "register_environment",
    "unregister_environment",
]

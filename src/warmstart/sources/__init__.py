"""Log sources, auto-detected: Hermes ``state.db``, OpenAI chat JSONL, τ-bench trajectories.

Sources are registered by ``module:Class`` so a broken optional one never stops
the others from loading; :func:`register_source` adds a new log format.
"""

from __future__ import annotations

import importlib
from pathlib import Path

from warmstart.errors import SourceError, UnknownSourceError
from warmstart.sources.base import IngestReport, Source

_REGISTRY: dict[str, str] = {
    "hermes": "warmstart.sources.hermes:HermesSource",
    "tau-bench": "warmstart.sources.tau_bench:TauBenchSource",
    "openai-jsonl": "warmstart.sources.openai_jsonl:OpenAIJsonlSource",
}


def register_source(name: str, target: str) -> None:
    """Add a source given as ``"package.module:ClassName"``."""
    _REGISTRY[name] = target


def source_names() -> list[str]:
    """Every registered source name, in detection order."""
    return list(_REGISTRY)


def get_source(name: str) -> Source:
    """Instantiate the source called ``name``."""
    target = _REGISTRY.get(name)
    if target is None:
        raise UnknownSourceError(
            f"unknown source {name!r}; choose one of: {', '.join(source_names())}"
        )
    module, _, cls = target.partition(":")
    source: Source = getattr(importlib.import_module(module), cls)()
    return source


def detect_source(path: Path) -> Source:
    """The first source that recognises ``path``."""
    if not path.exists():
        raise SourceError(f"{path}: no such file")
    if path.is_dir():
        raise SourceError(f"{path}: is a directory; give a state.db, .jsonl or .json file")
    for name in _REGISTRY:
        source = get_source(name)
        if source.detect(path):
            return source
    raise UnknownSourceError(
        f"{path}: not a recognised session log (tried {', '.join(source_names())}); "
        "pass --source to force one"
    )


__all__ = [
    "IngestReport",
    "Source",
    "detect_source",
    "get_source",
    "register_source",
    "source_names",
]

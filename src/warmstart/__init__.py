"""warmstart: give tool-calling LLM agents experience from turn zero.

The public API. Ingest logs, build templates, and get a warm history::

    import warmstart
    warmstart.ingest("~/.hermes/state.db")
    warmstart.build_template("airline", budget=2000)
    messages = warmstart.warm_history("airline", task="change my flight", budget=1500)

Names load on first use, so importing ``warmstart`` (or a light submodule such as
the Hermes plugin) does not pull in the database, numpy or BM25 until needed.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS: dict[str, str] = {
    "ApprovalError": "warmstart.errors",
    "ConfigError": "warmstart.errors",
    "ContextWindowTooSmall": "warmstart.errors",
    "InjectError": "warmstart.errors",
    "InvalidNameError": "warmstart.errors",
    "SourceError": "warmstart.errors",
    "StoreError": "warmstart.errors",
    "TemplateError": "warmstart.errors",
    "WarmstartError": "warmstart.errors",
    "Example": "warmstart.model",
    "Message": "warmstart.model",
    "Session": "warmstart.model",
    "Template": "warmstart.model",
    "ToolCallSpec": "warmstart.model",
    "Store": "warmstart.store",
    "ingest": "warmstart.ingestion",
    "record_session": "warmstart.ingestion",
    "validate_anthropic": "warmstart.inject",
    "validate_openai": "warmstart.inject",
    "best_template": "warmstart.templates",
    "build_template": "warmstart.templates",
    "create_template": "warmstart.templates",
    "export_template": "warmstart.templates",
    "import_template": "warmstart.templates",
    "inject_into_messages": "warmstart.templates",
    "warm_history": "warmstart.templates",
}

__all__ = [
    "ApprovalError",
    "ConfigError",
    "ContextWindowTooSmall",
    "Example",
    "InjectError",
    "InvalidNameError",
    "Message",
    "Session",
    "SourceError",
    "Store",
    "StoreError",
    "Template",
    "TemplateError",
    "ToolCallSpec",
    "WarmstartError",
    "__version__",
    "best_template",
    "build_template",
    "create_template",
    "export_template",
    "import_template",
    "ingest",
    "inject_into_messages",
    "record_session",
    "validate_anthropic",
    "validate_openai",
    "warm_history",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'warmstart' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


if TYPE_CHECKING:
    from warmstart.errors import (
        ApprovalError,
        ConfigError,
        ContextWindowTooSmall,
        InjectError,
        InvalidNameError,
        SourceError,
        StoreError,
        TemplateError,
        WarmstartError,
    )
    from warmstart.ingestion import ingest, record_session
    from warmstart.inject import validate_anthropic, validate_openai
    from warmstart.model import Example, Message, Session, Template, ToolCallSpec
    from warmstart.store import Store
    from warmstart.templates import (
        best_template,
        build_template,
        create_template,
        export_template,
        import_template,
        inject_into_messages,
        warm_history,
    )

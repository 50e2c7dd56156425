"""warmstart: give tool-calling LLM agents experience from turn zero.

The public API. Ingest logs, build templates, and get a warm history::

    import warmstart
    warmstart.ingest("~/.hermes/state.db")
    warmstart.build_template("airline", budget=2000)
    messages = warmstart.warm_history("airline", task="change my flight", budget=1500)
"""

from __future__ import annotations

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
from warmstart.ingest import ingest, record_session
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

__version__ = "0.1.0"

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

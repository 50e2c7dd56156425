"""The BFCL adapter without BFCL: ``bfcl-eval`` cannot be installed beside warmstart's
pinned dependencies (it pins numpy 1.26.4), so the suite tests the import-error path and
the schema conversion only. The adapter itself is untested here; see docs/evaluate.md."""

from __future__ import annotations

import sys

import pytest

from warmstart.evaluate import EnvironmentUnavailable, environment_names, load_environment
from warmstart.evaluate.environments.bfcl import INSTALL, to_json_schema


def test_missing_package_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "bfcl_eval", None)  # import raises ImportError
    assert "bfcl" in environment_names()
    with pytest.raises(EnvironmentUnavailable) as caught:
        load_environment("bfcl", "multi_turn_base:5")
    message = str(caught.value)
    assert "needs the bfcl-eval package" in message and "bfcl_eval" in message
    assert INSTALL in message and "--no-deps bfcl-eval==2026.3.23" in INSTALL


def test_function_docs_become_json_schema() -> None:
    doc = {
        "type": "dict",
        "properties": {
            "folder": {"type": "string", "description": "where"},
            "ratio": {"type": "float"},
            "pair": {"type": "tuple", "items": {"type": "integer"}},
            "options": {"type": "dict", "properties": {"deep": {"type": "boolean"}}},
            "value": {"type": "any", "description": "anything"},
        },
        "required": ["folder"],
    }
    assert to_json_schema(doc) == {
        "type": "object",
        "properties": {
            "folder": {"type": "string", "description": "where"},
            "ratio": {"type": "number"},
            "pair": {"type": "array", "items": {"type": "integer"}},
            "options": {"type": "object", "properties": {"deep": {"type": "boolean"}}},
            "value": {"description": "anything"},
        },
        "required": ["folder"],
    }

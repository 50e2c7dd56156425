"""Templates: build, version, create from a session, pick, use, export and import."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import warmstart
from warmstart.errors import InvalidNameError, TemplateError
from warmstart.inject import validate_openai
from warmstart.store import Store
from warmstart.tokens import message_tokens


@pytest.fixture
def tau_store(tau_db_url: str) -> str:
    return tau_db_url


def test_build_versions_and_coverage(tau_store: str) -> None:
    tpl = warmstart.build_template("airline", tau_store, budget=2000, tags=["airline"])
    assert tpl.version == 1 and tpl.examples and tpl.task_type == "mixed"
    assert len({e.tool for e in tpl.examples}) == 14
    assert any(e.is_recovery for e in tpl.examples)
    again = warmstart.build_template("airline", tau_store)
    assert again.version == 2
    store = Store(tau_store)
    assert [t.version for t in store.list_templates(all_versions=True)] == [1, 2]
    assert store.load_template("airline").version == 2
    assert store.load_template("airline", 1).tags == ["airline"]
    store.delete_template("airline", 2)
    assert store.load_template("airline").version == 1


def test_warm_history_fits_budget_and_counts_usage(tau_store: str) -> None:
    warmstart.build_template("airline", tau_store)
    for budget in (300, 1000, 4000):
        msgs = warmstart.warm_history(
            "airline", task="change my flight", budget=budget, db=tau_store, addendum=None
        )
        validate_openai(msgs)
        assert 0 < message_tokens(msgs) <= budget
    assert Store(tau_store).load_template("airline").usage_count == 3


def test_task_text_changes_the_selection(tau_store: str) -> None:
    warmstart.build_template("airline", tau_store)
    a = warmstart.warm_history("airline", task="cancel my reservation", budget=400, db=tau_store)
    b = warmstart.warm_history("airline", task="add two checked bags", budget=400, db=tau_store)
    tools_a = [m["tool_calls"][0]["function"]["name"] for m in a if m.get("tool_calls")]
    intents_b = [m["content"] for m in b if m["role"] == "user"]
    assert "cancel_reservation" in tools_a[:2]
    assert "bag" in intents_b[0].lower()
    assert a != b


def test_create_from_one_session(tau_store: str) -> None:
    row = next(r for r in Store(tau_store).list_sessions() if r["n_calls"] - r["n_failures"] >= 4)
    tpl = warmstart.create_template(
        row["external_id"], "one", tau_store, max_examples=3, tags=["x"]
    )
    assert len(tpl.examples) == 3
    assert tpl.source_sessions == [row["id"]]
    with pytest.raises(Exception, match="no session"):
        warmstart.create_template("nope", "two", tau_store)


def test_inject_into_messages_and_best_template(tau_store: str) -> None:
    warmstart.build_template("airline", tau_store, tags=["airline"])
    warmstart.build_template("other", tau_store, tags=["misc"])
    convo = [{"role": "system", "content": "policy"}, {"role": "user", "content": "cancel it"}]
    out = warmstart.inject_into_messages("airline", convo, db=tau_store, budget=500)
    assert out[0] == convo[0] and out[-1] == convo[-1] and len(out) > 3
    validate_openai(out)
    best = warmstart.best_template(tags=["misc"], db=tau_store)
    assert best is not None and best.name == "other"
    # Least used first among equals: airline was used once, other never.
    best = warmstart.best_template(db=tau_store)
    assert best is not None and best.name == "other"
    assert warmstart.best_template(task_type="code", db=tau_store) is not None  # mixed fits


def test_export_import_roundtrip(tau_store: str, tmp_path: Path) -> None:
    warmstart.build_template("airline", tau_store, tags=["a"])
    data = warmstart.export_template("airline", tau_store)
    path = tmp_path / "t.json"
    path.write_text(json.dumps(data))
    tpl = warmstart.import_template(path, tau_store, name="copy")
    assert tpl.name == "copy" and len(tpl.examples) == len(data["examples"])
    assert [e.arguments for e in tpl.examples] == [e["arguments"] for e in data["examples"]]


@pytest.mark.parametrize(
    "payload",
    [
        "not json",
        json.dumps({"format": "other"}),
        json.dumps({"format": "warmstart-template", "name": "x", "examples": [{"tool": 3}]}),
        json.dumps({"format": "warmstart-template", "name": "../etc", "examples": []}),
    ],
)
def test_bad_imports_are_refused(payload: str, sqlite_url: str, tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(payload)
    with pytest.raises(TemplateError):
        warmstart.import_template(path, sqlite_url)
    assert Store(sqlite_url).list_templates() == []


@pytest.mark.parametrize("name", ["", "../x", "a/b", "a\\b", "x" * 65, "-lead", "sp ace", ".."])
def test_names_are_validated(name: str, sqlite_url: str) -> None:
    with pytest.raises(InvalidNameError):
        warmstart.build_template(name, sqlite_url)


def test_empty_store_build_is_a_clear_error(sqlite_url: str) -> None:
    with pytest.raises(TemplateError, match="no successful tool calls"):
        warmstart.build_template("empty", sqlite_url)
    with pytest.raises(TemplateError, match="no template 'ghost'"):
        warmstart.warm_history("ghost", db=sqlite_url)


def test_public_api_is_complete_sorted_and_lazy() -> None:
    import subprocess
    import sys

    assert warmstart.__all__ == sorted(warmstart.__all__, key=str)
    for name in warmstart.__all__:
        assert getattr(warmstart, name) is not None, name
    assert set(warmstart.__all__) <= set(dir(warmstart))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = warmstart.nope  # type: ignore[attr-defined]
    code = "import sys, warmstart; print('sqlalchemy' in sys.modules, 'numpy' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_a_replaced_template_is_not_served_from_a_stale_cache(sqlite_url: str) -> None:
    """SQLite may give a new template the id of a deleted one; the cache must notice."""

    def export(tool: str) -> dict[str, object]:
        return {
            "format": "warmstart-template",
            "name": "t",
            "examples": [{"tool": tool, "intent": "do it", "arguments": "{}", "result": "ok"}],
        }

    first = warmstart.import_template(export("alpha"), sqlite_url)
    before = warmstart.warm_history("t", db=sqlite_url, addendum=None)
    Store(sqlite_url).delete_template("t")
    second = warmstart.import_template(export("beta"), sqlite_url)
    after = warmstart.warm_history("t", db=sqlite_url, addendum=None)
    assert first.id == second.id  # the id really was reused
    assert before[1]["tool_calls"][0]["function"]["name"] == "alpha"
    assert after[1]["tool_calls"][0]["function"]["name"] == "beta"

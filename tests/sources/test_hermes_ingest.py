"""A Hermes state.db through the whole ingest: growth adds only what is new, on both backends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.sources.test_hermes import HandBuilt

import warmstart
from warmstart.store import Store


@pytest.fixture
def state_db(tmp_path: Path) -> Iterator[HandBuilt]:
    built = HandBuilt(tmp_path / "state.db")
    yield built
    built.close()


def test_grown_database_adds_only_what_is_new(state_db: HandBuilt, db_url: str) -> None:
    for sid in ("a", "b", "c"):
        state_db.session(sid, model="gpt-4o")
        state_db.exchange(sid, 2)
    first = warmstart.ingest(state_db.path, db=db_url)
    assert (first.source, first.added, first.calls, first.failures) == ("hermes", 3, 6, 0)

    same = warmstart.ingest(state_db.path, db=db_url)
    assert (same.added, same.updated, same.unchanged) == (0, 0, 3)

    state_db.message("b", "user", "one more")
    state_db.message(
        "b",
        "assistant",
        tool_calls=[
            {"id": "b_x", "type": "function", "function": {"name": "search", "arguments": "{}"}}
        ],
    )
    state_db.message("b", "tool", "Error: empty query", tool_call_id="b_x", tool_name="search")
    state_db.session("d")
    state_db.exchange("d", 1)
    grown = warmstart.ingest(state_db.path, db=db_url)
    assert (grown.added, grown.updated, grown.unchanged) == (1, 1, 2)

    store = Store(db_url)
    summary = store.summary()
    assert summary["sessions"] == 4 and summary["calls"] == 8 and summary["failures"] == 1
    b = store.get_session("hermes:b")
    assert b["n_messages"] == 11 and b["calls"][-1]["error_kind"] == "error-prefix"
    assert b["model"] == "gpt-4o"


def test_the_store_itself_is_not_mistaken_for_hermes(
    tmp_path: Path, sqlite_url: str, tau_sample: Path
) -> None:
    warmstart.ingest(tau_sample, db=sqlite_url)
    store_file = Path(sqlite_url.removeprefix("sqlite:///"))
    with pytest.raises(warmstart.SourceError, match="not a recognised session log"):
        warmstart.ingest(store_file, db=f"sqlite:///{tmp_path / 'other.db'}")

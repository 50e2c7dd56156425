"""Ingest end to end on the real τ-bench corpus, incremental re-ingest, and bad input."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import select

from warmstart.ingestion import ingest, record_session
from warmstart.model import Message, Session, ToolCallSpec
from warmstart.store import SessionFilter, Store
from warmstart.store.schema import tool_calls


def test_tau_bench_corpus_figures(db_url: str, tau_sample: Path) -> None:
    report = ingest(tau_sample, db=db_url)
    assert (report.source, report.added, report.calls) == ("tau-bench", 200, 1164)
    store = Store(db_url)
    summary = store.summary()
    assert summary["sessions"] == 200 and summary["calls"] == 1164
    assert summary["distinct_tools"] == 14
    with store.engine.connect() as conn:
        rows = conn.execute(select(tool_calls.c.result, tool_calls.c.ok)).all()
    error_results = [r for r in rows if (r.result or "").startswith("Error:")]
    assert len(error_results) == 73
    assert all(not r.ok for r in error_results)
    assert summary["failures"] >= 73
    assert summary["recovery_pairs"] > 0
    by_outcome = {
        o: sum(r["n_calls"] for r in store.list_sessions(SessionFilter()) if r["outcome"] == o)
        for o in (0.0, 1.0)
    }
    assert by_outcome == {0.0: 817, 1.0: 347}


def test_reingest_adds_nothing(db_url: str, tau_sample: Path) -> None:
    ingest(tau_sample, db=db_url)
    again = ingest(tau_sample, db=db_url)
    assert (again.added, again.updated, again.unchanged) == (0, 0, 200)
    assert Store(db_url).summary()["sessions"] == 200


def test_changed_session_is_updated_not_duplicated(sqlite_url: str, tmp_path: Path) -> None:
    line = {"id": "a", "messages": [{"role": "user", "content": "hi"}]}
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(line) + "\n")
    ingest(path, db=sqlite_url)
    line["messages"].append({"role": "assistant", "content": "hello"})
    path.write_text(json.dumps(line) + "\n" + json.dumps(dict(line, id="b")) + "\n")
    report = ingest(path, db=sqlite_url)
    assert (report.added, report.updated, report.unchanged) == (1, 1, 0)
    assert Store(sqlite_url).get_session("openai-jsonl:a")["n_messages"] == 2


def test_bad_input_is_counted_and_nothing_is_lost(
    sqlite_url: str, tau_sample: Path, tmp_path: Path
) -> None:
    ingest(tau_sample, db=sqlite_url)
    before = Store(sqlite_url).summary()
    bad = tmp_path / "bad.jsonl"
    hostile = "\x00\ud800 '; DROP TABLE sessions; -- " + "x" * 300_000
    bad.write_text(
        "\n".join(
            [
                "{broken",
                json.dumps(
                    {
                        "id": "h",
                        "messages": [
                            {"role": "user", "content": hostile},
                            {
                                "role": "assistant",
                                "tool_calls": [
                                    {"id": "dup", "function": {"name": "f", "arguments": "{}"}},
                                    {"id": "dup", "function": {"name": "f", "arguments": "nope"}},
                                ],
                            },
                            {"role": "tool", "tool_call_id": "dup", "content": "ok"},
                            {"role": "tool", "tool_call_id": "dup", "content": "Error: second"},
                        ],
                    },
                    ensure_ascii=True,
                ),
            ]
        ),
        encoding="utf-8",
        errors="surrogatepass",
    )
    report = ingest(bad, db=sqlite_url)
    assert report.added == 1 and report.skipped["line is not JSON"] == 1
    after = Store(sqlite_url).summary()
    assert after["sessions"] == before["sessions"] + 1
    data = Store(sqlite_url).get_session("openai-jsonl:h")
    assert [c["paired_by"] for c in data["calls"]] == ["id", "id"]
    assert [c["ok"] for c in data["calls"]] == [True, False]
    assert data["messages"][0]["content_chars"] == len(hostile)


def test_truncated_sqlite_input_is_an_error_not_a_traceback(
    sqlite_url: str, tmp_path: Path
) -> None:
    src = tmp_path / "state.db"
    conn = sqlite3.connect(src)
    conn.execute("CREATE TABLE t (x)")
    conn.executemany("INSERT INTO t VALUES (?)", [("x" * 1000,)] * 200)
    conn.commit()
    conn.close()
    data = src.read_bytes()
    src.write_bytes(data[: len(data) // 3])
    from warmstart.errors import SourceError

    with pytest.raises(SourceError):
        ingest(src, db=sqlite_url)


def test_record_session_stores_a_runtime_session(db_url: str) -> None:
    s = Session(
        "warmstart-eval",
        "run-1",
        [
            Message("user", "add"),
            Message("assistant", None, [ToolCallSpec("c", "calc", '{"x": 1}')]),
            Message("tool", "2", tool_call_id="c"),
        ],
        metadata={"arm": "warm"},
    )
    stats = record_session(s, db_url)
    assert stats.calls == 1 and stats.failures == 0
    row = Store(db_url).get_session("warmstart-eval:run-1")
    assert row["metadata"] == {"arm": "warm"}

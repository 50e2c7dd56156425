"""The Hermes source against a real Hermes ``state.db`` and hand-built damaged ones."""

from __future__ import annotations

import importlib.util
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from warmstart.errors import SourceError
from warmstart.model import Message, Session, ToolCallSpec
from warmstart.sources.base import IngestReport
from warmstart.sources.hermes import (
    JSON_PREFIX,
    MAX_CONTENT_CHARS,
    HermesSource,
    decode_content,
    drop_compaction_copies,
)

# -- helpers ------------------------------------------------------------------


def read(
    path: Path, known: dict[str, str] | None = None, source: HermesSource | None = None
) -> tuple[list[Session], IngestReport]:
    report = IngestReport()
    sessions = list((source or HermesSource()).iter_sessions(path, report, known or {}))
    return sessions, report


def by_id(sessions: list[Session]) -> dict[str, Session]:
    return {s.external_id: s for s in sessions}


def call(cid: str, name: str, args: str) -> ToolCallSpec:
    return ToolCallSpec(id=cid, name=name, arguments=args)


def openai_call(cid: str, name: str, args: Any) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


# A small Hermes-shaped schema: the columns this source reads, as hermes-agent 0.19.0
# declares them, plus the index Hermes has on messages(session_id, ...).
SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, system_prompt TEXT,
    parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    title TEXT, cwd TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT, tool_call_id TEXT, tool_calls TEXT, tool_name TEXT,
    timestamp REAL NOT NULL, active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_messages_session ON messages(session_id, timestamp);
INSERT INTO schema_version VALUES (22);
"""


class HandBuilt:
    """Writes Hermes-shaped rows directly, for cases Hermes' own API cannot produce."""

    def __init__(self, path: Path, schema: str = SCHEMA, wal: bool = True) -> None:
        self.path = path
        self.con = sqlite3.connect(path, isolation_level=None)
        self.con.execute("PRAGMA synchronous=OFF")
        if wal:
            self.con.execute("PRAGMA journal_mode=WAL")
        self.con.executescript(schema)
        self.clock = 1000.0

    def session(self, sid: str, **cols: Any) -> None:
        cols = {"source": "cli", "started_at": 10.0, **cols}
        names = ", ".join(["id", *cols])
        marks = ", ".join("?" * (len(cols) + 1))
        self.con.execute(f"INSERT INTO sessions ({names}) VALUES ({marks})", [sid, *cols.values()])

    def message(self, sid: str, role: Any, content: Any = None, **cols: Any) -> int:
        self.clock += 1
        cols = {"timestamp": self.clock, **cols}
        if isinstance(cols.get("tool_calls"), list):
            cols["tool_calls"] = json.dumps(cols["tool_calls"])
        names = ", ".join(["session_id", "role", "content", *cols])
        marks = ", ".join("?" * (len(cols) + 3))
        cur = self.con.execute(
            f"INSERT INTO messages ({names}) VALUES ({marks})",
            [sid, role, content, *cols.values()],
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

    def exchange(self, sid: str, n: int, size: int = 0) -> None:
        """``n`` rounds of user turn, tool call, tool result, answer."""
        for i in range(n):
            cid = f"{sid}_c{i}"
            self.message(sid, "user", f"question {i} " + "x" * size)
            self.message(
                sid, "assistant", tool_calls=[openai_call(cid, "search", f'{{"q": "{i}"}}')]
            )
            self.message(
                sid, "tool", f"result {i} " + "y" * size, tool_call_id=cid, tool_name="search"
            )
            self.message(sid, "assistant", f"answer {i}")

    def close(self) -> None:
        self.con.close()


@pytest.fixture
def db(tmp_path: Path) -> Iterator[HandBuilt]:
    built = HandBuilt(tmp_path / "state.db")
    yield built
    built.close()


# -- real Hermes ----------------------------------------------------------------

HERMES_SCRIPT = textwrap.dedent(
    r"""
    import json, sys
    from pathlib import Path
    from hermes_state import SessionDB

    db = SessionDB(Path(sys.argv[1]))

    def call(cid, name, args, **extra):
        return {"id": cid, "type": "function",
                "function": {"name": name, "arguments": args}, **extra}

    def add(sid, role, content=None, ts=None, **kw):
        return db.append_message(sid, role, content, timestamp=ts, **kw)

    # A CLI session: a call that works, one that fails (Codex-style extra keys and
    # object arguments), a multimodal message stored as "\x00json:".
    db.create_session("s_ok", "cli", model="gpt-4o", system_prompt="You are Hermes.",
                      cwd="/home/u/proj")
    add("s_ok", "user", "List the files", 1000.0)
    add("s_ok", "assistant", None, 1001.0,
        tool_calls=[call("call_1", "terminal", '{"command": "ls"}')],
        finish_reason="tool_calls")
    add("s_ok", "tool", "a.txt\nb.txt", 1002.0, tool_name="terminal", tool_call_id="call_1")
    add("s_ok", "assistant", "Reading it.", 1003.0,
        tool_calls=[call("call_2", "read_file", {"path": "missing.txt"},
                         call_id="call_2", response_item_id="fc_9")])
    add("s_ok", "tool", "Error: file not found: missing.txt", 1004.0,
        tool_name="read_file", tool_call_id="call_2")
    add("s_ok", "user", [{"type": "text", "text": "Here is a screenshot"},
                         {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}],
        1005.0)
    add("s_ok", "assistant", "Done.", 1006.0)
    db.set_session_title("s_ok", "List files")
    db.end_session("s_ok", "cli_close")

    # A session that ended in an error.
    db.create_session("s_err", "telegram", model="claude-sonnet")
    add("s_err", "user", "hi", 2000.0)
    db.end_session("s_err", "error")

    # In-place compaction: the original rows become active=0, compacted=1; the
    # compressed transcript (head copy, summary, tail copy with a pruned result)
    # becomes the live rows; the conversation then goes on.
    summary = ("[CONTEXT COMPACTION \u2014 REFERENCE ONLY] Earlier turns were compacted "
               "into the summary below.\nThe user asked about weather twice.")
    db.create_session("s_cmp", "cli", model="gpt-4o")
    add("s_cmp", "user", "weather in Paris?", 3000.0)
    add("s_cmp", "assistant", None, 3001.0, tool_calls=[call("w1", "weather", '{"city": "Paris"}')])
    add("s_cmp", "tool", "18C sunny", 3002.0, tool_name="weather", tool_call_id="w1")
    add("s_cmp", "user", "and Rome?", 3003.0)
    add("s_cmp", "assistant", None, 3004.0, tool_calls=[call("w2", "weather", '{"city": "Rome"}')])
    add("s_cmp", "tool", "Error: upstream timeout", 3005.0, tool_name="weather", tool_call_id="w2")
    add("s_cmp", "assistant", "Rome is not available right now.", 3006.0)
    db.archive_and_compact("s_cmp", [
        {"role": "user", "content": "weather in Paris?", "timestamp": 3000.0},
        {"role": "assistant", "content": summary},
        {"role": "assistant", "content": None, "timestamp": 3004.0,
         "tool_calls": [call("w2", "weather", '{"city": "Rome"}')]},
        {"role": "tool", "content": "[Old tool output cleared]", "tool_name": "weather",
         "tool_call_id": "w2", "timestamp": 3005.0},
    ])
    add("s_cmp", "user", "try Rome again", 3010.0)
    add("s_cmp", "assistant", None, 3011.0, tool_calls=[call("w3", "weather", '{"city": "Rome"}')])
    add("s_cmp", "tool", "21C cloudy", 3012.0, tool_name="weather", tool_call_id="w3")

    # Rotation compaction (Hermes' default): the parent ends with "compression" and
    # the child starts with the compressed transcript.
    db.create_session("s_par", "cli", model="gpt-4o")
    add("s_par", "user", "find flights", 4000.0)
    add("s_par", "assistant", None, 4001.0, tool_calls=[call("f1", "search", '{"to": "NYC"}')])
    add("s_par", "tool", "3 flights", 4002.0, tool_name="search", tool_call_id="f1")
    add("s_par", "assistant", "Found 3.", 4003.0)
    db.end_session("s_par", "compression")
    db.create_session("s_child", "cli", model="gpt-4o", parent_session_id="s_par")
    db.replace_messages("s_child", [
        {"role": "user", "content": "find flights", "timestamp": 4000.0},
        {"role": "user", "content": summary},
        {"role": "assistant", "content": None, "timestamp": 4001.0,
         "tool_calls": [call("f1", "search", '{"to": "NYC"}')]},
        {"role": "tool", "content": "3 flights", "tool_name": "search", "tool_call_id": "f1",
         "timestamp": 4002.0},
        {"role": "assistant", "content": "Found 3.", "timestamp": 4003.0},
    ])
    add("s_child", "user", "book the first", 4010.0)
    add("s_child", "assistant", None, 4011.0, tool_calls=[call("f2", "book", '{"n": 1}')])
    add("s_child", "tool", "booked", 4012.0, tool_name="book", tool_call_id="f2")

    # /rewind: the user takes a turn back; its rows stay with active=0, compacted=0.
    db.create_session("s_rew", "cli", model="gpt-4o")
    add("s_rew", "user", "delete tmp", 5000.0)
    rewound = add("s_rew", "user", "delete everything", 5001.0)
    add("s_rew", "assistant", None, 5002.0,
        tool_calls=[call("d1", "terminal", '{"command": "rm -rf /"}')])
    add("s_rew", "tool", "Error: refused", 5003.0, tool_name="terminal", tool_call_id="d1")
    db.rewind_to_message("s_rew", rewound)
    add("s_rew", "user", "delete only tmp", 5004.0)

    rows = [list(r) for r in db._conn.execute("SELECT id, session_id FROM messages ORDER BY id")]
    names = ("s_ok", "s_err", "s_cmp", "s_par", "s_child", "s_rew")
    sessions = {s: db.get_session(s) for s in names}
    print(json.dumps({"sessions": sessions, "rows": rows}))
    db.close()
    """
)


@pytest.fixture(scope="module")
def hermes_db(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """A state.db written by hermes-agent 0.19.0's own ``SessionDB``."""
    python = os.environ.get("WARMSTART_HERMES_PYTHON", "")
    if not python or not Path(python).exists():
        reason = (
            "real Hermes test needs hermes-agent 0.19.0 in its own virtualenv; "
            "run `make test` (it sets WARMSTART_HERMES_PYTHON)"
        )
        print(reason)
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("hermes")
    path = tmp / "state.db"
    env = {**os.environ, "HERMES_HOME": str(tmp / "home")}
    done = subprocess.run(
        [python, "-c", HERMES_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return path, json.loads(done.stdout.strip().splitlines()[-1])


def fingerprint(made: dict[str, Any], sid: str) -> str:
    ids = [mid for mid, owner in made["rows"] if owner == sid]
    return f"{len(ids)}:{max(ids)}"


def test_real_hermes_db_is_detected(hermes_db: tuple[Path, dict[str, Any]]) -> None:
    path, _ = hermes_db
    assert HermesSource().detect(path)


def test_real_hermes_session_fields(hermes_db: tuple[Path, dict[str, Any]]) -> None:
    path, made = hermes_db
    sessions, report = read(path)
    got = by_id(sessions)
    assert sorted(got) == ["s_child", "s_cmp", "s_err", "s_ok", "s_par", "s_rew"]
    assert dict(report.skipped) == {}
    info = made["sessions"]["s_ok"]
    assert got["s_ok"] == Session(
        source="hermes",
        external_id="s_ok",
        messages=[
            Message("system", "You are Hermes."),
            Message("user", "List the files", timestamp=1000.0),
            Message(
                "assistant",
                None,
                [call("call_1", "terminal", '{"command": "ls"}')],
                timestamp=1001.0,
            ),
            Message("tool", "a.txt\nb.txt", [], "call_1", "terminal", 1002.0),
            Message(
                "assistant",
                "Reading it.",
                [call("call_2", "read_file", '{"path": "missing.txt"}')],
                timestamp=1003.0,
            ),
            Message(
                "tool", "Error: file not found: missing.txt", [], "call_2", "read_file", 1004.0
            ),
            Message("user", "Here is a screenshot\n[image]", timestamp=1005.0),
            Message("assistant", "Done.", timestamp=1006.0),
        ],
        tools=None,
        outcome=None,
        model="gpt-4o",
        started_at=info["started_at"],
        ended_at=info["ended_at"],
        end_reason="cli_close",
        title="List files",
        origin=str(path),
        fingerprint=fingerprint(made, "s_ok"),
        metadata={"hermes_source": "cli", "schema_version": 22, "cwd": "/home/u/proj"},
    )
    err = got["s_err"]
    assert (err.outcome, err.end_reason, err.model, err.title) == (
        0.0,
        "error",
        "claude-sonnet",
        None,
    )
    assert err.metadata == {"hermes_source": "telegram", "schema_version": 22}
    assert err.messages == [Message("user", "hi", timestamp=2000.0)]
    assert err.started_at == made["sessions"]["s_err"]["started_at"]
    assert err.key == "hermes:s_err"


def test_real_hermes_in_place_compaction_keeps_each_call_once(
    hermes_db: tuple[Path, dict[str, Any]],
) -> None:
    """Archived originals are kept; the summary and the copies around it are not."""
    path, made = hermes_db
    cmp = by_id(read(path)[0])["s_cmp"]
    assert [(m.role, m.content, m.tool_calls, m.tool_call_id) for m in cmp.messages] == [
        ("user", "weather in Paris?", [], None),
        ("assistant", None, [call("w1", "weather", '{"city": "Paris"}')], None),
        ("tool", "18C sunny", [], "w1"),
        ("user", "and Rome?", [], None),
        ("assistant", None, [call("w2", "weather", '{"city": "Rome"}')], None),
        ("tool", "Error: upstream timeout", [], "w2"),
        ("assistant", "Rome is not available right now.", [], None),
        ("user", "try Rome again", [], None),
        ("assistant", None, [call("w3", "weather", '{"city": "Rome"}')], None),
        ("tool", "21C cloudy", [], "w3"),
    ]
    assert cmp.metadata["compaction_dropped"] == 4
    assert cmp.metadata["inactive_messages"] == 7
    assert cmp.fingerprint == fingerprint(made, "s_cmp")


def test_real_hermes_rotation_child_drops_parent_copies(
    hermes_db: tuple[Path, dict[str, Any]],
) -> None:
    path, made = hermes_db
    got = by_id(read(path)[0])
    child, parent = got["s_child"], got["s_par"]
    assert [(m.role, m.content, m.tool_calls) for m in child.messages] == [
        ("user", "book the first", []),
        ("assistant", None, [call("f2", "book", '{"n": 1}')]),
        ("tool", "booked", []),
    ]
    assert child.metadata == {
        "hermes_source": "cli",
        "schema_version": 22,
        "parent_session_id": "s_par",
        "compaction_dropped": 5,
    }
    assert [m.tool_calls for m in parent.messages if m.tool_calls] == [
        [call("f1", "search", '{"to": "NYC"}')]
    ]
    assert parent.end_reason == "compression"
    assert child.fingerprint == fingerprint(made, "s_child")


def test_real_hermes_rewound_calls_are_kept(hermes_db: tuple[Path, dict[str, Any]]) -> None:
    """A rewound turn's tool call really ran: it stays, with its error result."""
    path, _ = hermes_db
    rew = by_id(read(path)[0])["s_rew"]
    assert [m.content for m in rew.messages] == [
        "delete tmp",
        "delete everything",
        None,
        "Error: refused",
        "delete only tmp",
    ]
    assert rew.metadata["inactive_messages"] == 3
    assert "compaction_dropped" not in rew.metadata


def test_real_hermes_reread_with_fingerprints_yields_nothing(
    hermes_db: tuple[Path, dict[str, Any]],
) -> None:
    path, _ = hermes_db
    first, _ = read(path)
    again, report = read(path, {s.key: s.fingerprint for s in first})
    assert again == []
    assert report.unchanged == 6


# -- schema variants ------------------------------------------------------------

V30_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
INSERT INTO schema_version VALUES (30);
CREATE TABLE system_prompts (hash TEXT PRIMARY KEY, prompt TEXT NOT NULL);
CREATE TABLE sessions (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, model TEXT, system_prompt_hash TEXT,
    parent_session_id TEXT, started_at REAL NOT NULL, ended_at REAL, end_reason TEXT,
    goal_json TEXT, workspace_key TEXT
);
CREATE TABLE messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT NULL, role TEXT NOT NULL,
    content TEXT, tool_call_id TEXT, tool_calls TEXT, timestamp REAL,
    provenance TEXT, tokens_json TEXT
);
"""


def test_v30_shaped_db(tmp_path: Path) -> None:
    """System prompt by hash, unknown columns ignored, missing ones read as None."""
    built = HandBuilt(tmp_path / "v30.db", V30_SCHEMA)
    built.con.execute("INSERT INTO system_prompts VALUES ('h1', 'You are v30.')")
    built.session("a", model="m", system_prompt_hash="h1", goal_json="{}", end_reason="user_exit")
    built.session("b", system_prompt_hash="missing")
    built.message("a", "user", "go", provenance="typed")
    built.message("a", "assistant", None, tool_calls=[openai_call("c1", "t", "{}")])
    built.message("a", "tool", "ok", tool_call_id="c1", tokens_json="[]")
    built.message("b", "user", "hello", timestamp=None)
    built.close()
    got = by_id(read(tmp_path / "v30.db")[0])
    a, b = got["a"], got["b"]
    assert a.messages == [
        Message("system", "You are v30."),
        Message("user", "go", timestamp=1001.0),
        Message("assistant", None, [call("c1", "t", "{}")], timestamp=1002.0),
        Message("tool", "ok", [], "c1", None, 1003.0),
    ]
    assert (a.title, a.end_reason, a.model) == (None, "user_exit", "m")
    assert a.metadata == {"hermes_source": "cli", "schema_version": 30}
    assert b.messages == [Message("user", "hello", timestamp=None)]


def test_messages_table_without_optional_columns(tmp_path: Path) -> None:
    built = HandBuilt(
        tmp_path / "bare.db",
        "CREATE TABLE sessions (id TEXT PRIMARY KEY, source TEXT);"
        "CREATE TABLE messages (session_id TEXT, role TEXT, content TEXT);",
        wal=False,
    )
    built.con.execute("INSERT INTO messages VALUES ('x', 'user', 'hi'), ('x', 'assistant', 'yo')")
    built.close()
    source = HermesSource()
    assert source.detect(tmp_path / "bare.db")
    (session,), _ = read(tmp_path / "bare.db")
    assert session.messages == [Message("user", "hi"), Message("assistant", "yo")]
    assert session.fingerprint == "2:2"  # rowids stand in for the missing id column
    assert session.metadata == {"hermes_source": None, "schema_version": None}


def test_detect_rejects_other_files(tmp_path: Path) -> None:
    text = tmp_path / "notes.db"
    text.write_text("SQLite format 2 is not this\n")
    other = tmp_path / "other.db"
    sqlite3.connect(other).executescript("CREATE TABLE t (x);").close()
    store = tmp_path / "warmstart.db"
    sqlite3.connect(store).executescript(
        "CREATE TABLE sessions (id TEXT); CREATE TABLE messages (session_id TEXT, role TEXT);"
        "CREATE TABLE warmstart_migrations (name TEXT);"
    ).close()
    source = HermesSource()
    assert not source.detect(text)
    assert not source.detect(other)
    assert not source.detect(store)
    assert not source.detect(tmp_path / "absent.db")


# -- content ------------------------------------------------------------------


def test_json_content_is_decoded(db: HandBuilt) -> None:
    db.session("s")
    parts = [
        {"type": "text", "text": "one"},
        {"type": "image_url"},
        {"type": "text", "text": "two"},
    ]
    db.message("s", "user", JSON_PREFIX + json.dumps(parts))
    db.message("s", "user", JSON_PREFIX + json.dumps({"type": "text", "text": "solo"}))
    db.message("s", "user", JSON_PREFIX + '"just a string"')
    db.message("s", "user", JSON_PREFIX + "{broken")
    db.message("s", "tool", JSON_PREFIX + json.dumps({"rows": 2}), tool_call_id="c")
    (session,), report = read(db.path)
    assert [m.content for m in session.messages] == [
        "one\n[image]\ntwo",
        "solo",
        "just a string",
        "{broken",
        '{"rows": 2}',
    ]
    assert report.skipped == {"content is not JSON after the \\x00json: prefix": 1}


def test_huge_content_is_cut_and_counted(db: HandBuilt) -> None:
    db.session("s")
    db.message("s", "tool", "z" * (MAX_CONTENT_CHARS + 10), tool_call_id="c")
    (session,), report = read(db.path)
    assert len(session.messages[0].content or "") == MAX_CONTENT_CHARS
    assert report.skipped == {"content truncated": 1}


text_parts = st.lists(st.text(max_size=30), max_size=5)


@given(text_parts)
def test_decoded_parts_join_their_text(texts: list[str]) -> None:
    parts = [{"type": "text", "text": t} for t in texts]
    assert decode_content(JSON_PREFIX + json.dumps(parts)) == "\n".join(texts)


@given(st.text())
def test_plain_text_is_unchanged(text: str) -> None:
    if not text.startswith(JSON_PREFIX):
        assert decode_content(text) == text


@given(st.one_of(st.text(), st.binary(), st.integers(), st.floats(allow_nan=False), st.none()))
def test_decode_never_raises(value: object) -> None:
    out = decode_content(value)
    assert out is None or isinstance(out, str)
    if isinstance(value, str):
        assert decode_content(JSON_PREFIX + value) is not None or value.strip() == "null"


def test_deeply_nested_json_content_does_not_raise() -> None:
    assert decode_content(JSON_PREFIX + "[" * 100_000) == "[" * 100_000


# -- bad rows -------------------------------------------------------------------


def test_bad_tool_calls_and_roles_are_counted_not_fatal(db: HandBuilt) -> None:
    db.session("s")
    db.message("s", "user", "start")
    bad_json = db.message("s", "assistant", "thinking", tool_calls="{not json")
    db.message(
        "s",
        "assistant",
        None,
        tool_calls=[
            openai_call("c1", "shell", "ls -la"),  # arguments not JSON: kept raw
            openai_call("c2", "read", {"path": "a"}),  # object: becomes a JSON string
            {"id": "c3", "function": {"arguments": "{}"}},  # no name: dropped
            {"call_id": "c4", "function": {"name": "codex", "arguments": '{"a": 1'}},
            "not a call",
            {"type": "function", "function": {"name": "anon"}},  # no id, no arguments
        ],
    )
    critic = db.message("s", "critic", "I disagree")
    db.message("s", 7, "numeric role")
    db.message("s", "tool", "ok", tool_call_id=42, tool_name=None, timestamp="oops")
    (session,), report = read(db.path)
    assert session.messages == [
        Message("user", "start", timestamp=1001.0),
        Message("assistant", "thinking", timestamp=1002.0),
        Message(
            "assistant",
            None,
            [
                call("c1", "shell", "ls -la"),
                call("c2", "read", '{"path": "a"}'),
                call("c4", "codex", '{"a": 1'),
                ToolCallSpec(None, "anon", "{}"),
            ],
            timestamp=1003.0,
        ),
        Message("tool", "ok", [], "42", None, None),
    ]
    assert report.skipped == {
        "tool_calls is not JSON": 1,
        "tool call arguments are not JSON": 2,
        "tool call has no function name": 1,
        "tool call is not an object": 1,
        "tool call has no id": 1,
        "unknown role 'critic'": 1,
        "unknown role '7'": 1,
    }
    assert f"session s message {bad_json}: tool_calls is not JSON" in report.examples
    assert f"session s message {critic}: unknown role 'critic'" in report.examples


def test_messages_without_session_are_counted(db: HandBuilt) -> None:
    db.con.executescript(
        "CREATE TABLE m2 AS SELECT * FROM messages;"
        "DROP TABLE messages;"
        "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT, role TEXT,"
        " content TEXT, timestamp REAL);"
    )
    db.con.execute("INSERT INTO messages (session_id, role, content) VALUES (NULL, 'user', 'a')")
    db.con.execute("INSERT INTO messages (session_id, role, content) VALUES (NULL, 'user', 'b')")
    db.con.execute("INSERT INTO messages (session_id, role, content) VALUES ('s', 'user', 'c')")
    sessions, report = read(db.path)
    assert [s.external_id for s in sessions] == ["s"]
    assert report.skipped == {"message without session id": 2}


# -- streaming and growth --------------------------------------------------------


def test_growth_yields_only_changed_sessions(db: HandBuilt) -> None:
    for sid in ("a", "b", "c"):
        db.session(sid)
        db.exchange(sid, 2)
    first, _ = read(db.path)
    known = {s.key: s.fingerprint for s in first}
    assert known == {"hermes:a": "8:8", "hermes:b": "8:16", "hermes:c": "8:24"}
    db.message("b", "user", "one more")
    db.session("d")
    db.exchange("d", 1)
    second, report = read(db.path, known)
    assert [(s.external_id, s.fingerprint) for s in second] == [("b", "9:25"), ("d", "4:29")]
    assert second[0].messages[-1] == Message("user", "one more", timestamp=1025.0)
    assert report.unchanged == 2


def test_few_changes_in_a_large_db_read_per_session(db: HandBuilt) -> None:
    """The indexed per-session path gives the same sessions as the full scan."""
    for i in range(40):
        db.session(f"s{i:02}")
        db.exchange(f"s{i:02}", 1)
    full, _ = read(db.path)
    db.message("s07", "assistant", "late reply")
    known = {s.key: s.fingerprint for s in full}
    (changed,), report = read(db.path, known)
    assert report.unchanged == 39
    assert changed.external_id == "s07"
    assert changed.messages[:-1] == by_id(full)["s07"].messages
    assert changed.messages[-1].content == "late reply"


def test_interleaved_sessions_are_assembled(db: HandBuilt) -> None:
    """A gateway writes several sessions at once: their rows interleave."""
    db.session("x")
    db.session("y")
    for i in range(3):
        db.message("x", "user", f"x{i}")
        db.message("y", "user", f"y{i}")
    db.message("x", "assistant", "x done")
    sessions, _ = read(db.path)
    assert [s.external_id for s in sessions] == ["y", "x"]  # in order of last row
    got = by_id(sessions)
    assert [m.content for m in got["x"].messages] == ["x0", "x1", "x2", "x done"]
    assert [m.content for m in got["y"].messages] == ["y0", "y1", "y2"]


def test_stopping_early_releases_the_database(tmp_path: Path) -> None:
    """The read transaction holds a shared lock; closing the stream must release it."""
    built = HandBuilt(tmp_path / "journal.db", wal=False)
    for sid in ("a", "b"):
        built.session(sid)
        built.exchange(sid, 1)
    built.con.execute("PRAGMA busy_timeout = 0")
    stream = HermesSource().iter_sessions(built.path, IngestReport(), {})
    assert isinstance(stream, types.GeneratorType)
    next(stream)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        built.con.execute("BEGIN EXCLUSIVE")
    stream.close()
    built.con.execute("BEGIN EXCLUSIVE")
    built.con.execute("ROLLBACK")
    built.close()


# -- damaged and unavailable files -----------------------------------------------


@pytest.fixture(scope="module")
def healthy(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, dict[str, Session]]:
    """A 120-session database (~370 KB, rollback journal) and what it reads as."""
    path = tmp_path_factory.mktemp("healthy") / "state.db"
    built = HandBuilt(path, wal=False)
    for i in range(120):
        built.session(f"s{i:03}")
        built.exchange(f"s{i:03}", 3, size=300)
    built.close()
    return path.read_bytes(), by_id(read(path)[0])


@pytest.mark.parametrize(
    ("damage", "at"), [("cut", 0.3), ("cut", 0.5), ("cut", 0.9), ("junk", 0.5)]
)
def test_damaged_file_reads_what_it_can(
    tmp_path: Path, healthy: tuple[bytes, dict[str, Session]], damage: str, at: float
) -> None:
    """A truncated file, or one with a run of overwritten pages: whole sessions or none."""
    data, whole = healthy
    n = int(len(data) * at)
    damaged = data[:n] if damage == "cut" else data[:n] + b"\xde\xad" * 4096 + data[n + 8192 :]
    path = tmp_path / "damaged.db"
    path.write_bytes(damaged)
    sessions, report = read(path)
    assert 0 < len(sessions) < len(whole)
    assert report.skipped["unreadable session"] >= 1
    for s in sessions:  # what is read is whole, never part of a session
        assert s.messages == whole[s.external_id].messages


def test_file_cut_inside_the_header_is_a_source_error(tmp_path: Path, db: HandBuilt) -> None:
    db.session("s")
    db.message("s", "user", "hi")
    db.close()
    cut = tmp_path / "header.db"
    cut.write_bytes(db.path.read_bytes()[:60])
    with pytest.raises(SourceError, match=r"header\.db"):
        read(cut)


def test_not_sqlite_is_a_source_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_text("this is a text file, not a database\n" * 20)
    with pytest.raises(SourceError, match=r"state\.db.*not a database"):
        read(path)


def test_path_with_uri_characters(tmp_path: Path) -> None:
    odd = tmp_path / "50% #1 ?copy"
    odd.mkdir()
    built = HandBuilt(odd / "state.db")
    built.session("s")
    built.message("s", "user", "hi")
    built.close()
    assert HermesSource().detect(odd / "state.db")
    (session,), _ = read(odd / "state.db")
    assert session.origin == str(odd / "state.db")
    assert session.messages == [Message("user", "hi", timestamp=1001.0)]


def test_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match=r"nothere\.db"):
        read(tmp_path / "nothere.db")


def test_sqlite_without_messages_is_a_source_error(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    sqlite3.connect(path).executescript("CREATE TABLE t (x);").close()
    with pytest.raises(SourceError, match="no messages table"):
        read(path)


def test_locked_rollback_journal_db_is_a_clear_error(tmp_path: Path) -> None:
    built = HandBuilt(tmp_path / "locked.db", wal=False)
    built.session("s")
    built.message("s", "user", "hi")
    built.con.execute("BEGIN EXCLUSIVE")
    built.con.execute("INSERT INTO schema_version VALUES (23)")
    try:
        with pytest.raises(SourceError, match="locked"):
            read(built.path, source=HermesSource(timeout=0.05))
    finally:
        built.con.execute("ROLLBACK")
        built.close()


def test_wal_db_is_readable_while_a_writer_holds_its_lock(db: HandBuilt) -> None:
    """Hermes runs WAL: its writers never block this reader, nor the reverse."""
    db.session("s")
    db.message("s", "user", "committed")
    db.con.execute("BEGIN EXCLUSIVE")
    db.message("s", "user", "not yet committed")
    try:
        (session,), _ = read(db.path, source=HermesSource(timeout=0.05))
        assert [m.content for m in session.messages] == ["committed"]
    finally:
        db.con.execute("COMMIT")


# -- the benchmark database ---------------------------------------------------------


def test_benchmark_generator_writes_what_this_source_reads(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location(
        "hermes_db", Path(__file__).parents[2] / "benchmarks" / "hermes_db.py"
    )
    assert spec is not None and spec.loader is not None
    hermes_db = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hermes_db)
    path = tmp_path / "bench.db"
    counts = hermes_db.generate(path, sessions=30, seed=1)
    assert counts == hermes_db.generate(tmp_path / "again.db", sessions=30, seed=1)
    assert HermesSource().detect(path)
    sessions, report = read(path)
    assert dict(report.skipped) == {}
    assert len(sessions) == counts["sessions"] == 30
    assert sum(len(s.messages) - 1 for s in sessions) == counts["messages"]  # + system prompt
    calls = [c for s in sessions for m in s.messages for c in m.tool_calls]
    assert len(calls) == counts["tool_calls"]
    results = [m for s in sessions for m in s.messages if m.role == "tool"]
    assert sum((m.content or "").startswith("Error:") for m in results) == counts["tool_errors"]
    assert all(
        s.messages[0].role == "system" and s.metadata["schema_version"] == 22 for s in sessions
    )


# -- compaction rules on their own --------------------------------------------------


def test_repeats_away_from_a_summary_are_kept() -> None:
    summary = Message("assistant", "[CONTEXT COMPACTION — REFERENCE ONLY] summary")
    msgs = [
        Message("user", "continue"),
        Message("assistant", "a"),
        Message("user", "continue"),  # a real repeat, not next to the summary
        Message("assistant", "b"),
        summary,
        Message("user", "new"),
        Message("user", "continue"),  # after a new row: the copied tail has ended
    ]
    kept, dropped = drop_compaction_copies(msgs)
    assert dropped == 1
    assert kept == [m for m in msgs if m is not summary]


def test_nothing_to_drop_returns_the_same_list() -> None:
    msgs = [Message("user", "[not a summary]"), Message("tool", "[1, 2]", [], "c")]
    kept, dropped = drop_compaction_copies(msgs)
    assert kept is msgs
    assert dropped == 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__, "-q"]))

"""Generate a large Hermes Agent ``state.db`` (schema v22) for benchmarks.

The sessions are shaped like the τ-bench airline corpus that ships with warmstart
(its real user turns, tool calls with JSON-string arguments, tool results and
system prompt), stretched to ~50 messages per session so that the default 20,000
sessions give about 1,000,000 messages. About 6% of tool results are ``Error:``
results, as in the corpus.

The tables are hermes-agent 0.19.0's ``sessions``, ``messages`` and
``schema_version`` with their indexes, copied as SQL; Hermes' optional FTS5
search tables are left out (they only slow the writes down and no reader here
uses them). Rows go in with ``executemany`` in large transactions and the
indexes are built afterwards, which is what makes a million rows take seconds.

    python benchmarks/hermes_db.py /tmp/state.db --sessions 20000 --seed 0
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import random
import sqlite3
import time
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 22
ERROR_RATE = 0.06
BATCH_ROWS = 100_000

# From hermes_state.py (hermes-agent 0.19.0), SCHEMA_SQL and DEFERRED_INDEX_SQL.
SCHEMA_SQL = """
CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    user_id TEXT,
    session_key TEXT,
    chat_id TEXT,
    chat_type TEXT,
    thread_id TEXT,
    display_name TEXT,
    origin_json TEXT,
    expiry_finalized INTEGER DEFAULT 0,
    model TEXT,
    model_config TEXT,
    system_prompt TEXT,
    parent_session_id TEXT,
    started_at REAL NOT NULL,
    ended_at REAL,
    end_reason TEXT,
    message_count INTEGER DEFAULT 0,
    tool_call_count INTEGER DEFAULT 0,
    input_tokens INTEGER DEFAULT 0,
    output_tokens INTEGER DEFAULT 0,
    cache_read_tokens INTEGER DEFAULT 0,
    cache_write_tokens INTEGER DEFAULT 0,
    reasoning_tokens INTEGER DEFAULT 0,
    cwd TEXT,
    git_branch TEXT,
    git_repo_root TEXT,
    billing_provider TEXT,
    billing_base_url TEXT,
    billing_mode TEXT,
    estimated_cost_usd REAL,
    actual_cost_usd REAL,
    cost_status TEXT,
    cost_source TEXT,
    pricing_version TEXT,
    title TEXT,
    api_call_count INTEGER DEFAULT 0,
    handoff_state TEXT,
    handoff_platform TEXT,
    handoff_error TEXT,
    compression_failure_cooldown_until REAL,
    compression_failure_error TEXT,
    compression_fallback_streak INTEGER NOT NULL DEFAULT 0,
    profile_name TEXT,
    rewind_count INTEGER NOT NULL DEFAULT 0,
    archived INTEGER NOT NULL DEFAULT 0,
    FOREIGN KEY (parent_session_id) REFERENCES sessions(id)
);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id TEXT NOT NULL REFERENCES sessions(id),
    role TEXT NOT NULL,
    content TEXT,
    tool_call_id TEXT,
    tool_calls TEXT,
    tool_name TEXT,
    effect_disposition TEXT,
    timestamp REAL NOT NULL,
    token_count INTEGER,
    finish_reason TEXT,
    reasoning TEXT,
    reasoning_content TEXT,
    reasoning_details TEXT,
    codex_reasoning_items TEXT,
    codex_message_items TEXT,
    platform_message_id TEXT,
    observed INTEGER DEFAULT 0,
    active INTEGER NOT NULL DEFAULT 1,
    compacted INTEGER NOT NULL DEFAULT 0,
    api_content TEXT
);
"""

INDEX_SQL = """
CREATE INDEX IF NOT EXISTS idx_sessions_source ON sessions(source);
CREATE INDEX IF NOT EXISTS idx_sessions_source_id ON sessions(source, id);
CREATE INDEX IF NOT EXISTS idx_sessions_parent ON sessions(parent_session_id);
CREATE INDEX IF NOT EXISTS idx_sessions_started ON sessions(started_at DESC);
CREATE INDEX IF NOT EXISTS idx_messages_session ON messages(session_id, timestamp);
CREATE INDEX IF NOT EXISTS idx_messages_session_active
    ON messages(session_id, active, timestamp);
"""

_SESSION_INSERT = (
    "INSERT INTO sessions (id, source, model, model_config, system_prompt, started_at,"
    " ended_at, end_reason, message_count, tool_call_count, cwd, title)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_MESSAGE_INSERT = (
    "INSERT INTO messages (session_id, role, content, tool_call_id, tool_calls, tool_name,"
    " timestamp, finish_reason) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_SOURCES = ("cli",) * 6 + ("telegram",) * 2 + ("discord", "cron")
_END_REASONS = ("cli_close",) * 10 + ("user_exit",) * 5 + ("idle_timeout",) * 3 + ("error",)


class _Corpus:
    """The τ-bench pieces sessions are assembled from."""

    def __init__(self, trajectories: list[dict[str, Any]]) -> None:
        self.system_prompts: list[str] = []
        self.user_turns: list[str] = []
        self.assistant_texts: list[str] = []
        self.calls: list[tuple[str, str]] = []
        self.escaped: list[tuple[str, str]] = []  # the same, already JSON-encoded
        self.results: list[str] = []
        self.errors: list[str] = []
        for item in trajectories:
            for msg in item["traj"]:
                role, content = msg["role"], msg.get("content")
                if role == "system":
                    self.system_prompts.append(content)
                elif role == "user" and content:
                    self.user_turns.append(content)
                elif role == "assistant":
                    for call in msg.get("tool_calls") or []:
                        fn = call["function"]
                        self.calls.append((fn["name"], fn["arguments"]))
                    if content and not msg.get("tool_calls"):
                        self.assistant_texts.append(content)
                elif role == "tool":
                    bucket = self.errors if content.startswith("Error:") else self.results
                    bucket.append(content)
        self.system_prompts = sorted(set(self.system_prompts))
        self.escaped = [(json.dumps(name), json.dumps(args)) for name, args in self.calls]


def _packaged_corpus() -> Path:
    """warmstart's data file, found without importing (and so initialising) the package."""
    spec = importlib.util.find_spec("warmstart")
    if spec is not None and spec.submodule_search_locations:
        package = Path(next(iter(spec.submodule_search_locations)))
    else:
        package = Path(__file__).resolve().parents[1] / "src" / "warmstart"
    return package / "data" / "tau_bench_airline.json.gz"


def load_corpus(path: Path | None = None) -> _Corpus:
    """The τ-bench airline trajectories (the copy packaged with warmstart by default)."""
    path = path or _packaged_corpus()
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return _Corpus(json.load(fh))


def _session_rows(
    rng: random.Random, corpus: _Corpus, sid: str, start: float
) -> tuple[list[tuple[Any, ...]], int]:
    """One session's message rows: user turns, tool rounds, answers; and its call count.

    Tool calls are written as the exact text ``json.dumps`` gives for Hermes' list of
    OpenAI calls, assembled from pre-encoded parts: a million rows in seconds.
    """
    pick = rng.random
    users, texts, results, errors = (
        corpus.user_turns,
        corpus.assistant_texts,
        corpus.results,
        corpus.errors,
    )
    target = rng.randint(20, 80)
    rows: list[tuple[Any, ...]] = []
    calls = 0
    ts = start
    while len(rows) < target:
        ts += 1.0
        rows.append((sid, "user", users[int(pick() * len(users))], None, None, None, ts, None))
        for _ in range((0, 1, 1, 2, 2, 3)[int(pick() * 6)]):
            made = []
            for _ in range(2 if pick() < 0.05 else 1):
                calls += 1
                i = int(pick() * len(corpus.calls))
                made.append((f"call_{sid}_{calls}", corpus.calls[i][0], *corpus.escaped[i]))
            ts += 0.5
            text = ", ".join(
                f'{{"id": "{cid}", "type": "function", '
                f'"function": {{"name": {name_json}, "arguments": {args_json}}}}}'
                for cid, _, name_json, args_json in made
            )
            rows.append((sid, "assistant", None, None, f"[{text}]", None, ts, "tool_calls"))
            for cid, name, _, _ in made:
                ts += 0.1
                pool = errors if pick() < ERROR_RATE else results
                rows.append((sid, "tool", pool[int(pick() * len(pool))], cid, None, name, ts, None))
        ts += 0.5
        rows.append(
            (sid, "assistant", texts[int(pick() * len(texts))], None, None, None, ts, "stop")
        )
    return rows, calls


def generate(path: Path, sessions: int = 20_000, seed: int = 0) -> dict[str, int]:
    """Write a fresh Hermes v22 ``state.db`` at ``path``; return what it holds.

    Deterministic for a given ``seed``. Returns ``{"sessions", "messages", "tool_calls",
    "tool_errors"}``.
    """
    path = Path(path)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)
    rng = random.Random(seed)
    corpus = load_corpus()
    con = sqlite3.connect(path, isolation_level=None)
    # Bulk load without a journal, in a large cache; the file is switched to WAL (as
    # Hermes runs it) at the end, so the rows are not written twice.
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA cache_size=-65536")
    con.execute("PRAGMA temp_store=MEMORY")
    con.executescript(SCHEMA_SQL)
    con.execute("INSERT INTO schema_version (version) VALUES (?)", (SCHEMA_VERSION,))
    counts = {"sessions": 0, "messages": 0, "tool_calls": 0, "tool_errors": 0}
    errors = set(corpus.errors)
    session_batch: list[tuple[Any, ...]] = []
    message_batch: list[tuple[Any, ...]] = []
    clock = 1_735_689_600.0  # 2025-01-01, so runs with one seed are identical

    def flush() -> None:
        con.execute("BEGIN")
        con.executemany(_SESSION_INSERT, session_batch)
        con.executemany(_MESSAGE_INSERT, message_batch)
        con.execute("COMMIT")
        session_batch.clear()
        message_batch.clear()

    for n in range(sessions):
        sid = f"20250101_{n:06d}_{rng.getrandbits(24):06x}"
        clock += rng.uniform(60, 600)
        rows, calls = _session_rows(rng, corpus, sid, clock)
        message_batch.extend(rows)
        end_reason = rng.choice(_END_REASONS)
        session_batch.append(
            (
                sid,
                rng.choice(_SOURCES),
                "gpt-4o",
                json.dumps({"max_iterations": 90}),
                rng.choice(corpus.system_prompts),
                clock,
                rows[-1][6] + 5.0,
                end_reason,
                len(rows),
                calls,
                "/home/user/airline",
                f"Airline task {n}",
            )
        )
        counts["sessions"] += 1
        counts["messages"] += len(rows)
        counts["tool_calls"] += calls
        counts["tool_errors"] += sum(1 for r in rows if r[1] == "tool" and r[2] in errors)
        clock = rows[-1][6]
        if len(message_batch) >= BATCH_ROWS:
            flush()
    flush()
    con.executescript(INDEX_SQL)
    con.execute("PRAGMA journal_mode=WAL")
    con.close()
    return counts


def main() -> None:
    """Command line: ``python benchmarks/hermes_db.py OUT [--sessions N] [--seed S]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="where to write the state.db")
    parser.add_argument("--sessions", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    counts = generate(args.out, args.sessions, args.seed)
    elapsed = time.perf_counter() - started
    print(json.dumps({**counts, "seconds": round(elapsed, 2), "path": str(args.out)}))


if __name__ == "__main__":
    main()

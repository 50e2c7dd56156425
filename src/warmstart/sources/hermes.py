"""Hermes Agent ``state.db``: stream sessions out of a live SQLite database.

Hermes (``hermes_state.SessionDB``) keeps every session in one WAL-mode SQLite file
that a running agent keeps writing to, so this source opens it read-only
(``mode=ro``) and reads inside one read transaction: a consistent snapshot that
never blocks a WAL writer. It streams: one ``GROUP BY`` over Hermes' messages
index gives each session's fingerprint (``"{rows}:{max id}"``); sessions whose
fingerprint the store already has are counted as unchanged without reading a
row; the rest are read in one id-ordered pass over the table (or one indexed
query each, when only a few changed), a session at a time.

Columns are read by name (``PRAGMA table_info``), so schema v22 (hermes-agent
0.19.0) and v30 (which moves ``sessions.system_prompt`` to
``system_prompts(hash, prompt)``) both work, missing optional columns read as
``NULL``, and columns Hermes adds later are ignored. Content stored as
``"\\x00json:"`` + JSON (multimodal lists) is decoded to its text parts.

Inactive and compacted rows, and what a miner of "tool calls that really
happened" sees. Hermes never rewrites a tool call; it hides rows or copies them:

* In-place compaction (``archive_and_compact``) flips the live rows to
  ``active=0, compacted=1`` and inserts a *compressed* transcript as new active
  rows: copies of the first few messages, a synthetic summary
  (``[CONTEXT COMPACTION ...``), copies of the recent tail (tool results there
  may be pruned), and sometimes a synthetic todo-list message.
* Rotation compaction (Hermes' default) ends the session with
  ``end_reason="compression"`` and writes that same compressed transcript as the
  first rows of a child session; ``/branch`` ends it with ``"branched"`` and
  copies the whole conversation into the child.
* ``/rewind`` flips rows to ``active=0, compacted=0``: the user took the turn
  back, but its tool calls did run and their results are real.

So this source keeps **every row, active or not** (the archived originals are the
only full record, with unpruned results, and rewound calls really ran), and
drops only what compaction or branching *manufactured*: the summary and todo
messages, a copied system prompt carrying the compaction note, the copied head
and tail around each summary, and, in a child of a ``compression`` or
``branched`` session, the leading rows copied from its parent (a copied tool
result is recognised by the call it answers). Each tool call therefore appears
once, in the session where it ran. ``metadata`` counts both
(``compaction_dropped``, ``inactive_messages``). This also fits the
fingerprint: ``/rewind`` changes a flag, not the rows, and not what is read.

Bad input never raises out of :meth:`HermesSource.iter_sessions` except when the
file cannot be opened at all (:class:`~warmstart.errors.SourceError`). Unknown
roles, tool calls without a name and unreadable sessions of a damaged file are
counted in the :class:`IngestReport` and skipped; ``tool_calls`` that are not
JSON lose the calls but keep the message; arguments that are not JSON are kept
as raw text (and counted) for the miner to judge (argument strings shaped like
an object, ``{...}``, are left to the miner's own parse). A truncated or damaged
file yields the sessions before the damage, whole, and counts the rest.
"""

from __future__ import annotations

import dataclasses
import json
import sqlite3
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from warmstart.errors import SourceError
from warmstart.model import Message, Session, ToolCallSpec
from warmstart.sources.base import IngestReport
from warmstart.sources.openai_messages import content_text

SQLITE_MAGIC = b"SQLite format 3\x00"
JSON_PREFIX = "\x00json:"
MAX_CONTENT_CHARS = 1_000_000
"""Longer contents are cut (and counted): one pathological row must not exhaust memory."""

_MESSAGE_COLUMNS = (
    "id",
    "session_id",
    "role",
    "content",
    "tool_call_id",
    "tool_calls",
    "tool_name",
    "timestamp",
)
"""Read from ``messages`` in this order, ``NULL`` for a column the schema lacks."""
_SESSION_COLUMNS = (
    "id",
    "source",
    "model",
    "system_prompt",
    "system_prompt_hash",
    "parent_session_id",
    "started_at",
    "ended_at",
    "end_reason",
    "title",
    "cwd",
)
_ROLES = {
    "user": "user",
    "assistant": "assistant",
    "tool": "tool",
    "system": "system",
    "function": "tool",
    "developer": "system",
}
# What Hermes' compressor writes itself (agent/context_compressor.py: current and
# historical summary prefixes, the merged-into-tail variant, the todo snapshot).
_SYNTHETIC_PREFIXES = (
    "[CONTEXT COMPACTION",
    "[CONTEXT SUMMARY]:",
    "[PRIOR CONTEXT — for reference only",
    "[Your active task list was preserved across context compression]",
)
_SYSTEM_COMPACTION_NOTE = "[Note: Some earlier conversation turns have been compacted"
_COPYING_END_REASONS = frozenset({"compression", "branched"})
_HEAD_WINDOW = 16
"""Compaction copies only the first few messages (``protect_first_n``, default 3)."""
_PER_SESSION_SHARE = 0.25
"""Read sessions one query each when they hold less than this share of all rows."""
_SESSION_BATCH = 200
_MAX_CONSECUTIVE_FAILURES = 20


# -- values -------------------------------------------------------------------


def decode_content(value: object) -> str | None:
    """A ``messages.content`` value as text: ``"\\x00json:"`` lists become their text parts.

    Undecodable JSON is returned raw (without the prefix); never raises.
    """
    return _decode_content(value)[0]


def _decode_content(value: object) -> tuple[str | None, str | None]:
    """``(text, problem)``: the decoded content and why it is suspect, if it is."""
    if value is None:
        return None, None
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return str(value), None
    if not value.startswith(JSON_PREFIX):
        return value, None
    body = value[len(JSON_PREFIX) :]
    try:
        obj = _load_json(body)
        if obj is None or isinstance(obj, str):
            return obj, None
        if isinstance(obj, dict) and isinstance(obj.get("text"), str):
            return obj["text"], None
        return content_text(obj), None
    except (ValueError, RecursionError):
        return body, "content is not JSON after the \\x00json: prefix"


def _number(value: object) -> float | None:
    """A REAL column as a float, or ``None`` when it holds something else."""
    if isinstance(value, float):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _text(value: object) -> str | None:
    """A TEXT column as a string, or ``None``."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


# The C scanner behind json.loads, minus three layers of Python wrappers per call.
_scan_json: Callable[[str, int], tuple[Any, int]]
_scan_json = json.JSONDecoder().scan_once  # type: ignore[attr-defined]


def _load_json(text: str) -> Any:
    """``json.loads`` through the C scanner directly: several times faster on small texts.

    What the scanner does not take whole (surrounding whitespace, errors) goes to
    ``json.loads``, which then decides; raises ``ValueError`` when not JSON.
    """
    try:
        obj, end = _scan_json(text, 0)
        if end == len(text):
            return obj
    except (StopIteration, ValueError):
        pass
    return json.loads(text)


def _plain_dataclass(cls: type, names: tuple[str, ...]) -> bool:
    """Whether ``cls`` can be built by filling its ``__dict__`` (no slots, no hooks).

    Building a Message through its generated ``__init__`` costs about as much as
    everything else done for a row; filling the instance dict directly halves that.
    If the model ever stops being a plain dataclass with exactly these fields, this
    is false and the constructors are used.
    """
    return (
        dataclasses.is_dataclass(cls)
        and "__slots__" not in vars(cls)
        and not hasattr(cls, "__post_init__")
        and tuple(f.name for f in dataclasses.fields(cls)) == names
    )


_new = object.__new__
_FAST_MESSAGE = _plain_dataclass(
    Message, ("role", "content", "tool_calls", "tool_call_id", "name", "timestamp")
)
_FAST_SPEC = _plain_dataclass(ToolCallSpec, ("id", "name", "arguments"))


# -- rows ---------------------------------------------------------------------


def _tool_calls(raw: Any, report: IngestReport, sid: Any, mid: Any) -> list[ToolCallSpec]:
    """The ``tool_calls`` column as specs; problems counted, calls without a name dropped.

    A well-formed OpenAI call (string id, name, object-shaped arguments) takes the
    short path; anything else goes through :func:`_tool_call`.
    """
    if raw.__class__ is bytes:
        raw = raw.decode("utf-8", "replace")
    try:
        calls = _load_json(raw) if raw.__class__ is str else raw
    except (ValueError, RecursionError):
        report.skip("tool_calls is not JSON", f"session {sid} message {mid}")
        return []
    if calls.__class__ is dict:
        calls = [calls]
    elif calls.__class__ is not list:
        report.skip("tool_calls is not a list", f"session {sid} message {mid}")
        return []
    specs = []
    for call in calls:
        try:
            fn = call["function"]
            name, args, call_id = fn["name"], fn["arguments"], call["id"]
            plain = (
                name.__class__ is str
                and name
                and call_id.__class__ is str
                and call_id
                and args.__class__ is str
                and args[:1] == "{"
                and args[-1:] == "}"
            )
        except (KeyError, TypeError, IndexError):
            plain = False
        if plain and _FAST_SPEC:
            spec = _new(ToolCallSpec)
            spec.__dict__.update(id=call_id, name=name, arguments=args)
            specs.append(spec)
        elif (other := _tool_call(call, report, sid, mid)) is not None:
            specs.append(other)
    return specs


def _tool_call(call: Any, report: IngestReport, sid: Any, mid: Any) -> ToolCallSpec | None:
    """One tool call of any shape Hermes has stored, or ``None`` (counted) without a name.

    Codex calls carry ``call_id`` (and ``response_item_id``) besides or instead of
    ``id``; ``function.arguments`` may be an object (re-serialised to a JSON string)
    or a string that is not JSON (kept raw for the miner to judge, and counted).
    Object-shaped argument strings are not parsed here: the miner parses every
    call's arguments anyway (``args_valid``) and a second parse would cost a tenth
    of the whole read.
    """
    if call.__class__ is not dict:
        report.skip("tool call is not an object", f"session {sid} message {mid}")
        return None
    fn = call.get("function")
    if fn.__class__ is not dict:
        fn = call
    name = fn.get("name")
    if name.__class__ is not str or not name:
        report.skip("tool call has no function name", f"session {sid} message {mid}")
        return None
    args = fn.get("arguments")
    if args.__class__ is str:
        if not (args[:1] == "{" and args[-1:] == "}"):
            try:
                _load_json(args)
            except (ValueError, RecursionError):
                report.skip("tool call arguments are not JSON", f"session {sid} message {mid}")
    elif args is None:
        args = "{}"
    else:
        args = json.dumps(args, ensure_ascii=False, default=str)
    call_id = call.get("id") or call.get("call_id")
    if call_id.__class__ is not str:
        if call_id:
            call_id = str(call_id)
        else:
            report.skip("tool call has no id", f"session {sid} message {mid}")
            call_id = None
    return ToolCallSpec(call_id, name, args)


def _message(row: tuple[Any, ...], report: IngestReport) -> Message | None:
    """One ``messages`` row as a Message, or ``None`` (counted) for an unknown role.

    This runs once per row of the database, so the common case (str content without
    the JSON prefix, a float timestamp) takes the shortest path.
    """
    mid, sid, role, content, call_id, calls_json, tool_name, ts = row
    norm_role = _ROLES.get(role)
    if norm_role is None:
        report.skip(f"unknown role {str(role)[:40]!r}", f"session {sid} message {mid}")
        return None
    if content is not None and (
        content.__class__ is not str
        or content.startswith(JSON_PREFIX)
        or len(content) > MAX_CONTENT_CHARS
    ):
        content, problem = _decode_content(content)
        if problem:
            report.skip(problem, f"session {sid} message {mid}")
        if content is not None and len(content) > MAX_CONTENT_CHARS:
            report.skip("content truncated", f"session {sid} message {mid}")
            content = content[:MAX_CONTENT_CHARS]
    if calls_json and norm_role == "assistant":
        calls = _tool_calls(calls_json, report, sid, mid)
    else:
        calls = []
    if call_id is not None and call_id.__class__ is not str:
        call_id = str(call_id)
    if tool_name.__class__ is not str:
        tool_name = None
    if ts.__class__ is not float:
        ts = _number(ts)
    if _FAST_MESSAGE:
        msg = _new(Message)
        msg.__dict__ = {
            "role": norm_role,
            "content": content,
            "tool_calls": calls,
            "tool_call_id": call_id,
            "name": tool_name,
            "timestamp": ts,
        }
        return msg
    return Message(norm_role, content, calls, call_id, tool_name, ts)


# -- compaction ---------------------------------------------------------------


def _is_synthetic(msg: Message) -> bool:
    """Written by Hermes' compressor, not by the user, the model or a tool.

    A system row carrying the compaction note is the copied prompt of a compressed
    transcript (the real prompt lives in the ``sessions`` row).
    """
    content = msg.content
    if not content:
        return False
    if msg.role == "system":
        return _SYSTEM_COMPACTION_NOTE in content
    return content[0] == "[" and content.startswith(_SYNTHETIC_PREFIXES)


def _maybe_synthetic(row: tuple[Any, ...]) -> bool:
    """A cheap test on a raw row: could it be a summary, todo or copied-prompt row?

    Sessions with no such row skip :func:`drop_compaction_copies` entirely (unless a
    parent handed them copies). ``\x00`` starts JSON-encoded content, which may
    decode to a summary.
    """
    content, role = row[3], row[2]
    if role == "system":
        return True
    return content.__class__ is str and bool(content) and content[0] in "[\x00" and role != "tool"


def _copy_key(msg: Message) -> tuple[Any, ...]:
    """What a compaction copy shares with its original.

    A tool result is matched by the call it answers (compaction may prune its text);
    everything else by role, content and calls.
    """
    if msg.role == "tool" and msg.tool_call_id:
        return ("tool", msg.tool_call_id, msg.name)
    return (msg.role, msg.content, tuple(msg.tool_calls), msg.tool_call_id)


def drop_compaction_copies(
    messages: list[Message], parent: list[Message] | None = None
) -> tuple[list[Message], int]:
    """Remove what compaction or ``/branch`` manufactured; return ``(kept, dropped)``.

    ``parent`` holds the messages of the session this one was rotated or branched
    from (empty otherwise): rows at the start of this session that repeat it are
    copies. Around every compaction summary, the run of rows just before it that
    repeat the session's first messages (the copied head) and the run just after it
    that repeat earlier rows (the copied tail) are copies too; the runs stop at the
    first row that is new, so a real repeated message elsewhere is kept.
    """
    summaries = [
        i
        for i, m in enumerate(messages)
        if m.content and (m.content[0] == "[" or m.role == "system") and _is_synthetic(m)
    ]
    if not summaries and not parent:
        return messages, 0

    n = len(messages)
    drop = [False] * n
    dropped_calls: set[str] = set()

    def mark(i: int) -> None:
        drop[i] = True
        for call in messages[i].tool_calls:
            if call.id:
                dropped_calls.add(call.id)

    def answers_dropped(m: Message) -> bool:
        return m.role == "tool" and m.tool_call_id in dropped_calls

    for i in summaries:
        mark(i)

    parent_keys = {_copy_key(m) for m in parent or ()}
    i = 0
    while parent_keys and i < n:
        if not (drop[i] or answers_dropped(messages[i]) or _copy_key(messages[i]) in parent_keys):
            break
        mark(i)
        i += 1

    keys = [_copy_key(m) for m in messages]
    first: dict[tuple[Any, ...], int] = {}
    for j, key in enumerate(keys):
        first.setdefault(key, j)
    for s in summaries:
        j = s - 1
        while j >= 0 and not drop[j] and first[keys[j]] < min(j, _HEAD_WINDOW):
            mark(j)
            j -= 1
        start = j + 1
        j = s + 1
        while j < n and not drop[j]:
            if not (
                answers_dropped(messages[j]) or first[keys[j]] < start or keys[j] in parent_keys
            ):
                break
            mark(j)
            j += 1

    kept = [m for m, d in zip(messages, drop, strict=True) if not d]
    return kept, n - len(kept)


# -- the database -------------------------------------------------------------


@dataclasses.dataclass
class _Layout:
    """What this particular database has: the SQL to read it by column name."""

    id_column: str
    messages_sql: str
    session_select: str | None
    prompt_sql: str | None
    schema_version: int | None
    session_index: bool
    inactive_sql: str


class _Found(NamedTuple):
    """One session's rows as the fingerprint query counted them."""

    rows: int
    max_id: int
    inactive: int

    @property
    def fingerprint(self) -> str:
        """``"{rows}:{max id}"``: changes when a row is added or removed, cheap to get."""
        return f"{self.rows}:{self.max_id}"


def _columns(con: sqlite3.Connection, table: str) -> list[str]:
    """Column names of ``table`` (empty when it does not exist)."""
    return [row[1] for row in con.execute(f'PRAGMA table_info("{table}")')]


def _select(wanted: tuple[str, ...], present: list[str]) -> str:
    """A SELECT list in ``wanted`` order, ``NULL`` for the columns this schema lacks."""
    have = set(present)
    return ", ".join(f'"{c}"' if c in have else "NULL" for c in wanted)


def _inspect(con: sqlite3.Connection, path: Path) -> _Layout:
    """Read the schema once: which columns exist, the schema version, the indexes."""
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "messages" not in tables:
        raise SourceError(f"{path}: not a Hermes state.db (no messages table)")
    msg_cols = _columns(con, "messages")
    if not {"session_id", "role"} <= set(msg_cols):
        raise SourceError(f"{path}: not a Hermes state.db (messages has no session_id/role)")
    # A table without an ``id`` column still has SQLite's rowid, in insertion order.
    id_column = "id" if "id" in msg_cols else "rowid"
    select = _select(_MESSAGE_COLUMNS, [*msg_cols, "id"]).replace('"id"', id_column, 1)
    messages_sql = f"SELECT {select} FROM messages"

    session_select = None
    if "sessions" in tables and "id" in (sess_cols := _columns(con, "sessions")):
        session_select = f"SELECT {_select(_SESSION_COLUMNS, sess_cols)} FROM sessions"
    prompt_sql = None
    if "system_prompts" in tables:
        sp_cols = _columns(con, "system_prompts")
        text_col = next((c for c in ("prompt", "content", "text") if c in sp_cols), None)
        if "hash" in sp_cols and text_col:
            prompt_sql = f'SELECT "{text_col}" FROM system_prompts WHERE hash = ?'
    version = None
    if "schema_version" in tables:
        try:
            row = con.execute("SELECT MAX(version) FROM schema_version").fetchone()
            version = int(row[0]) if row and row[0] is not None else None
        except (sqlite3.DatabaseError, TypeError, ValueError):
            version = None
    session_index = False
    for index in con.execute("PRAGMA index_list(messages)").fetchall():
        info = con.execute(f'PRAGMA index_info("{index[1]}")').fetchall()
        if info and min(info)[2] == "session_id":
            session_index = True
    # Hermes' (session_id, active, timestamp) index answers SUM(active = 0) too.
    inactive_sql = "SUM(active = 0)" if "active" in msg_cols else "0"
    return _Layout(
        id_column, messages_sql, session_select, prompt_sql, version, session_index, inactive_sql
    )


class HermesSource:
    """Reads a Hermes Agent ``state.db`` (schema v22 and later)."""

    name = "hermes"

    def __init__(self, timeout: float = 5.0) -> None:
        """``timeout``: seconds to wait for a lock held by a writer before giving up."""
        self.timeout = timeout

    def detect(self, path: Path) -> bool:
        """A SQLite file with Hermes' ``sessions`` and ``messages`` tables.

        warmstart's own store has tables of those names too; it is told apart by its
        ``warmstart_migrations`` table.
        """
        try:
            with open(path, "rb") as fh:
                if fh.read(len(SQLITE_MAGIC)) != SQLITE_MAGIC:
                    return False
            con = self._connect(path)
        except (OSError, sqlite3.Error):
            return False
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
            if "warmstart_migrations" in tables or not {"sessions", "messages"} <= tables:
                return False
            return {"session_id", "role"} <= set(_columns(con, "messages"))
        except sqlite3.Error:
            return False
        finally:
            con.close()

    def iter_sessions(
        self, path: Path, report: IngestReport, known: Mapping[str, str]
    ) -> Iterator[Session]:
        """Stream the sessions that are new or changed since ``known``, in order of last row.

        Raises :class:`SourceError` only when the database cannot be opened or read at
        all; everything after that is counted in ``report``.
        """
        try:
            con = self._connect(path)
        except sqlite3.Error as exc:
            raise SourceError(f"{path}: cannot open Hermes state.db: {exc}") from exc
        try:
            try:
                try:
                    layout = _inspect(con, path)
                except sqlite3.DatabaseError as exc:
                    if getattr(exc, "sqlite_errorname", "") != "SQLITE_CORRUPT":
                        raise
                    # A truncated file claims more pages than it has, and SQLite then
                    # refuses it whole; this pragma makes it read the pages that exist
                    # (on a read-only connection it cannot write anything).
                    report.skip(f"damaged database file ({exc}); reading what can be read")
                    con.execute("PRAGMA writable_schema = ON")
                    layout = _inspect(con, path)
                reader = _Reader(con, layout, path, report)
                con.execute("BEGIN")  # one snapshot for the fingerprints and the rows
                fingerprints = reader.fingerprints()
            except sqlite3.Error as exc:
                raise SourceError(f"{path}: cannot read Hermes state.db: {_why(exc)}") from exc
            wanted: dict[Any, _Found] = {}
            wanted_rows = total_rows = 0
            for sid, found in fingerprints.items():
                total_rows += found.rows
                if known.get(f"{self.name}:{sid}") == found.fingerprint:
                    report.unchanged += 1
                else:
                    wanted[sid] = found
                    wanted_rows += found.rows
            del fingerprints
            if not wanted:
                return
            if reader.layout.session_index and wanted_rows < total_rows * _PER_SESSION_SHARE:
                yield from reader.read_each(wanted)
            else:
                yield from reader.scan(wanted)
        finally:
            con.close()

    def _connect(self, path: Path) -> sqlite3.Connection:
        """Read-only and autocommit (the read transaction is explicit): never a write lock.

        The path is percent-encoded into the URI, so ``#``, ``?`` or ``%`` in a
        directory name cannot cut it short.
        """
        uri = f"{Path(path).resolve().as_uri()}?mode=ro"
        return sqlite3.connect(uri, uri=True, timeout=self.timeout, isolation_level=None)


class _Reader:
    """One pass over one open database: fingerprints, rows, session rows."""

    def __init__(
        self, con: sqlite3.Connection, layout: _Layout, path: Path, report: IngestReport
    ) -> None:
        self.con = con
        self.layout = layout
        self.path = path
        self.report = report
        self._order: dict[Any, int] = {}
        self._upcoming: list[Any] = []
        self._info: dict[Any, tuple[Any, ...] | None] = {}
        self._prompts: dict[Any, str | None] = {}

    def fingerprints(self) -> dict[Any, _Found]:
        """Every session's rows, last id and inactive rows, from an index when possible.

        A truncated file often still has a readable start of the table, so when the
        grouped query fails the rows that can be read are counted one by one.
        """
        out: dict[Any, _Found] = {}
        id_col, inactive = self.layout.id_column, self.layout.inactive_sql
        try:
            for sid, count, max_id, n_inactive in self.con.execute(
                f"SELECT session_id, COUNT(*), MAX({id_col}), {inactive} FROM messages"
                " GROUP BY session_id"
            ):
                out[sid] = _Found(count, max_id, n_inactive or 0)
        except sqlite3.DatabaseError as exc:
            self.report.skip(f"messages index unreadable ({_why(exc)})", str(self.path))
            out = self._count_rows()
        orphans = out.pop(None, None)
        if orphans:
            self.report.skip("message without session id", str(self.path))
            self.report.skipped["message without session id"] += orphans.rows - 1
        return out

    def _count_rows(self) -> dict[Any, _Found]:
        """Fingerprints from a plain table scan, up to the first unreadable page."""
        out: dict[Any, _Found] = {}
        off = "active = 0" if self.layout.inactive_sql != "0" else "0"
        last = last_sid = None
        try:
            for mid, sid, inactive in self.con.execute(
                f"SELECT {self.layout.id_column}, session_id, {off} FROM messages NOT INDEXED"
            ):
                if sid is None or (last is not None and mid <= last):
                    # A page cut short reads as zeros: ids stop rising, sessions vanish.
                    raise sqlite3.DatabaseError("rows out of order from here (a damaged page)")
                seen = out.get(sid)
                if seen is None:
                    out[sid] = _Found(1, mid, inactive or 0)
                else:
                    out[sid] = _Found(
                        seen.rows + 1, max(seen.max_id, mid), seen.inactive + (inactive or 0)
                    )
                last, last_sid = mid, sid
        except sqlite3.DatabaseError as exc:
            self.report.skip(
                f"rest of the messages table unreadable ({_why(exc)})", f"after message {last}"
            )
            # The session being read when the damage began most likely goes on past
            # it: leave it out rather than store half of it as if it were whole.
            if out.pop(last_sid, None) is not None:
                self.report.skip("unreadable session", f"session {last_sid}")
        return out

    def scan(self, wanted: dict[Any, _Found]) -> Iterator[Session]:
        """One pass over the table in id order; a session is yielded at its last row.

        Sessions may interleave (a gateway runs several at once), so a few can be
        pending at a time; each is complete once its last id (known from the
        fingerprint query) has been read. Rows of unchanged sessions are passed over.
        """
        self._plan(wanted)
        pending: dict[Any, list[Message]] = {}
        flagged: set[Any] = set()
        remaining = dict(wanted)
        convert, report = _message, self.report
        nobody = object()
        current_sid: Any = nobody
        current: list[Message] | None = None
        last_id = None
        sql = f"{self.layout.messages_sql} ORDER BY {self.layout.id_column}"
        try:
            for row in self.con.execute(sql):
                sid = row[1]
                if sid != current_sid:
                    current_sid = sid
                    current = pending.get(sid)
                    found = remaining.get(sid)
                    last_id = found.max_id if found else None
                    if current is None and found is not None:
                        current = pending[sid] = []
                if current is None:
                    continue
                msg = convert(row, report)
                if msg is not None:
                    current.append(msg)
                # Could Hermes' compressor have written it? (see _maybe_synthetic)
                if (
                    (content := row[3]).__class__ is str
                    and content
                    and content[0] in "[\x00"
                    and row[2] != "tool"
                ) or row[2] == "system":
                    flagged.add(sid)
                if row[0] == last_id:
                    session = self.session(
                        sid, remaining.pop(sid), pending.pop(sid), sid in flagged
                    )
                    flagged.discard(sid)
                    current_sid, current = nobody, None
                    yield session
                    if not remaining:
                        return  # the rest of the table is unchanged sessions
        except sqlite3.DatabaseError as exc:
            report.skip(f"messages table unreadable ({_why(exc)})", str(self.path))
            # Unfinished sessions get a second chance one query each; a row the scan
            # could not read is usually unreadable there too, and such a session is
            # counted as unreadable rather than stored incomplete.
            if self.layout.session_index:
                yield from self.read_each(remaining)
            else:
                _count_unreadable(report, len(remaining), self.path)
            return
        for sid, messages in pending.items():  # only when rows changed under the read
            yield self.session(sid, remaining[sid], messages, True)

    def read_each(self, wanted: dict[Any, _Found]) -> Iterator[Session]:
        """One indexed query per session: for a few changed sessions, or a damaged file."""
        order = self._plan(wanted)
        failures = 0
        for n, sid in enumerate(order):
            try:
                messages, flagged = self.read_one(sid, self.report)
                session = self.session(sid, wanted[sid], messages, flagged)
            except sqlite3.DatabaseError as exc:
                self.report.skip(f"unreadable session ({_why(exc)})", f"session {sid}")
                failures += 1
                if failures >= _MAX_CONSECUTIVE_FAILURES:
                    _count_unreadable(self.report, len(order) - n - 1, self.path)
                    return
                continue
            failures = 0
            yield session

    def read_one(self, sid: Any, report: IngestReport) -> tuple[list[Message], bool]:
        """All messages of one session in id order, and whether any row is flagged."""
        sql = f"{self.layout.messages_sql} WHERE session_id = ? ORDER BY {self.layout.id_column}"
        messages = []
        flagged = False
        for row in self.con.execute(sql, (sid,)):
            msg = _message(row, report)
            if msg is not None:
                messages.append(msg)
            flagged = flagged or _maybe_synthetic(row)
        return messages, flagged

    # -- session rows ------------------------------------------------------------

    def _plan(self, wanted: dict[Any, _Found]) -> list[Any]:
        """Sessions in the order they complete (by last id), for fetching rows ahead."""
        order = sorted(wanted, key=lambda s: wanted[s].max_id)
        self._upcoming = order
        self._order = {sid: i for i, sid in enumerate(order)}
        return order

    def _session_row(self, sid: Any) -> dict[str, Any]:
        """The ``sessions`` row by column name, fetched in batches of upcoming sessions."""
        if self.layout.session_select is None:
            return {}
        if sid not in self._info:
            start = self._order.get(sid)
            batch = [sid] if start is None else self._upcoming[start : start + _SESSION_BATCH]
            self._fetch(batch)
        row = self._info.pop(sid, None)
        return dict(zip(_SESSION_COLUMNS, row, strict=True)) if row else {}

    def _fetch(self, batch: list[Any]) -> None:
        """Load ``sessions`` rows for ``batch``; one at a time if the batch query fails."""
        select = self.layout.session_select
        for sid in batch:
            self._info.setdefault(sid, None)
        try:
            marks = ", ".join("?" * len(batch))
            for row in self.con.execute(f"{select} WHERE id IN ({marks})", batch):
                self._info[row[0]] = row
            return
        except sqlite3.DatabaseError:
            pass
        for sid in batch:
            try:
                self._info[sid] = self.con.execute(f"{select} WHERE id = ?", (sid,)).fetchone()
            except sqlite3.DatabaseError as exc:
                self.report.skip(f"unreadable session row ({_why(exc)})", f"session {sid}")

    def _system_prompt(self, info: Mapping[str, Any]) -> str | None:
        """Inline (v22) or through ``system_prompts`` by hash (v30, cached by hash)."""
        prompt = _text(info.get("system_prompt"))
        if prompt or self.layout.prompt_sql is None:
            return prompt or None
        digest = info.get("system_prompt_hash")
        if digest is None:
            return None
        if digest not in self._prompts:
            try:
                row = self.con.execute(self.layout.prompt_sql, (digest,)).fetchone()
            except sqlite3.DatabaseError:
                row = None
            if len(self._prompts) >= 64:
                self._prompts.clear()
            self._prompts[digest] = _decode_content(row[0])[0] if row else None
        return self._prompts[digest]

    def _parent_messages(self, parent: Any) -> list[Message]:
        """The parent's messages when it ended by handing copies to this session."""
        if self.layout.session_select is None:
            return []
        try:
            row = self.con.execute(
                f"{self.layout.session_select} WHERE id = ?", (parent,)
            ).fetchone()
            if not row or dict(zip(_SESSION_COLUMNS, row, strict=True))["end_reason"] not in (
                _COPYING_END_REASONS
            ):
                return []
            return self.read_one(parent, IngestReport())[0]
        except sqlite3.DatabaseError:
            return []

    def session(self, sid: Any, found: _Found, messages: list[Message], flagged: bool) -> Session:
        """Combine the messages with the ``sessions`` row into a :class:`Session`."""
        info = self._session_row(sid)
        parent = info.get("parent_session_id")
        parent_messages = self._parent_messages(parent) if parent else []
        dropped = 0
        if flagged or parent_messages:
            messages, dropped = drop_compaction_copies(messages, parent_messages)
        prompt = self._system_prompt(info)
        if prompt and not (
            messages and messages[0].role == "system" and messages[0].content == prompt
        ):
            messages.insert(0, Message("system", prompt))
        end_reason = _text(info.get("end_reason"))
        metadata: dict[str, Any] = {
            "hermes_source": _text(info.get("source")),
            "schema_version": self.layout.schema_version,
        }
        for key in ("parent_session_id", "cwd"):
            value = _text(info.get(key))
            if value:
                metadata[key] = value
        if dropped:
            metadata["compaction_dropped"] = dropped
        if found.inactive:
            metadata["inactive_messages"] = found.inactive
        return Session(
            source=HermesSource.name,
            external_id=str(sid),
            messages=messages,
            outcome=0.0 if end_reason == "error" else None,
            model=_text(info.get("model")),
            started_at=_number(info.get("started_at")),
            ended_at=_number(info.get("ended_at")),
            end_reason=end_reason,
            title=_text(info.get("title")),
            origin=str(self.path),
            fingerprint=found.fingerprint,
            metadata=metadata,
        )


def _why(exc: BaseException) -> str:
    """A short reason for a sqlite error, with a hint for the common lock case."""
    text = str(exc) or type(exc).__name__
    if "locked" in text or "busy" in text:
        return f"{text}: another process holds a lock; retry when it is done"
    return text


def _count_unreadable(report: IngestReport, n: int, path: Path) -> None:
    """Count ``n`` sessions that could not be read, keeping one example."""
    if n > 0:
        report.skip("unreadable session", str(path))
        report.skipped["unreadable session"] += n - 1


__all__ = ["HermesSource", "decode_content", "drop_compaction_copies"]

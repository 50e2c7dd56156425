"""Bounded, file-backed memory in Hermes Agent's format: ``MEMORY.md`` and ``USER.md``.

Format (what Hermes reads and writes, byte for byte): a file is a list of entries
joined by a line holding only ``§`` (the separator is ``"\\n§\\n"``), entries may span
lines, surrounding whitespace is not part of an entry, and an empty file means no
entries. Each file has a *character* budget on the joined text (2,200 for
``MEMORY.md``, 1,375 for ``USER.md``) because characters mean the same for every model.

Writes are a batch of operations (``add``, ``replace``, ``remove``) applied all or
nothing under the file's lock and checked against the budget only once, on the final
result, so one batch can free room and add in a single call. ``replace`` and
``remove`` find their entry by a substring (``old_text``), which must pick exactly one
distinct entry. A batch that leaves the file smaller than it was is accepted even above
the budget, so a file over a lowered limit can still be cleaned up.

A file that does not parse cleanly is never overwritten: invalid UTF-8, or an entry
longer than the whole budget (which only happens when something other than the
memory tool appended to the file), makes every write fail with a
:class:`~warmstart.review.errors.MemoryFileError` and leaves a copy beside the file, so
nothing the user or another tool put there is lost.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from warmstart.review.config import DEFAULT_MEMORY_LIMIT, DEFAULT_USER_LIMIT
from warmstart.review.errors import MemoryFileError, MemoryWriteError
from warmstart.review.files import DEFAULT_LOCK_TIMEOUT, atomic_write_text, locked

ENTRY_DELIMITER = "\n§\n"
Target = Literal["memory", "user"]
TARGETS: tuple[str, ...] = get_args(Target)
FILENAMES: dict[str, str] = {"memory": "MEMORY.md", "user": "USER.md"}
Action = Literal["add", "replace", "remove"]
ACTIONS: tuple[str, ...] = get_args(Action)


def check_target(target: object) -> Target:
    """``target`` if it is ``memory`` or ``user``, else a :class:`MemoryWriteError`."""
    if target not in TARGETS:
        raise MemoryWriteError(f"invalid target {target!r}; use 'memory' or 'user'")
    return target  # type: ignore[return-value]


def parse_entries(text: str) -> list[str]:
    """Split a memory file into entries the way Hermes does (strip, drop empties)."""
    if not text.strip():
        return []
    return [entry.strip() for entry in text.split(ENTRY_DELIMITER) if entry.strip()]


def render_entries(entries: Sequence[str]) -> str:
    """The file text for ``entries``: joined by the separator line, nothing else."""
    return ENTRY_DELIMITER.join(entries)


def joined_length(entries: Sequence[str]) -> int:
    """Characters the entries take in the file, which is what the budget counts."""
    return len(render_entries(entries)) if entries else 0


@dataclass(frozen=True)
class MemoryOp:
    """One operation of a batch; ``content`` for add/replace, ``old_text`` to find."""

    action: Action
    content: str = ""
    old_text: str = ""

    @classmethod
    def parse(cls, raw: object, position: int = 1) -> MemoryOp:
        """Validate one ``{action, content?, old_text?}`` object from a tool call."""
        where = f"operation {position}"
        if not isinstance(raw, Mapping):
            raise MemoryWriteError(
                f"{where} must be an object like {{'action': 'add', 'content': '...'}}, "
                f"got {type(raw).__name__}"
            )
        action = raw.get("action")
        if action not in ACTIONS:
            raise MemoryWriteError(
                f"{where}: unknown action {action!r}; use add, replace or remove"
            )
        values: dict[str, str] = {}
        for key in ("content", "old_text"):
            value = raw.get(key)
            if value is None:
                value = ""
            if not isinstance(value, str):
                raise MemoryWriteError(f"{where}: {key} must be a string")
            values[key] = value.strip()
        op = cls(action, values["content"], values["old_text"])
        op.check(where)
        return op

    def check(self, where: str = "operation") -> None:
        """Refuse operations missing what their action needs, or breaking the format."""
        if self.action in ("add", "replace") and not self.content:
            hint = " (use 'remove' to delete an entry)" if self.action == "replace" else ""
            raise MemoryWriteError(f"{where} ({self.action}): content is required{hint}")
        if self.action in ("replace", "remove") and not self.old_text:
            raise MemoryWriteError(
                f"{where} ({self.action}): old_text is required, a short unique part of "
                "the entry to change"
            )
        if ENTRY_DELIMITER in f"\n{self.content}\n":
            raise MemoryWriteError(
                f"{where}: content must not contain a line holding only '§', which "
                "separates entries"
            )


@dataclass(frozen=True)
class MemoryChange:
    """What a batch did (or, in a dry run, would do) to one target."""

    target: Target
    before: list[str]
    after: list[str]
    limit: int
    operations: list[MemoryOp] = field(default_factory=list)
    dry_run: bool = False

    @property
    def changed(self) -> bool:
        """False when every operation was a no-op (an entry that already existed)."""
        return self.before != self.after

    @property
    def chars(self) -> int:
        """Characters used after the change."""
        return joined_length(self.after)

    @property
    def usage(self) -> str:
        """``'15% — 340/2,200 chars'``, as Hermes reports it."""
        percent = min(100, int(self.chars * 100 / self.limit)) if self.limit else 0
        return f"{percent}% — {self.chars:,}/{self.limit:,} chars"


class MemoryStore:
    """``MEMORY.md`` and ``USER.md`` in one folder (``<home>/memories`` by default)."""

    def __init__(
        self,
        directory: Path,
        *,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        user_limit: int = DEFAULT_USER_LIMIT,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    ) -> None:
        self.directory = Path(directory)
        self.limits: dict[str, int] = {"memory": memory_limit, "user": user_limit}
        self.lock_timeout = lock_timeout

    @classmethod
    def at_home(cls, home: Path, **options: Any) -> MemoryStore:
        """The store of a Hermes-style home: ``<home>/memories``."""
        return cls(Path(home) / "memories", **options)

    def __repr__(self) -> str:
        return f"MemoryStore({str(self.directory)!r})"

    def path(self, target: str) -> Path:
        """The file holding ``target``."""
        return self.directory / FILENAMES[check_target(target)]

    def limit(self, target: str) -> int:
        """The character budget of ``target``."""
        return self.limits[check_target(target)]

    # reading ---------------------------------------------------------------------

    def read_text(self, target: str) -> str:
        """The raw file text ('' when missing); unreadable files raise MemoryFileError."""
        path = self.path(target)
        if not path.exists():
            return ""
        if not path.is_file():
            raise MemoryFileError(f"{path.name} is not a regular file: {path}")
        data = path.read_bytes()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            backup = self._backup(path, data)
            raise MemoryFileError(
                f"{path.name} is not valid UTF-8 text (byte {exc.start}); it was not "
                f"changed and a copy is at {backup.name}. Ask the user to repair it "
                "(`warmstart memory edit`) before saving more memories.",
                {"path": str(path), "backup": str(backup)},
            ) from exc

    def entries(self, target: str) -> list[str]:
        """Entries of ``target``, duplicates removed (first kept), as Hermes loads them."""
        return list(dict.fromkeys(parse_entries(self.read_text(target))))

    def usage(self, target: str) -> tuple[int, int]:
        """``(characters used, limit)`` of ``target``."""
        return joined_length(self.entries(target)), self.limit(target)

    # writing ---------------------------------------------------------------------

    def apply(
        self, target: str, operations: Iterable[MemoryOp], *, dry_run: bool = False
    ) -> MemoryChange:
        """Apply ``operations`` to ``target`` all or nothing, under the file lock.

        Raises :class:`MemoryWriteError` (nothing matched, ambiguous match, over the
        budget; ``details`` carries the current entries and usage) or
        :class:`MemoryFileError` (the file is unreadable or edited out of shape). With
        ``dry_run`` the result is computed and checked but not written.
        """
        checked = check_target(target)
        ops = [MemoryOp(op.action, op.content.strip(), op.old_text.strip()) for op in operations]
        if not ops:
            raise MemoryWriteError("no operations given")
        for position, op in enumerate(ops, 1):
            op.check(f"operation {position}")
        path = self.path(checked)
        with locked(path, self.lock_timeout):
            before = self._load_for_write(checked)
            after = self._plan(checked, before, ops)
            change = MemoryChange(checked, before, after, self.limit(checked), ops, dry_run)
            if change.changed and not dry_run:
                atomic_write_text(path, render_entries(after))
        return change

    def add(self, target: str, content: str) -> MemoryChange:
        """Append one entry (a no-op when it already exists)."""
        return self.apply(target, [MemoryOp("add", content.strip())])

    def replace(self, target: str, old_text: str, content: str) -> MemoryChange:
        """Replace the one entry containing ``old_text`` with ``content``."""
        return self.apply(target, [MemoryOp("replace", content.strip(), old_text.strip())])

    def remove(self, target: str, old_text: str) -> MemoryChange:
        """Remove the one entry containing ``old_text``."""
        return self.apply(target, [MemoryOp("remove", old_text=old_text.strip())])

    def set_entries(self, target: str, entries: Sequence[str]) -> MemoryChange:
        """Replace the whole file (``memory edit``/``clear``), within the same rules.

        Unlike :meth:`apply` this does not refuse a file edited out of shape, since the
        user is rewriting it on purpose; it still enforces the budget and separator.
        """
        checked = check_target(target)
        cleaned = list(dict.fromkeys(e.strip() for e in entries if e.strip()))
        for position, entry in enumerate(cleaned, 1):
            MemoryOp("add", entry).check(f"entry {position}")
        limit = self.limit(checked)
        path = self.path(checked)
        with locked(path, self.lock_timeout):
            try:
                before = self.entries(checked)
            except MemoryFileError:
                before = []
            if joined_length(cleaned) > limit:
                raise MemoryWriteError(
                    f"{FILENAMES[checked]} would hold {joined_length(cleaned):,} characters, "
                    f"over its limit of {limit:,}; nothing was changed",
                    {"usage": f"{joined_length(cleaned):,}/{limit:,}"},
                )
            atomic_write_text(path, render_entries(cleaned))
        return MemoryChange(checked, before, cleaned, limit)

    def clear(self, target: str) -> MemoryChange:
        """Empty ``target``."""
        return self.set_entries(target, [])

    # internals -------------------------------------------------------------------

    def _load_for_write(self, target: Target) -> list[str]:
        """Current entries, refusing a file whose rewrite would lose someone's text."""
        path = self.path(target)
        text = self.read_text(target)
        entries = list(dict.fromkeys(parse_entries(text)))
        limit = self.limit(target)
        oversize = [e for e in entries if len(e) > limit]
        if oversize:
            backup = self._backup(path, text.encode("utf-8"))
            raise MemoryFileError(
                f"{path.name} holds an entry of {len(oversize[0]):,} characters, more than "
                f"its whole limit of {limit:,}: it was edited outside the memory tool. "
                f"Nothing was changed and a copy is at {backup.name}. Ask the user to "
                "split or shorten it (`warmstart memory edit`) before saving more.",
                {"path": str(path), "backup": str(backup), "usage": self._usage(entries, limit)},
            )
        return entries

    def _plan(self, target: Target, before: list[str], ops: Sequence[MemoryOp]) -> list[str]:
        """The entries after ``ops``, or a MemoryWriteError naming the first failure."""
        working = list(before)
        limit = self.limit(target)
        for position, op in enumerate(ops, 1):
            where = f"operation {position} ({op.action})"
            if op.action == "add":
                if op.content not in working:
                    working.append(op.content)
                continue
            matches = [i for i, entry in enumerate(working) if op.old_text in entry]
            if not matches:
                raise self._refusal(f"{where}: no entry contains {op.old_text!r}", before, limit)
            if len({working[i] for i in matches}) > 1:
                raise self._refusal(
                    f"{where}: {op.old_text!r} is in {len(matches)} different entries; "
                    "use a longer, unique part of the one you mean",
                    before,
                    limit,
                )
            if op.action == "replace":
                working[matches[0]] = op.content
                working = list(dict.fromkeys(working))
            else:
                working.pop(matches[0])
        total = joined_length(working)
        # A batch that shrinks the file is always allowed, so a file already over a
        # (lowered) limit can be cleaned up one removal at a time.
        if total > limit and total > joined_length(before):
            raise self._refusal(
                f"{FILENAMES[target]} would hold {total:,} of its {limit:,} characters "
                f"after these {len(ops)} operation(s). Remove or shorten entries in the "
                "same batch (see current_entries), then retry",
                before,
                limit,
            )
        return working

    def _refusal(self, message: str, entries: list[str], limit: int) -> MemoryWriteError:
        return MemoryWriteError(
            f"{message}. Nothing was changed (a batch is all or nothing).",
            {"current_entries": entries, "usage": self._usage(entries, limit)},
        )

    @staticmethod
    def _usage(entries: list[str], limit: int) -> str:
        return f"{joined_length(entries):,}/{limit:,}"

    @staticmethod
    def _backup(path: Path, data: bytes) -> Path:
        """Keep a copy of a file we refuse to touch; named by content, so retries reuse it."""
        digest = hashlib.sha256(data).hexdigest()[:12]
        backup = path.with_name(f"{path.name}.bak.{digest}")
        if not backup.exists():
            backup.write_bytes(data)
        return backup

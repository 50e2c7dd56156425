"""The review tools: ``memory`` and ``skill_manage`` (writes), ``skills_list`` and
``skill_view`` (reads), as OpenAI function schemas over the two stores.

Their arguments and results follow Hermes Agent's tools of the same names, so a model
that learned them there uses them here unchanged, and a warm history mined from Hermes
sessions shows correct calls. Every call returns a JSON object with ``success`` and
``message`` (failures also carry ``error`` and what the model needs to fix the call:
current entries, usage, a file preview); no exception ever escapes into the run. The
same tools can be given to the main agent (origin ``assistant_tool``), which is how the
review triggers learn that the agent saved something itself.

With write approval on, writes are checked (a dry run against the live store, so a
doomed write fails now, not at approval time) and then staged instead of applied; the
result says ``staged`` and gives the pending id.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from warmstart.review.config import DEFAULT_MEMORY_LIMIT, DEFAULT_USER_LIMIT
from warmstart.review.errors import PendingError, StoreWriteError
from warmstart.review.memory_store import (
    FILENAMES,
    MemoryChange,
    MemoryOp,
    MemoryStore,
    check_target,
)
from warmstart.review.pending import PendingStore
from warmstart.review.provenance import Provenance, ProvenanceLog
from warmstart.review.safety import REVIEW_TOOLS
from warmstart.review.skill_store import SKILL_FILE, SkillChange, SkillStore

if TYPE_CHECKING:  # the runtime pulls in the openai client; the stores must not need it
    from warmstart.runtime.approval import ApprovalHook, Decision, ToolRequest
    from warmstart.runtime.tools import ToolRegistry

WRITE_TOOLS = ("memory", "skill_manage")
"""The tools whose successful results the action summary reports."""
SKILL_ACTIONS = ("create", "patch", "edit", "delete", "write_file", "remove_file")

MEMORY_SCHEMA: dict[str, Any] = {
    "name": "memory",
    "description": (
        "Save durable facts that should survive into future sessions. Targets: 'user' "
        "for who the user is (name, role, preferences, how they want you to work), "
        "'memory' for your own notes (environment facts, conventions, tool quirks). "
        "Make all changes in ONE call with 'operations' (a list of {action, content?, "
        "old_text?}); the batch is applied all or nothing and the character limit is "
        "checked on the final result, so you can remove stale entries and add new ones "
        "together. 'replace' and 'remove' find the entry by old_text, a short unique "
        "substring of it. When a write is refused the result shows the current entries. "
        "Skip trivial facts, task progress and temporary state; procedures belong in a "
        "skill."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "target": {
                "type": "string",
                "enum": ["memory", "user"],
                "description": "'memory' for your notes, 'user' for the user profile.",
            },
            "operations": {
                "type": "array",
                "description": "Changes applied atomically, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["add", "replace", "remove"]},
                        "content": {
                            "type": "string",
                            "description": "Entry text for add and replace.",
                        },
                        "old_text": {
                            "type": "string",
                            "description": "Unique part of the entry to replace or remove.",
                        },
                    },
                    "required": ["action"],
                },
            },
            "action": {
                "type": "string",
                "enum": ["add", "replace", "remove"],
                "description": "A single change (omit when using 'operations').",
            },
            "content": {"type": "string", "description": "Entry text (single change)."},
            "old_text": {
                "type": "string",
                "description": "Unique part of the entry to change (single change).",
            },
        },
        "required": ["target"],
    },
}

SKILL_MANAGE_SCHEMA: dict[str, Any] = {
    "name": "skill_manage",
    "description": (
        "Create and maintain skills: reusable instructions for a class of task, each a "
        "folder with SKILL.md (YAML front matter with 'name' and 'description' of at most "
        "1,024 characters, then steps, exact commands, pitfalls and checks) and optional "
        "support files under references/, templates/, scripts/ or assets/. Actions: "
        "patch (old_string -> new_string, exact text; preferred for fixes), create (full "
        "SKILL.md, optional category), edit (full rewrite), delete, write_file and "
        "remove_file (support files). Read a skill with skill_view before patching it."
    ),
    "parameters": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": list(SKILL_ACTIONS)},
            "name": {
                "type": "string",
                "description": "Skill name: lowercase letters, digits, '-', '_', '.'.",
            },
            "content": {
                "type": "string",
                "description": "Full SKILL.md text, for create and edit.",
            },
            "category": {
                "type": "string",
                "description": "Optional folder grouping the skill (create only).",
            },
            "old_string": {
                "type": "string",
                "description": "Exact text to replace (patch); must be unique.",
            },
            "new_string": {
                "type": "string",
                "description": "Replacement text (patch); empty deletes the text.",
            },
            "replace_all": {
                "type": "boolean",
                "description": "Patch every occurrence instead of exactly one.",
            },
            "file_path": {
                "type": "string",
                "description": "Support file such as 'references/notes.md' (write_file, "
                "remove_file; patch defaults to SKILL.md).",
            },
            "file_content": {"type": "string", "description": "File text (write_file)."},
        },
        "required": ["action", "name"],
    },
}

SKILLS_LIST_SCHEMA: dict[str, Any] = {
    "name": "skills_list",
    "description": "List existing skills with their category and description.",
    "parameters": {"type": "object", "properties": {}},
}

SKILL_VIEW_SCHEMA: dict[str, Any] = {
    "name": "skill_view",
    "description": "Read a skill's SKILL.md, or one of its support files with file_path.",
    "parameters": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "Skill name."},
            "file_path": {"type": "string", "description": "Optional support file path."},
        },
        "required": ["name"],
    },
}

SCHEMAS: dict[str, dict[str, Any]] = {
    "memory": MEMORY_SCHEMA,
    "skill_manage": SKILL_MANAGE_SCHEMA,
    "skills_list": SKILLS_LIST_SCHEMA,
    "skill_view": SKILL_VIEW_SCHEMA,
}


def tool_result(success: bool, message: str, **extra: Any) -> str:
    """The JSON every review tool returns; failures repeat the message as ``error``."""
    body: dict[str, Any] = {"success": success, "message": message}
    if not success:
        body["error"] = message
    body.update({k: v for k, v in extra.items() if v is not None})
    return json.dumps(body, ensure_ascii=False, default=str)


class ReviewTools:
    """The four review tools bound to one home's stores and one write provenance."""

    def __init__(
        self,
        memory: MemoryStore,
        skills: SkillStore,
        *,
        provenance: Provenance | None = None,
        log: ProvenanceLog | None = None,
        pending: PendingStore | None = None,
        write_approval: bool = False,
    ) -> None:
        """``write_approval`` stages writes in ``pending`` instead of applying them."""
        if write_approval and pending is None:
            raise ValueError("write_approval needs a PendingStore")
        self.memory_store = memory
        self.skill_store = skills
        self.provenance = provenance or Provenance()
        self.log = log
        self.pending = pending
        self.write_approval = write_approval
        self._calls: dict[int, tuple[object, str]] = {}
        self._calls_lock = threading.Lock()

    @classmethod
    def at_home(
        cls,
        home: Path,
        *,
        provenance: Provenance | None = None,
        memory_limit: int = DEFAULT_MEMORY_LIMIT,
        user_limit: int = DEFAULT_USER_LIMIT,
        write_approval: bool = False,
    ) -> ReviewTools:
        """Tools over ``<home>/memories``, ``<home>/skills``, its pending folder and log."""
        home = Path(home)
        return cls(
            MemoryStore.at_home(home, memory_limit=memory_limit, user_limit=user_limit),
            SkillStore.at_home(home),
            provenance=provenance,
            log=ProvenanceLog.at_home(home),
            pending=PendingStore(home),
            write_approval=write_approval,
        )

    # wiring ----------------------------------------------------------------------

    def functions(self) -> dict[str, Callable[[dict[str, Any]], str]]:
        """Tool name -> callable taking the parsed arguments and returning JSON."""
        return {
            "memory": self.memory,
            "skill_manage": self.skill_manage,
            "skills_list": self.skills_list,
            "skill_view": self.skill_view,
        }

    def register(self, registry: ToolRegistry, names: Iterable[str] = REVIEW_TOOLS) -> None:
        """Add the named tools (all four by default) to ``registry``."""
        functions = self.functions()
        for name in names:
            registry.register(name, functions[name], schema=SCHEMAS[name])

    def track(self, hook: ApprovalHook | None = None) -> ApprovalHook:
        """Wrap an approval hook so writes learn their tool call id for provenance.

        The runtime hands the hook and the tool the very same arguments object, so the
        hook notes ``id(arguments) -> call id`` and the tool looks it up, on whichever
        thread it runs. Without this wrapper writes are still recorded, just without
        ``tool_call_id``.
        """
        from warmstart.runtime.approval import default_approval

        inner = hook or default_approval

        def tracked(request: ToolRequest) -> Decision:
            decision = inner(request)
            if decision.verdict != "deny" and request.tool in WRITE_TOOLS:
                with self._calls_lock:
                    if len(self._calls) > 256:  # held-then-denied calls never claim theirs
                        self._calls.pop(next(iter(self._calls)))
                    self._calls[id(request.arguments)] = (request.arguments, request.call_id)
            return decision

        return tracked

    def _call_provenance(self, args: Mapping[str, Any]) -> Provenance:
        with self._calls_lock:
            entry = self._calls.pop(id(args), None)
        if entry is not None and entry[0] is args:
            return self.provenance.with_call(entry[1])
        return self.provenance

    # memory ------------------------------------------------------------------------

    def memory(self, args: dict[str, Any]) -> str:
        """The ``memory`` tool: one change or an atomic batch on ``memory`` or ``user``."""
        provenance = self._call_provenance(args)
        try:
            target = check_target(args.get("target") or "memory")
            ops = _memory_ops(args)
            if self.write_approval:
                self.memory_store.apply(target, ops, dry_run=True)
                return self._stage_memory(target, ops, provenance)
            change = self.memory_store.apply(target, ops)
            if change.changed:
                self._log_memory(change, provenance)
            return tool_result(
                True,
                _memory_message(change),
                target=target,
                changed=change.changed,
                usage=change.usage,
                entry_count=len(change.after),
                done=True,
                note="Saved. This update is complete; do not repeat it."
                if change.changed
                else None,
            )
        except StoreWriteError as exc:
            return tool_result(False, exc.message, **exc.details)
        except Exception as exc:  # a store bug must read as a tool error, not end the run
            return tool_result(False, f"memory tool failed: {type(exc).__name__}: {exc}")

    def _stage_memory(self, target: str, ops: list[MemoryOp], provenance: Provenance) -> str:
        assert self.pending is not None
        if len(ops) == 1:
            op = ops[0]
            payload: dict[str, Any] = {
                "action": op.action, "target": target, "content": op.content or None,
                "old_text": op.old_text or None,
            }  # fmt: skip
            gist = op.content or op.old_text
        else:
            payload = {
                "action": "batch",
                "target": target,
                "operations": [_op_dict(o) for o in ops],
            }
            gist = "; ".join(f"{o.action}: {o.content or o.old_text}" for o in ops)
        label = "user profile" if target == "user" else "memory"
        record = self.pending.stage(
            "memory", payload, summary=f"{label}: {gist[:160]}", provenance=provenance
        )
        if self.log is not None:
            self.log.record_many(
                provenance,
                [{"subsystem": "memory", "target": target, "status": "staged",
                  "pending_id": record["id"], **_op_dict(op)} for op in ops],
            )  # fmt: skip
        return tool_result(
            True,
            f"Staged for approval (write approval is on); not saved yet. The user reviews it "
            f"with `warmstart memory pending` (id {record['id']}).",
            staged=True,
            pending_id=record["id"],
            target=target,
        )

    def _log_memory(self, change: MemoryChange, provenance: Provenance, **extra: Any) -> None:
        if self.log is not None:
            self.log.record_many(
                provenance,
                [{"subsystem": "memory", "target": change.target, "status": "applied",
                  **_op_dict(op), **extra} for op in change.operations],
            )  # fmt: skip

    # skills ------------------------------------------------------------------------

    def skill_manage(self, args: dict[str, Any]) -> str:
        """The ``skill_manage`` tool: create, patch, edit, delete, write_file, remove_file."""
        provenance = self._call_provenance(args)
        try:
            action = args.get("action")
            if action not in SKILL_ACTIONS:
                raise StoreWriteError(
                    f"unknown action {action!r}; use one of {', '.join(SKILL_ACTIONS)}"
                )
            if self.write_approval:
                change = self._skill_write(args, dry_run=True)
                return self._stage_skill(args, change, provenance)
            change = self._skill_write(args, dry_run=False)
            self._log_skill(change, provenance, args)
            return tool_result(
                True,
                change.message,
                action=change.action,
                name=change.name,
                path=_relative(change.path, self.skill_store.root),
                file_path=change.file_path,
            )
        except StoreWriteError as exc:
            return tool_result(False, exc.message, **exc.details)
        except Exception as exc:
            return tool_result(False, f"skill_manage failed: {type(exc).__name__}: {exc}")

    def _skill_write(self, args: Mapping[str, Any], *, dry_run: bool) -> SkillChange:
        action, name = args.get("action"), args.get("name")
        if not isinstance(name, str) or not name:
            raise StoreWriteError("name is required: the skill's name")
        store = self.skill_store
        if action == "create":
            return store.create(
                name, _text(args, "content"), _opt_text(args, "category"), dry_run=dry_run
            )
        if action == "edit":
            return store.edit(name, _text(args, "content"), dry_run=dry_run)
        if action == "patch":
            return store.patch(
                name,
                _text(args, "old_string"),
                _text(args, "new_string", allow_empty=True),
                _opt_text(args, "file_path"),
                replace_all=bool(args.get("replace_all", False)),
                dry_run=dry_run,
            )
        if action == "delete":
            return store.delete(name, dry_run=dry_run)
        if action == "write_file":
            return store.write_file(
                name,
                _text(args, "file_path"),
                _text(args, "file_content", allow_empty=True),
                dry_run=dry_run,
            )
        return store.remove_file(name, _text(args, "file_path"), dry_run=dry_run)

    def _stage_skill(
        self, args: Mapping[str, Any], change: SkillChange, provenance: Provenance
    ) -> str:
        assert self.pending is not None
        payload = {k: v for k, v in args.items() if k in _SKILL_KEYS and v is not None}
        gist = f"{change.action} skill '{change.name}'" + (
            f" {change.file_path}" if change.file_path else ""
        )
        record = self.pending.stage("skills", payload, summary=gist, provenance=provenance)
        if self.log is not None:
            self.log.record(
                provenance, subsystem="skills", action=change.action, status="staged",
                name=change.name, file_path=change.file_path, pending_id=record["id"],
            )  # fmt: skip
        return tool_result(
            True,
            f"Staged for approval (write approval is on); not saved yet. The user reviews it "
            f"with `warmstart memory pending` (id {record['id']}).",
            staged=True,
            pending_id=record["id"],
            action=change.action,
            name=change.name,
        )

    def _log_skill(
        self, change: SkillChange, provenance: Provenance, args: Mapping[str, Any], **extra: Any
    ) -> None:
        if self.log is not None:
            self.log.record(
                provenance, subsystem="skills", action=change.action, status="applied",
                name=change.name, file_path=change.file_path,
                category=args.get("category") if change.action == "create" else None, **extra,
            )  # fmt: skip

    def skills_list(self, args: dict[str, Any]) -> str:
        """The ``skills_list`` tool: every skill's name, category and description."""
        try:
            skills = [
                {"name": s.name, "category": s.category, "description": s.description,
                 "files": s.files or None, "error": s.error}
                for s in self.skill_store.list_skills()
            ]  # fmt: skip
            skills = [{k: v for k, v in s.items() if v is not None} for s in skills]
            message = f"{len(skills)} skill(s)." if skills else "No skills yet."
            return tool_result(True, message, skills=skills, count=len(skills))
        except Exception as exc:
            return tool_result(False, f"skills_list failed: {type(exc).__name__}: {exc}")

    def skill_view(self, args: dict[str, Any]) -> str:
        """The ``skill_view`` tool: a skill's SKILL.md or one support file."""
        try:
            name = args.get("name")
            if not isinstance(name, str) or not name:
                raise StoreWriteError("name is required")
            file_path = _opt_text(args, "file_path")
            if file_path in (SKILL_FILE, f"{name}/{SKILL_FILE}"):
                file_path = None
            content = self.skill_store.read(name, file_path)
            files = self.skill_store.support_files(self.skill_store.require(name))
            return tool_result(
                True,
                f"Contents of {file_path or SKILL_FILE} of skill '{name}'.",
                name=name,
                file_path=file_path or SKILL_FILE,
                content=content,
                files=files,
            )
        except StoreWriteError as exc:
            return tool_result(False, exc.message, **exc.details)
        except Exception as exc:
            return tool_result(False, f"skill_view failed: {type(exc).__name__}: {exc}")

    # approval ----------------------------------------------------------------------

    def apply_pending(self, pending_id: str) -> dict[str, Any]:
        """Apply a staged write now, record it with its original provenance, drop it.

        Raises :class:`PendingError` when the id is unknown and
        :class:`~warmstart.review.errors.StoreWriteError` when the write no longer
        applies (the store changed since); the record is kept in both cases.
        """
        if self.pending is None:
            raise PendingError("no pending store configured")
        record = self.pending.get(pending_id)
        payload = record["payload"]
        provenance = Provenance.from_dict(record.get("provenance") or {})
        if not record.get("provenance"):
            provenance = Provenance(write_origin=str(record.get("origin") or "unknown"))
        if record.get("subsystem") == "memory":
            target = check_target(payload.get("target") or "memory")
            ops = _memory_ops(payload)
            change = self.memory_store.apply(target, ops)
            if change.changed:
                self._log_memory(change, provenance, pending_id=pending_id, approved=True)
            message = _memory_message(change)
        else:
            if payload.get("action") not in SKILL_ACTIONS:
                raise PendingError(f"pending write {pending_id} has unknown action")
            skill_change = self._skill_write(payload, dry_run=False)
            self._log_skill(skill_change, provenance, payload, pending_id=pending_id,
                            approved=True)  # fmt: skip
            message = skill_change.message
        self.pending.discard(pending_id)
        return {"id": pending_id, "subsystem": record.get("subsystem"), "message": message}


_SKILL_KEYS = frozenset(
    {"action", "name", "content", "category", "old_string", "new_string", "replace_all",
     "file_path", "file_content"}
)  # fmt: skip


def _memory_ops(args: Mapping[str, Any]) -> list[MemoryOp]:
    """The operations of a memory call: the ``operations`` batch, or one ``action``.

    A Hermes pending record stores a batch as ``action: "batch"``; it replays the same.
    """
    operations = args.get("operations")
    if operations is not None and operations != []:
        if not isinstance(operations, list):
            raise StoreWriteError(
                "operations must be a list of {action, content?, old_text?} objects"
            )
        return [MemoryOp.parse(raw, i) for i, raw in enumerate(operations, 1)]
    if args.get("action") in (None, "", "batch"):
        raise StoreWriteError(
            "give 'operations' (a list of {action, content?, old_text?}) or a single "
            "'action' (add, replace or remove)"
        )
    return [MemoryOp.parse(dict(args), 1)]


def _op_dict(op: MemoryOp) -> dict[str, Any]:
    return {"action": op.action, "content": op.content or None, "old_text": op.old_text or None}


def _memory_message(change: MemoryChange) -> str:
    if not change.changed:
        return "Entry already exists (no duplicate added)."
    if len(change.operations) == 1:
        verb = {"add": "added", "replace": "replaced", "remove": "removed"}[
            change.operations[0].action
        ]
        return f"Entry {verb} in {FILENAMES[change.target]}."
    return f"Applied {len(change.operations)} operations to {FILENAMES[change.target]}."


def _text(args: Mapping[str, Any], key: str, *, allow_empty: bool = False) -> str:
    value = args.get(key)
    if not isinstance(value, str) or (not value and not allow_empty):
        raise StoreWriteError(f"{key} is required (a string)")
    return value


def _opt_text(args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise StoreWriteError(f"{key} must be a string")
    return value


def _relative(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)

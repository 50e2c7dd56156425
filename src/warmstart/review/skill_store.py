"""Skills on disk in Hermes Agent's layout: ``skills/[category/]NAME/SKILL.md``.

A skill is a folder named after it holding ``SKILL.md``, which must open with YAML
front matter (a mapping with ``name`` and a ``description`` of at most 1,024
characters, between ``---`` fences) followed by a non-empty Markdown body. Support
files live under ``references/``, ``templates/``, ``scripts/`` or ``assets/`` inside
the skill folder. These are the rules Hermes' own ``skill_manage`` enforces, so a skill
written here loads in Hermes and one written by Hermes can be patched here.

Safety: names are validated with :func:`warmstart.names.validate_name` and must be
lowercase (Hermes' rule); support-file paths must stay inside an allowed subfolder of
their skill after resolving symlinks; a delete refuses symlinked folders and anything
not strictly inside the skills root. Every change happens under one lock on the
skills root and every file is replaced atomically, so two reviewers cannot interleave
a read-modify-write. Every refusal is a :class:`~warmstart.review.errors.SkillWriteError`
whose message says what to fix; nothing is written when one is raised.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from warmstart.errors import InvalidNameError
from warmstart.names import validate_name
from warmstart.review.errors import SkillWriteError
from warmstart.review.files import DEFAULT_LOCK_TIMEOUT, atomic_write_text, locked

SKILL_FILE = "SKILL.md"
MAX_DESCRIPTION = 1_024
MAX_SKILL_CHARS = 100_000
MAX_FILE_BYTES = 1_048_576
SUPPORT_DIRS = ("references", "templates", "scripts", "assets")
EXCLUDED_DIRS = frozenset(
    {".git", ".github", ".hub", ".archive", ".venv", "venv", "node_modules",
     "site-packages", "__pycache__", ".tox", ".nox", ".pytest_cache", ".mypy_cache",
     ".ruff_cache"}
)  # fmt: skip
"""Folders Hermes' skill scanner never descends into; we skip the same ones."""
LOCK_NAME = ".warmstart-skills"
_LOWERCASE_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
_CLOSING_FENCE = re.compile(r"\n---\s*\n")


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(front matter, body)`` of a ``SKILL.md``, or a SkillWriteError saying what is wrong.

    Follows Hermes: one leading BOM is ignored, the file must start with ``---``, the
    front matter ends at the next line holding only ``---`` and must be a YAML mapping
    with ``name`` and ``description`` (at most 1,024 characters), and a body must follow.
    """
    if not text.strip():
        raise SkillWriteError("SKILL.md content is empty")
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        raise SkillWriteError(
            "SKILL.md must start with YAML front matter: a '---' line, 'name: ...', "
            "'description: ...', then a closing '---' line"
        )
    end = _CLOSING_FENCE.search(text[3:])
    if end is None:
        raise SkillWriteError("SKILL.md front matter is not closed: add a line holding '---'")
    try:
        meta = yaml.safe_load(text[3 : end.start() + 3])
    except yaml.YAMLError as exc:
        raise SkillWriteError(f"SKILL.md front matter is not valid YAML: {exc}") from exc
    if not isinstance(meta, dict):
        raise SkillWriteError("SKILL.md front matter must be a YAML mapping (key: value lines)")
    for key in ("name", "description"):
        if key not in meta:
            raise SkillWriteError(f"SKILL.md front matter must include '{key}'")
    description = str(meta["description"])
    if len(description) > MAX_DESCRIPTION:
        raise SkillWriteError(
            f"description is {len(description):,} characters; the limit is {MAX_DESCRIPTION:,}"
        )
    body = text[end.end() + 3 :]
    if not body.strip():
        raise SkillWriteError(
            "SKILL.md needs instructions after the front matter (steps, pitfalls, checks)"
        )
    return meta, body


def check_skill_name(name: object, *, new: bool = False) -> str:
    """A safe skill name; ``new`` names must also be lowercase, as Hermes requires."""
    if not isinstance(name, str):
        raise SkillWriteError("skill name must be a string")
    try:
        validate_name(name, "skill")
    except InvalidNameError as exc:
        raise SkillWriteError(str(exc)) from exc
    if new and not _LOWERCASE_NAME.match(name):
        raise SkillWriteError(
            f"skill name {name!r} must be lowercase letters, digits, '.', '_' or '-' "
            "(so Hermes can manage it too)"
        )
    return name


def check_category(category: object) -> str | None:
    """An optional single-folder category, validated like a new skill name."""
    if category is None or category == "":
        return None
    if not isinstance(category, str):
        raise SkillWriteError("category must be a string")
    try:
        return check_skill_name(category.strip(), new=True)
    except SkillWriteError as exc:
        raise SkillWriteError(f"invalid category: {exc}") from exc


def check_support_path(file_path: object) -> PurePosixPath:
    """A relative path under one of the support folders, e.g. ``references/api.md``."""
    if not isinstance(file_path, str) or not file_path.strip():
        raise SkillWriteError("file_path is required, e.g. 'references/notes.md'")
    path = PurePosixPath(file_path.strip().replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        raise SkillWriteError(f"file_path {file_path!r} must be relative, without '..'")
    if not path.parts or path.parts[0] not in SUPPORT_DIRS:
        raise SkillWriteError(
            f"file_path {file_path!r} must be under one of: {', '.join(SUPPORT_DIRS)}"
        )
    if len(path.parts) < 2:
        raise SkillWriteError(f"file_path {file_path!r} names a folder; add a file name")
    return path


@dataclass(frozen=True)
class SkillInfo:
    """One skill found on disk; ``error`` says why its ``SKILL.md`` does not validate."""

    name: str
    category: str | None
    path: Path
    description: str = ""
    error: str | None = None
    files: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SkillChange:
    """What a skill write did (or, in a dry run, would do)."""

    action: str
    name: str
    message: str
    path: Path
    file_path: str | None = None
    description: str = ""
    dry_run: bool = False


class SkillStore:
    """The skills folder of a home (``<home>/skills``)."""

    def __init__(self, root: Path, *, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> None:
        self.root = Path(root)
        self.lock_timeout = lock_timeout

    @classmethod
    def at_home(cls, home: Path, **options: Any) -> SkillStore:
        """The store of a Hermes-style home: ``<home>/skills``."""
        return cls(Path(home) / "skills", **options)

    def __repr__(self) -> str:
        return f"SkillStore({str(self.root)!r})"

    # reading ---------------------------------------------------------------------

    def _skill_dirs(self) -> list[Path]:
        """Every folder holding a SKILL.md, skipping the folders Hermes skips."""
        if not self.root.is_dir():
            return []
        found: list[Path] = []
        seen: set[str] = set()
        # Symlinked skills are followed, as Hermes does, but each real folder only once
        # so a link cycle cannot loop forever.
        for folder, dirs, files in os.walk(self.root, followlinks=True):
            real = os.path.realpath(folder)
            if real in seen:
                dirs[:] = []
                continue
            seen.add(real)
            has_skill = SKILL_FILE in files
            dirs[:] = sorted(
                d for d in dirs
                if d not in EXCLUDED_DIRS and not (has_skill and d in SUPPORT_DIRS)
            )  # fmt: skip
            if has_skill and Path(folder) != self.root:
                found.append(Path(folder))
        return found

    def find(self, name: str) -> Path | None:
        """The folder of skill ``name`` (any category), or None."""
        check_skill_name(name)
        for folder in self._skill_dirs():
            if folder.name == name:
                return folder
        return None

    def require(self, name: str) -> Path:
        """The folder of skill ``name``, or a SkillWriteError that lists what exists."""
        folder = self.find(name)
        if folder is None:
            names = sorted(d.name for d in self._skill_dirs())
            known = ", ".join(names[:30]) + (
                f" and {len(names) - 30} more" if len(names) > 30 else ""
            )
            raise SkillWriteError(
                f"no skill named {name!r}; existing skills: {known or '(none yet)'}. "
                "Use action='create' to make a new one."
            )
        return folder

    def list_skills(self) -> list[SkillInfo]:
        """Every skill, sorted by category then name; broken ones carry ``error``."""
        skills = []
        for folder in self._skill_dirs():
            rel = folder.relative_to(self.root)
            category = "/".join(rel.parts[:-1]) or None
            description, error = "", None
            try:
                meta, _ = split_front_matter((folder / SKILL_FILE).read_text(encoding="utf-8"))
                description = str(meta.get("description", ""))
            except SkillWriteError as exc:
                error = exc.message
            except (OSError, UnicodeDecodeError) as exc:
                error = f"cannot read SKILL.md: {exc}"
            skills.append(
                SkillInfo(
                    folder.name, category, folder, description, error, self.support_files(folder)
                )
            )
        return sorted(skills, key=lambda s: (s.category or "", s.name))

    def read(self, name: str, file_path: str | None = None) -> str:
        """The text of a skill's ``SKILL.md`` or of one of its support files."""
        folder = self.require(name)
        target = folder / SKILL_FILE if not file_path else self._support_target(folder, file_path)
        if not target.is_file():
            raise SkillWriteError(
                f"skill {name!r} has no file {file_path or SKILL_FILE!r}; "
                f"it has: {', '.join([SKILL_FILE, *self.support_files(folder)])}"
            )
        try:
            return target.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SkillWriteError(f"cannot read {target.name} of skill {name!r}: {exc}") from exc

    @staticmethod
    def support_files(folder: Path) -> list[str]:
        files: list[str] = []
        for sub in SUPPORT_DIRS:
            base = folder / sub
            if base.is_dir():
                files.extend(
                    p.relative_to(folder).as_posix() for p in sorted(base.rglob("*")) if p.is_file()
                )
        return files

    # writing ---------------------------------------------------------------------

    def create(
        self, name: str, content: str, category: str | None = None, *, dry_run: bool = False
    ) -> SkillChange:
        """A new skill from a full ``SKILL.md``; its front matter must name it ``name``."""
        check_skill_name(name, new=True)
        folder_category = check_category(category)
        meta = self._check_skill_md(content)
        if str(meta.get("name")) != name:
            raise SkillWriteError(
                f"front matter says name: {meta.get('name')!r} but the skill is {name!r}; "
                "make them the same"
            )
        with locked(self._lock_target(), self.lock_timeout):
            existing = self.find(name)
            if existing is not None:
                raise SkillWriteError(
                    f"a skill named {name!r} already exists at {self._rel(existing)}; "
                    "use action='patch' or 'edit' to change it"
                )
            folder = self.root / folder_category / name if folder_category else self.root / name
            if not dry_run:
                atomic_write_text(folder / SKILL_FILE, content)
        return SkillChange(
            "create", name, f"Skill '{name}' created.", folder,
            description=str(meta.get("description", "")), dry_run=dry_run,
        )  # fmt: skip

    def edit(self, name: str, content: str, *, dry_run: bool = False) -> SkillChange:
        """Replace a skill's whole ``SKILL.md`` (for major rewrites; prefer :meth:`patch`)."""
        meta = self._check_skill_md(content)
        with locked(self._lock_target(), self.lock_timeout):
            folder = self.require(name)
            if not dry_run:
                atomic_write_text(folder / SKILL_FILE, content)
        return SkillChange(
            "edit", name, f"Skill '{name}' updated (full rewrite).", folder,
            description=str(meta.get("description", "")), dry_run=dry_run,
        )  # fmt: skip

    def patch(
        self,
        name: str,
        old_string: str,
        new_string: str,
        file_path: str | None = None,
        *,
        replace_all: bool = False,
        dry_run: bool = False,
    ) -> SkillChange:
        """Replace an exact ``old_string`` in ``SKILL.md`` (or a support file).

        The text must occur exactly once unless ``replace_all``; a patched ``SKILL.md``
        must still validate, so a patch can never strip the front matter.
        """
        if not isinstance(old_string, str) or not old_string:
            raise SkillWriteError("old_string is required: exact text copied from the file")
        if not isinstance(new_string, str):
            raise SkillWriteError("new_string is required (an empty string deletes the text)")
        label = file_path or SKILL_FILE
        with locked(self._lock_target(), self.lock_timeout):
            folder = self.require(name)
            is_skill_md = not file_path or file_path.strip() in (SKILL_FILE, f"{name}/{SKILL_FILE}")
            target = folder / SKILL_FILE if is_skill_md else self._support_target(folder, label)
            if not target.is_file():
                raise SkillWriteError(f"skill {name!r} has no file {label!r}")
            text = target.read_text(encoding="utf-8")
            count = text.count(old_string)
            if count == 0:
                preview = text[:500] + ("…" if len(text) > 500 else "")
                raise SkillWriteError(
                    f"old_string not found in {label} of skill {name!r}; copy it exactly "
                    "from skill_view",
                    {"file_preview": preview},
                )
            if count > 1 and not replace_all:
                raise SkillWriteError(
                    f"old_string occurs {count} times in {label}; include more surrounding "
                    "text to make it unique, or set replace_all"
                )
            updated = (
                text.replace(old_string, new_string)
                if replace_all
                else text.replace(old_string, new_string, 1)
            )
            if is_skill_md:
                try:
                    self._check_skill_md(updated)
                except SkillWriteError as exc:
                    raise SkillWriteError(
                        f"the patch would leave SKILL.md invalid: {exc.message}"
                    ) from exc
            else:
                self._check_size(updated, label)
            if not dry_run:
                atomic_write_text(target, updated)
        replaced = count if replace_all else 1
        return SkillChange(
            "patch", name,
            f"Patched {label} in skill '{name}' ({replaced} replacement{'s' * (replaced > 1)}).",
            folder, None if is_skill_md else label, dry_run=dry_run,
        )  # fmt: skip

    def delete(self, name: str, *, dry_run: bool = False) -> SkillChange:
        """Remove a skill folder (and its category folder when that becomes empty)."""
        with locked(self._lock_target(), self.lock_timeout):
            folder = self.require(name)
            self._check_inside(folder)
            if not dry_run:
                shutil.rmtree(folder)
                parent = folder.parent
                if parent != self.root and parent.is_dir() and not any(parent.iterdir()):
                    parent.rmdir()
        return SkillChange("delete", name, f"Skill '{name}' deleted.", folder, dry_run=dry_run)

    def write_file(
        self, name: str, file_path: str, content: str, *, dry_run: bool = False
    ) -> SkillChange:
        """Add or overwrite a support file (under references/, templates/, ...)."""
        if not isinstance(content, str):
            raise SkillWriteError("file_content is required (a string)")
        rel = check_support_path(file_path)
        self._check_size(content, rel.as_posix())
        with locked(self._lock_target(), self.lock_timeout):
            folder = self.require(name)
            target = self._support_target(folder, rel.as_posix())
            if not dry_run:
                atomic_write_text(target, content)
        return SkillChange(
            "write_file", name, f"File '{rel.as_posix()}' written to skill '{name}'.", folder,
            rel.as_posix(), dry_run=dry_run,
        )  # fmt: skip

    def remove_file(self, name: str, file_path: str, *, dry_run: bool = False) -> SkillChange:
        """Remove a support file (and its folder when that becomes empty)."""
        rel = check_support_path(file_path)
        with locked(self._lock_target(), self.lock_timeout):
            folder = self.require(name)
            target = self._support_target(folder, rel.as_posix())
            if not target.is_file():
                files = ", ".join(self.support_files(folder)) or "(none)"
                raise SkillWriteError(
                    f"skill {name!r} has no file {rel.as_posix()!r}; its files: {files}"
                )
            if not dry_run:
                target.unlink()
                parent = target.parent
                while parent != folder and parent.is_dir() and not any(parent.iterdir()):
                    parent.rmdir()
                    parent = parent.parent
        return SkillChange(
            "remove_file", name, f"File '{rel.as_posix()}' removed from skill '{name}'.",
            folder, rel.as_posix(), dry_run=dry_run,
        )  # fmt: skip

    # internals -------------------------------------------------------------------

    def _lock_target(self) -> Path:
        return self.root / LOCK_NAME

    def _rel(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)

    def _check_skill_md(self, content: object) -> dict[str, Any]:
        if not isinstance(content, str):
            raise SkillWriteError("content is required: the full SKILL.md text")
        self._check_size(content, SKILL_FILE)
        meta, _ = split_front_matter(content)
        return meta

    @staticmethod
    def _check_size(content: str, label: str) -> None:
        if label == SKILL_FILE and len(content) > MAX_SKILL_CHARS:
            raise SkillWriteError(
                f"SKILL.md would be {len(content):,} characters (limit {MAX_SKILL_CHARS:,}); "
                "move detail into references/ files"
            )
        size = len(content.encode("utf-8"))
        if size > MAX_FILE_BYTES:
            raise SkillWriteError(
                f"{label} would be {size:,} bytes (limit {MAX_FILE_BYTES:,}); split it"
            )

    def _support_target(self, folder: Path, file_path: str) -> Path:
        """Resolve a support path and prove it stays inside the skill folder."""
        rel = check_support_path(file_path)
        target = folder.joinpath(*rel.parts)
        try:
            target.resolve().relative_to(folder.resolve())
        except ValueError as exc:
            raise SkillWriteError(
                f"file_path {file_path!r} leads outside the skill folder (a symlink?)"
            ) from exc
        return target

    def _check_inside(self, folder: Path) -> None:
        """Refuse to delete a symlink, the root, or anything outside the root."""
        if folder.is_symlink():
            raise SkillWriteError(f"refusing to delete {self._rel(folder)}: it is a symlink")
        root = self.root.resolve()
        resolved = folder.resolve()
        if resolved == root or root not in resolved.parents:
            raise SkillWriteError(f"refusing to delete {folder}: not inside {self.root}")

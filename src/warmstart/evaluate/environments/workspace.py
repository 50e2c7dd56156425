"""The local workspace environment: four tools confined to a temporary directory.

``read_file``, ``write_file``, ``search_files`` and ``execute_code`` (a Python subprocess
with a timeout) work inside a fresh temporary directory per attempt. Paths must be
relative: absolute paths, ``~`` and any ``..`` component are refused before anything is
touched, and a path that resolves outside the directory (through a symlink) is refused
too; the refusal is an error result the model sees. Code runs with the directory as its
working directory, ``HOME`` and ``TMPDIR``, in Python's isolated mode, in its own process
group that is killed on timeout.

This confines the *tools*, not arbitrary code: a Python program can still open an
absolute path itself. Run untrusted models in a container or VM as well.

Tasks are JSONL, one object a line::

    {"id": "upper", "prompt": "Write notes.txt in upper case to out.txt",
     "files": {"notes.txt": "hello"},
     "check": "python -c \\"import sys; sys.exit(open('out.txt').read() != 'HELLO')\\""}

``prompt`` (or ``turns``, a list of user turns) is required; ``files`` seeds the
directory; ``check`` (a shell command, or an argv list) runs in the directory after the
run, exit status 0 meaning success; ``system`` overrides the default system prompt.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any

from warmstart.evaluate.environments.base import Environment, Episode, Task
from warmstart.evaluate.errors import EnvironmentUnavailable, SandboxViolation
from warmstart.runtime import ToolRegistry

SYSTEM = (
    "You are working in a project directory through tools. Use paths relative to the "
    "directory; absolute paths and '..' are refused."
)
READ_CHARS = 20_000
OUTPUT_CHARS = 4_000
MAX_MATCHES = 100

_DRIVE = re.compile(r"^[A-Za-z]:")


def _text_arg(args: dict[str, Any], name: str, default: str | None = None) -> str:
    value = args.get(name, default)
    if value is None:
        raise ValueError(f"missing required argument {name!r}")
    if not isinstance(value, str):
        raise ValueError(f"argument {name!r} must be a string, got {type(value).__name__}")
    return value


class Workspace:
    """A directory and the tools that may only act inside it."""

    def __init__(
        self, root: Path | None = None, *, code_timeout: float = 10.0, check_timeout: float = 60.0
    ) -> None:
        self._owned = root is None
        self.root = Path(tempfile.mkdtemp(prefix="warmstart-ws-")) if root is None else root
        self.real_root = self.root.resolve()
        self.code_timeout = code_timeout
        self.check_timeout = check_timeout

    def resolve(self, path: str) -> Path:
        """The absolute path of a relative ``path`` inside the workspace.

        Raises :class:`SandboxViolation` for absolute paths, ``~``, drive letters, ``..``
        components, NUL bytes, and paths that resolve outside through symlinks.
        """
        if not isinstance(path, str) or not path.strip():
            raise SandboxViolation("path must be a non-empty relative path")
        if "\x00" in path:
            raise SandboxViolation("path contains a NUL byte")
        posix = path.replace("\\", "/")
        pure = PurePosixPath(posix)
        if pure.is_absolute() or posix.startswith("~") or _DRIVE.match(posix):
            raise SandboxViolation(
                f"absolute paths are not allowed: {path!r}; use a path relative to the workspace"
            )
        if ".." in pure.parts:
            raise SandboxViolation(f"'..' is not allowed in paths: {path!r}")
        full = (self.real_root / pure).resolve()
        if full != self.real_root and not full.is_relative_to(self.real_root):
            raise SandboxViolation(f"path {path!r} leads outside the workspace")
        return full

    def _show(self, full: Path) -> str:
        return full.relative_to(self.real_root).as_posix() or "."

    # tools ------------------------------------------------------------------------

    def read_file(self, args: dict[str, Any]) -> str:
        """Text of a file (the first 20,000 characters)."""
        full = self.resolve(_text_arg(args, "path"))
        if full.is_dir():
            raise IsADirectoryError(f"{self._show(full)} is a directory")
        if not full.exists():
            raise FileNotFoundError(f"no such file: {self._show(full)}")
        text = full.read_text(encoding="utf-8", errors="replace")
        if len(text) > READ_CHARS:
            return text[:READ_CHARS] + f"\n[... {len(text) - READ_CHARS} more characters]"
        return text

    def write_file(self, args: dict[str, Any]) -> str:
        """Create or replace a file (parent directories are made)."""
        full = self.resolve(_text_arg(args, "path"))
        content = _text_arg(args, "content")
        if full == self.real_root or full.is_dir():
            raise IsADirectoryError(f"{self._show(full)} is a directory")
        full.parent.mkdir(parents=True, exist_ok=True)
        full.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters to {self._show(full)}"

    def search_files(self, args: dict[str, Any]) -> str:
        """Lines matching a regular expression, as ``path:line: text``."""
        pattern = _text_arg(args, "pattern")
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from exc
        base = self.resolve(_text_arg(args, "path", "."))
        files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
        matches: list[str] = []
        for file in files:
            if not file.resolve().is_relative_to(self.real_root):
                continue
            try:
                lines = file.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                continue
            for number, line in enumerate(lines, 1):
                if regex.search(line):
                    matches.append(f"{self._show(file)}:{number}: {line[:200]}")
                    if len(matches) >= MAX_MATCHES:
                        return "\n".join(matches) + f"\n[stopped at {MAX_MATCHES} matches]"
        return "\n".join(matches) if matches else "no matches"

    def _env(self) -> dict[str, str]:
        path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
        return {
            "PATH": path,
            "HOME": str(self.real_root),
            "TMPDIR": str(self.real_root),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
        }

    def _run(self, argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` in the workspace; kill its whole process group on timeout."""
        proc = subprocess.Popen(
            argv,
            cwd=self.real_root,
            env=self._env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise TimeoutError(f"timed out after {timeout:g} s and was killed") from None
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)

    def execute_code(self, args: dict[str, Any]) -> dict[str, Any]:
        """Run Python code in the workspace; exit code, stdout and stderr come back."""
        code = _text_arg(args, "code")
        timeout = self.code_timeout
        asked = args.get("timeout")
        if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
            timeout = min(float(asked), self.code_timeout)
        done = self._run([sys.executable, "-I", "-c", code], timeout)
        return {
            "exit_code": done.returncode,
            "stdout": done.stdout[-OUTPUT_CHARS:],
            "stderr": done.stderr[-OUTPUT_CHARS:],
        }

    def run_check(self, check: str | list[str]) -> bool:
        """Run a task's check command in the workspace: exit status 0 is success."""
        argv = ["/bin/sh", "-c", check] if isinstance(check, str) else list(check)
        try:
            return self._run(argv, self.check_timeout).returncode == 0
        except (TimeoutError, OSError):
            return False

    def registry(self) -> ToolRegistry:
        """The four tools, bound to this workspace."""
        tools = ToolRegistry()
        path = {"type": "string", "description": "Path relative to the workspace."}
        tools.register(
            "read_file",
            self.read_file,
            description="Read a text file from the workspace.",
            parameters={"type": "object", "properties": {"path": path}, "required": ["path"]},
        )
        tools.register(
            "write_file",
            self.write_file,
            description="Create or overwrite a text file in the workspace.",
            parameters={
                "type": "object",
                "properties": {"path": path, "content": {"type": "string"}},
                "required": ["path", "content"],
            },
        )
        tools.register(
            "search_files",
            self.search_files,
            description="Search files for lines matching a regular expression.",
            parameters={
                "type": "object",
                "properties": {
                    "pattern": {"type": "string", "description": "A Python regular expression."},
                    "path": {**path, "description": "File or directory to search (default .)."},
                },
                "required": ["pattern"],
            },
        )
        tools.register(
            "execute_code",
            self.execute_code,
            description="Run Python code with the workspace as working directory.",
            parameters={
                "type": "object",
                "properties": {
                    "code": {"type": "string"},
                    "timeout": {"type": "number", "description": "Seconds (capped)."},
                },
                "required": ["code"],
            },
        )
        return tools

    def close(self) -> None:
        """Delete the directory if this workspace made it."""
        if self._owned:
            shutil.rmtree(self.root, ignore_errors=True)


class WorkspaceEpisode(Episode):
    """One attempt: a fresh workspace seeded with the task's files."""

    def __init__(self, task: Task, code_timeout: float, check_timeout: float) -> None:
        self.task = task
        self.workspace = Workspace(code_timeout=code_timeout, check_timeout=check_timeout)
        try:
            for rel, content in (task.data.get("files") or {}).items():
                target = self.workspace.resolve(rel)
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(content, encoding="utf-8")
        except BaseException:
            self.workspace.close()
            raise
        self.tools = self.workspace.registry()
        self.system = task.system or SYSTEM

    def check(self) -> bool | None:
        check = self.task.data.get("check")
        if not check:
            return None
        return self.workspace.run_check(check)

    def close(self) -> None:
        self.workspace.close()


def _task(item: Any, where: str, number: int) -> Task:
    if not isinstance(item, dict):
        raise EnvironmentUnavailable(f"{where}: a task must be a JSON object")
    turns = item.get("turns")
    if turns is None:
        prompt = item.get("prompt")
        turns = [prompt] if isinstance(prompt, str) else None
    if not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        raise EnvironmentUnavailable(f"{where}: needs a 'prompt' string or a 'turns' list")
    check = item.get("check")
    if check is not None and not (
        isinstance(check, str)
        or (isinstance(check, list) and all(isinstance(a, str) for a in check))
    ):
        raise EnvironmentUnavailable(f"{where}: 'check' must be a command string or argv list")
    files = item.get("files") or {}
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise EnvironmentUnavailable(f"{where}: 'files' must map relative paths to text")
    probe = Workspace(Path("/nonexistent-warmstart-root"))
    for rel in files:
        try:
            probe.resolve(rel)
        except SandboxViolation as exc:
            raise EnvironmentUnavailable(f"{where}: {exc}") from exc
    system = item.get("system")
    return Task(
        id=str(item.get("id") or f"task-{number}"),
        turns=list(turns),
        system=system if isinstance(system, str) else None,
        data={"check": check, "files": files},
    )


class WorkspaceEnvironment(Environment):
    """Tasks from a JSONL file, each attempted in its own temporary workspace."""

    name = "workspace"

    def __init__(
        self,
        tasks: list[Task],
        *,
        code_timeout: float = 10.0,
        check_timeout: float = 60.0,
        source: str = "",
    ) -> None:
        ids = [t.id for t in tasks]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise EnvironmentUnavailable(f"duplicate task ids: {', '.join(dupes)}")
        if not tasks:
            raise EnvironmentUnavailable(f"no tasks in {source or 'the task list'}")
        self.tasks = tasks
        self.code_timeout = code_timeout
        self.check_timeout = check_timeout
        self.source = source

    @classmethod
    def from_file(cls, path: str | Path, **options: float) -> WorkspaceEnvironment:
        """Read tasks from a JSONL file (blank lines and ``#`` comments are skipped)."""
        file = Path(path).expanduser()
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise EnvironmentUnavailable(
                f"cannot read tasks file {file}: {exc.strerror or exc}"
            ) from exc
        tasks = []
        for number, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            where = f"{file.name}:{number}"
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise EnvironmentUnavailable(f"{where}: not JSON ({exc})") from exc
            tasks.append(_task(item, where, number))
        return cls(tasks, source=str(file), **options)

    def episode(self, task: Task) -> WorkspaceEpisode:
        return WorkspaceEpisode(task, self.code_timeout, self.check_timeout)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "source": self.source}

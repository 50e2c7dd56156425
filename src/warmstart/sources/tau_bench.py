"""τ-bench trajectories: a JSON list of ``{task_id, trial, reward, info, traj}``.

``traj`` is OpenAI messages starting with the system prompt; ``reward`` (1.0 solved,
0.0 not) becomes the session outcome. The list is streamed item by item, so a
large results file never sits in memory whole. Files may be gzipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from pathlib import Path

from warmstart.model import Session
from warmstart.sources.base import IngestReport
from warmstart.sources.files import head_text, iter_json_array, open_text
from warmstart.sources.openai_messages import as_dict, parse_messages, tool_names


class TauBenchSource:
    """Reads τ-bench (and τ²-bench style) trajectory result files."""

    name = "tau-bench"

    def detect(self, path: Path) -> bool:
        """A JSON array whose first item has ``traj`` and ``task_id``."""
        head = head_text(path).lstrip()
        return head.startswith("[") and '"traj"' in head and '"task_id"' in head

    def iter_sessions(
        self, path: Path, report: IngestReport, known: Mapping[str, str]
    ) -> Iterator[Session]:
        """Stream one session per trajectory."""
        stem = path.name.split(".")[0]
        with open_text(path) as fh:
            for i, item in enumerate(iter_json_array(fh, report, str(path))):
                where = f"{path.name} item {i}"
                if not isinstance(item, dict):
                    report.skip("trajectory is not an object", where)
                    continue
                traj = item.get("traj")
                if not isinstance(traj, list):
                    report.skip("trajectory has no 'traj' list", where)
                    continue
                task_id = item.get("task_id", i)
                trial = item.get("trial", 0)
                external = f"{stem}/{task_id}/{trial}"
                raw = json.dumps(item, sort_keys=True, default=str).encode("utf-8", "replace")
                fingerprint = hashlib.sha1(raw).hexdigest()
                if known.get(f"{self.name}:{external}") == fingerprint:
                    report.unchanged += 1
                    continue
                reward = item.get("reward")
                info = as_dict(item.get("info"))
                task = as_dict(info.get("task"))
                yield Session(
                    source=self.name,
                    external_id=external,
                    messages=parse_messages(traj, report, where),
                    tools=tool_names(info.get("tools")),
                    outcome=float(reward) if isinstance(reward, int | float) else None,
                    title=(task.get("instruction") or "")[:200] or None,
                    origin=str(path),
                    fingerprint=fingerprint,
                    metadata={"task_id": task_id, "trial": trial, "user_id": task.get("user_id")},
                )

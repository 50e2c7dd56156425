"""A store written by warmstart reads back under Hermes Agent's rules, and the reverse.

The first test re-applies Hermes' format rules by hand (separator line, front matter
fences, folder layout). The second runs hermes-agent's own reader and writer in its
own virtualenv (``$WARMSTART_HERMES_PYTHON``, e.g. ``.venv-hermes/bin/python``) against
the same home: Hermes must see our entries and skill, and we must see its write.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from tests.review.helpers import DEPLOY_SKILL

from warmstart.review import MemoryStore, SkillStore

HERMES_PYTHON_ENV = "WARMSTART_HERMES_PYTHON"

HERMES_SCRIPT = """
import json
from tools.memory_tool import MemoryStore
from tools.skills_tool import skills_list, skill_view

store = MemoryStore()
store.load_from_disk()
out = {
    "memory": store.memory_entries,
    "user": store.user_entries,
    "skills": json.loads(skills_list()),
    "view": json.loads(skill_view("deploy-checklist")),
}
out["hermes_add"] = store.add("memory", "Written by Hermes.")
print(json.dumps(out))
"""


def populate(home: Path) -> None:
    memory = MemoryStore.at_home(home)
    memory.add("memory", "Staging host is stg-01.")
    memory.add("memory", "Deploys need two approvals:\n- lead\n- on-call")
    memory.add("user", "Name: Ada. Prefers short answers.")
    skills = SkillStore.at_home(home)
    skills.create("deploy-checklist", DEPLOY_SKILL, category="devops")
    skills.write_file("deploy-checklist", "references/rollback.md", "Roll back with `make undo`.")


def test_files_follow_hermes_format_rules(home: Path) -> None:
    populate(home)
    raw = (home / "memories" / "MEMORY.md").read_text(encoding="utf-8")
    entries = [e.strip() for e in raw.split("\n§\n")]
    assert entries == ["Staging host is stg-01.", "Deploys need two approvals:\n- lead\n- on-call"]
    assert raw == "\n§\n".join(entries)  # nothing Hermes' round-trip check would flag
    assert (home / "memories" / "USER.md").read_text() == "Name: Ada. Prefers short answers."

    skill_md = (home / "skills" / "devops" / "deploy-checklist" / "SKILL.md").read_text()
    assert skill_md.startswith("---")
    fence = re.search(r"\n---\s*\n", skill_md[3:])
    assert fence is not None
    meta = yaml.safe_load(skill_md[3 : fence.start() + 3])
    assert meta == {
        "name": "deploy-checklist",
        "description": "Deploy a service to staging safely.",
    }
    assert skill_md[fence.end() + 3 :].strip().startswith("# Deploy checklist")
    rollback = home / "skills" / "devops" / "deploy-checklist" / "references" / "rollback.md"
    assert rollback.read_text() == "Roll back with `make undo`."


def test_hermes_agent_reads_our_store_and_we_read_its_writes(home: Path, tmp_path: Path) -> None:
    python = os.environ.get(HERMES_PYTHON_ENV)
    if not python:
        pytest.skip(
            f"{HERMES_PYTHON_ENV} is not set: point it at a Python with hermes-agent "
            "installed (e.g. .venv-hermes/bin/python) to check against Hermes' own reader"
        )
    populate(home)
    proc = subprocess.run(
        [python, "-c", HERMES_SCRIPT],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "HERMES_HOME": str(home)},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["memory"] == [
        "Staging host is stg-01.",
        "Deploys need two approvals:\n- lead\n- on-call",
    ]
    assert seen["user"] == ["Name: Ada. Prefers short answers."]
    assert seen["skills"]["skills"] == [
        {"name": "deploy-checklist", "description": "Deploy a service to staging safely.",
         "category": "devops"}
    ]  # fmt: skip
    assert seen["view"]["content"] == DEPLOY_SKILL
    assert seen["view"]["linked_files"] == {"references": ["references/rollback.md"]}
    assert seen["hermes_add"]["success"] is True

    memory = MemoryStore.at_home(home)
    assert memory.entries("memory")[-1] == "Written by Hermes."
    memory.add("memory", "Written by warmstart after Hermes.")
    assert len(memory.entries("memory")) == 4

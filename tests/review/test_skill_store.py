"""Skills on disk: Hermes' layout and front matter, safe names and paths, broken files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.review.helpers import DEPLOY_SKILL, skill_md, write_skill

from warmstart.review import SkillStore, SkillWriteError, split_front_matter


@pytest.fixture
def store(home: Path) -> SkillStore:
    return SkillStore.at_home(home)


def test_create_writes_skill_md_under_its_category(store: SkillStore, home: Path) -> None:
    change = store.create("deploy-checklist", DEPLOY_SKILL, category="devops")
    path = home / "skills" / "devops" / "deploy-checklist" / "SKILL.md"
    assert path.read_text(encoding="utf-8") == DEPLOY_SKILL
    assert change.message == "Skill 'deploy-checklist' created."
    assert change.description == "Deploy a service to staging safely."
    [info] = store.list_skills()
    assert (info.name, info.category, info.description, info.error) == (
        "deploy-checklist",
        "devops",
        "Deploy a service to staging safely.",
        None,
    )


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("../escape", DEPLOY_SKILL, "must not contain"),
        ("a/b", DEPLOY_SKILL, "must not contain"),
        ("Deploy", skill_md("Deploy", "d", "body"), "must be lowercase"),
        ("x", "# Just markdown\n", "must start with YAML front matter"),
        ("x", "---\nname: x\ndescription: d\n# never closed\n", "not closed"),
        ("x", "---\nname: x\n---\nbody\n", "must include 'description'"),
        ("x", "---\n- a list\n---\nbody\n", "must be a YAML mapping"),
        ("x", "---\nname: x\ndescription: d\n---\n   \n", "needs instructions"),
        ("x", skill_md("x", "d" * 1_025, "body"), "1,025 characters; the limit is 1,024"),
        ("x", skill_md("y", "d", "body"), "front matter says name: 'y'"),
        ("x", skill_md("x", "d", "b" * 100_001), "limit 100,000"),
    ],
)
def test_create_refuses_bad_names_and_front_matter(
    store: SkillStore, home: Path, name: str, content: str, message: str
) -> None:
    with pytest.raises(SkillWriteError, match=message):
        store.create(name, content)
    assert not (home / "skills").exists() or not list((home / "skills").rglob("SKILL.md"))


def test_description_of_exactly_1024_characters_is_accepted(store: SkillStore) -> None:
    store.create("x", skill_md("x", "d" * 1_024, "body"))
    assert store.list_skills()[0].description == "d" * 1_024


def test_create_refuses_a_name_taken_in_another_category(store: SkillStore) -> None:
    store.create("deploy-checklist", DEPLOY_SKILL, category="devops")
    with pytest.raises(SkillWriteError, match="already exists at devops/deploy-checklist"):
        store.create("deploy-checklist", DEPLOY_SKILL)


def test_patch_replaces_exactly_one_occurrence(store: SkillStore) -> None:
    store.create("deploy-checklist", DEPLOY_SKILL)
    change = store.patch("deploy-checklist", "1. Run the tests.", "1. Run `make test`.")
    assert change.message == "Patched SKILL.md in skill 'deploy-checklist' (1 replacement)."
    assert "1. Run `make test`." in store.read("deploy-checklist")


def test_patch_refusals_leave_the_file_alone(store: SkillStore, home: Path) -> None:
    store.create("deploy-checklist", DEPLOY_SKILL + "Run the tests again.\n")
    path = home / "skills" / "deploy-checklist" / "SKILL.md"
    before = path.read_bytes()
    with pytest.raises(SkillWriteError, match="old_string not found") as missing:
        store.patch("deploy-checklist", "Step that is not there", "x")
    assert missing.value.details["file_preview"].startswith("---\nname: deploy-checklist")
    with pytest.raises(SkillWriteError, match="occurs 2 times"):
        store.patch("deploy-checklist", "the tests", "the suite")
    with pytest.raises(SkillWriteError, match=r"would leave SKILL\.md invalid: .*front matter"):
        store.patch("deploy-checklist", "---\nname: deploy-checklist", "name: gone")
    with pytest.raises(SkillWriteError, match="no skill named 'nope'; existing skills: deploy"):
        store.patch("nope", "a", "b")
    assert path.read_bytes() == before
    store.patch("deploy-checklist", "the tests", "the suite", replace_all=True)
    assert store.read("deploy-checklist").count("the suite") == 2


def test_skill_md_without_front_matter_is_reported_and_not_damaged(
    store: SkillStore, home: Path
) -> None:
    path = write_skill(home, "handmade", "# Handmade\n\nSteps written by hand.\n")
    [info] = store.list_skills()
    assert info.name == "handmade" and "must start with YAML front matter" in (info.error or "")
    with pytest.raises(SkillWriteError, match=r"would leave SKILL\.md invalid"):
        store.patch("handmade", "Steps", "Better steps")
    assert path.read_text(encoding="utf-8") == "# Handmade\n\nSteps written by hand.\n"
    store.edit("handmade", skill_md("handmade", "Fixed by edit.", "Steps.\n"))
    assert store.list_skills()[0].error is None


def test_support_files_stay_inside_their_folder(store: SkillStore, home: Path) -> None:
    store.create("deploy-checklist", DEPLOY_SKILL)
    change = store.write_file("deploy-checklist", "references/rollback.md", "Roll back with X.")
    folder = home / "skills" / "deploy-checklist"
    assert (folder / "references" / "rollback.md").read_text() == "Roll back with X."
    assert change.file_path == "references/rollback.md"
    for bad, message in [
        ("../escape.md", "without '..'"),
        ("/etc/passwd", "must be relative"),
        ("references/../../x.md", "without '..'"),
        ("notes.md", "must be under one of"),
        ("references", "names a folder"),
    ]:
        with pytest.raises(SkillWriteError, match=message):
            store.write_file("deploy-checklist", bad, "x")
    assert sorted(p.name for p in home.rglob("*") if p.is_file() and "lock" not in p.name) == [
        "SKILL.md",
        "rollback.md",
    ]
    store.remove_file("deploy-checklist", "references/rollback.md")
    assert not (folder / "references").exists()
    with pytest.raises(SkillWriteError, match=r"has no file 'references/rollback\.md'"):
        store.remove_file("deploy-checklist", "references/rollback.md")


def test_symlinked_support_folder_cannot_lead_outside(
    store: SkillStore, home: Path, tmp_path: Path
) -> None:
    store.create("deploy-checklist", DEPLOY_SKILL)
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, home / "skills" / "deploy-checklist" / "scripts")
    with pytest.raises(SkillWriteError, match="leads outside the skill folder"):
        store.write_file("deploy-checklist", "scripts/run.sh", "echo hi")
    assert list(outside.iterdir()) == []


def test_delete_removes_the_folder_and_an_emptied_category(store: SkillStore, home: Path) -> None:
    store.create("deploy-checklist", DEPLOY_SKILL, category="devops")
    store.write_file("deploy-checklist", "assets/logo.txt", "ACME")
    assert store.delete("deploy-checklist").message == "Skill 'deploy-checklist' deleted."
    assert list((home / "skills").iterdir()) == [home / "skills" / ".warmstart-skills.lock"]


def test_a_symlinked_skill_is_listed_but_never_deleted(
    store: SkillStore, home: Path, tmp_path: Path
) -> None:
    real = tmp_path / "elsewhere" / "linked"
    real.mkdir(parents=True)
    (real / "SKILL.md").write_text(skill_md("linked", "Shared skill.", "body"))
    (home / "skills").mkdir()
    os.symlink(real, home / "skills" / "linked", target_is_directory=True)
    os.symlink(home / "skills", real / "loop", target_is_directory=True)  # a cycle
    assert [s.description for s in store.list_skills()] == ["Shared skill."]
    with pytest.raises(SkillWriteError, match="refusing to delete linked: it is a symlink"):
        store.delete("linked")
    assert (real / "SKILL.md").exists()


def test_split_front_matter_tolerates_a_bom() -> None:
    meta, body = split_front_matter("\ufeff" + DEPLOY_SKILL)
    assert meta["name"] == "deploy-checklist" and body.startswith("# Deploy checklist")

"""MEMORY.md / USER.md: Hermes' format, atomic batches, limits, corrupt files, concurrency."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from warmstart.review import MemoryFileError, MemoryOp, MemoryStore, MemoryWriteError
from warmstart.review.errors import StoreWriteError


@pytest.fixture
def store(home: Path) -> MemoryStore:
    return MemoryStore.at_home(home)


def test_entries_are_written_in_hermes_format(store: MemoryStore, home: Path) -> None:
    store.add("user", "Name: Ada Lovelace.")
    store.add("user", "Prefers short answers.\nNo emoji, ever.")
    path = home / "memories" / "USER.md"
    assert path.read_bytes() == (
        "Name: Ada Lovelace.\n§\nPrefers short answers.\nNo emoji, ever.".encode()
    )
    assert store.entries("user") == [
        "Name: Ada Lovelace.",
        "Prefers short answers.\nNo emoji, ever.",
    ]
    assert not (home / "memories" / "MEMORY.md").exists()


def test_replace_and_remove_find_entries_by_substring(store: MemoryStore) -> None:
    store.add("memory", "Deploys go through `make deploy`.")
    store.add("memory", "Staging host is stg-01.")
    change = store.replace("memory", "stg-01", "Staging host is stg-02 since May.")
    assert change.changed and change.before[1] == "Staging host is stg-01."
    store.remove("memory", "make deploy")
    assert store.entries("memory") == ["Staging host is stg-02 since May."]


def test_duplicate_add_changes_nothing(store: MemoryStore) -> None:
    store.add("memory", "Uses zsh.")
    change = store.add("memory", "  Uses zsh.  ")
    assert not change.changed and store.entries("memory") == ["Uses zsh."]


def test_batch_is_all_or_nothing(store: MemoryStore, home: Path) -> None:
    store.add("memory", "Keep this.")
    before = (home / "memories" / "MEMORY.md").read_bytes()
    with pytest.raises(MemoryWriteError, match="no entry contains 'missing'") as info:
        store.apply(
            "memory",
            [MemoryOp("add", "New fact."), MemoryOp("remove", old_text="missing")],
        )
    assert "Nothing was changed" in info.value.message
    assert info.value.details["current_entries"] == ["Keep this."]
    assert (home / "memories" / "MEMORY.md").read_bytes() == before


def test_limit_is_checked_on_the_final_result(home: Path) -> None:
    store = MemoryStore.at_home(home, memory_limit=40)
    store.add("memory", "A" * 30)
    with pytest.raises(MemoryWriteError, match="would hold 48 of its 40 characters") as info:
        store.add("memory", "B" * 15)
    assert info.value.details == {"current_entries": ["A" * 30], "usage": "30/40"}
    # freeing room and adding in one batch works although the add alone would not fit
    change = store.apply("memory", [MemoryOp("remove", old_text="AAA"), MemoryOp("add", "B" * 15)])
    assert change.after == ["B" * 15] and change.usage == "37% — 15/40 chars"


def test_user_file_has_its_own_smaller_limit(store: MemoryStore) -> None:
    store.add("memory", "x" * 2_000)
    with pytest.raises(MemoryWriteError, match=r"USER\.md would hold 1,400 of its 1,375"):
        store.add("user", "y" * 1_400)
    assert store.usage("user") == (0, 1_375) and store.usage("memory") == (2_000, 2_200)


def test_ambiguous_substring_is_refused(store: MemoryStore) -> None:
    store.apply(
        "memory", [MemoryOp("add", "Repo A uses pytest."), MemoryOp("add", "Repo B uses pytest.")]
    )
    with pytest.raises(MemoryWriteError, match="is in 2 different entries"):
        store.remove("memory", "pytest")
    assert len(store.entries("memory")) == 2


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"action": "add"}, "content is required"),
        ({"action": "replace", "content": "x"}, "old_text is required"),
        ({"action": "drop", "old_text": "x"}, "unknown action 'drop'"),
        ("add this", "must be an object"),
        ({"action": "add", "content": 5}, "content must be a string"),
        ({"action": "add", "content": "one\n§\ntwo"}, "line holding only '§'"),
    ],
)
def test_malformed_operations_are_refused(raw: object, message: str) -> None:
    with pytest.raises(MemoryWriteError, match=message):
        MemoryOp.parse(raw, 1)


def test_invalid_utf8_file_is_never_overwritten(store: MemoryStore, home: Path) -> None:
    path = home / "memories" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    corrupt = b"Good entry\n\xa7\n\xff\xfe binary junk"
    path.write_bytes(corrupt)
    with pytest.raises(MemoryFileError, match="not valid UTF-8") as info:
        store.add("memory", "Anything.")
    assert path.read_bytes() == corrupt
    backup = Path(info.value.details["backup"])
    assert backup.read_bytes() == corrupt and backup.name.startswith("MEMORY.md.bak.")


def test_entry_edited_beyond_the_limit_blocks_writes_and_is_kept(home: Path) -> None:
    store = MemoryStore.at_home(home, memory_limit=100)
    path = home / "memories" / "MEMORY.md"
    path.parent.mkdir(parents=True)
    text = "Short entry\n§\n" + "appended by a shell script " * 10
    path.write_text(text, encoding="utf-8")
    for attempt in (lambda: store.add("memory", "x"), lambda: store.remove("memory", "Short")):
        with pytest.raises(MemoryFileError, match="edited outside the memory tool"):
            attempt()
    assert path.read_text(encoding="utf-8") == text
    assert len(list(path.parent.glob("MEMORY.md.bak.*"))) == 1  # one copy, not one per try


def test_set_entries_enforces_limit_and_separator(store: MemoryStore) -> None:
    with pytest.raises(MemoryWriteError, match="over its limit of 1,375"):
        store.set_entries("user", ["u" * 1_400])
    with pytest.raises(MemoryWriteError, match="line holding only"):
        store.set_entries("user", ["a\n§\nb"])
    assert store.entries("user") == []
    store.set_entries("user", ["one", "two", "one"])
    assert store.entries("user") == ["one", "two"]


def test_a_hermes_lock_holder_blocks_our_writes(home: Path) -> None:
    """Hermes flocks ``MEMORY.md.lock``; while it holds it, we wait and then refuse."""
    store = MemoryStore.at_home(home, lock_timeout=0.2)
    lock_path = home / "memories" / "MEMORY.md.lock"
    lock_path.parent.mkdir(parents=True)
    with lock_path.open("a+") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(StoreWriteError, match="locked by another writer"):
            store.add("memory", "blocked")
        fcntl.flock(held, fcntl.LOCK_UN)
    store.add("memory", "after unlock")
    assert store.entries("memory") == ["after unlock"]


def test_two_threads_writing_at_once_lose_nothing(home: Path) -> None:
    start = threading.Barrier(2)

    def writer(tag: str) -> None:
        store = MemoryStore.at_home(home, memory_limit=10_000)  # its own lock objects
        start.wait()
        for i in range(25):
            store.add("memory", f"{tag} fact {i}")

    threads = [threading.Thread(target=writer, args=(tag,)) for tag in ("left", "right")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    entries = MemoryStore.at_home(home, memory_limit=10_000).entries("memory")
    assert sorted(entries) == sorted(f"{t} fact {i}" for t in ("left", "right") for i in range(25))


def test_two_processes_writing_at_once_lose_nothing(home: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from warmstart.review import MemoryStore\n"
        "s = MemoryStore.at_home(Path(sys.argv[1]), memory_limit=10_000)\n"
        "for i in range(15): s.add('memory', f'{sys.argv[2]} {i}')\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(home), tag]) for tag in ("p1", "p2")
    ]
    assert [p.wait(60) for p in procs] == [0, 0]
    entries = MemoryStore.at_home(home, memory_limit=10_000).entries("memory")
    assert sorted(entries) == sorted(f"{t} {i}" for t in ("p1", "p2") for i in range(15))


def test_a_file_over_a_lowered_limit_can_still_be_cleaned_up(home: Path) -> None:
    entries = [MemoryOp("add", c * 30) for c in "abc"]
    MemoryStore.at_home(home).apply("memory", entries)  # 96 characters
    small = MemoryStore.at_home(home, memory_limit=40)
    with pytest.raises(MemoryWriteError, match="would hold 99 of its 40"):
        small.replace("memory", "aaa", "a" * 33)  # growing stays refused
    change = small.remove("memory", "aaa")  # 63 characters: still over, but smaller
    assert change.after == ["b" * 30, "c" * 30] and change.chars == 63

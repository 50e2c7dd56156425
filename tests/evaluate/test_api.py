"""The package's public names: complete, sorted, and loaded lazily (opening a store runs
the evaluation migration, which must not drag in the runtime and its HTTP client)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import warmstart.evaluate as evaluate


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert evaluate.__all__ == sorted(evaluate.__all__)
    for name in evaluate.__all__:
        assert getattr(evaluate, name) is not None, name
    assert set(evaluate.__all__) <= set(dir(evaluate))


def test_opening_a_store_does_not_import_the_runtime(tmp_path: Path) -> None:
    code = (
        "import sys; from warmstart.store import Store; "
        f"Store('sqlite:///{tmp_path / 'x.db'}'); "
        "print(sorted(m for m in ('openai', 'warmstart.runtime', 'warmstart.evaluate.ab') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

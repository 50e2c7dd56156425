"""Configuration file: defaults, overrides and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from warmstart.config import MiningConfig, load_config
from warmstart.errors import ConfigError


def test_defaults_without_a_file(warmstart_home: Path) -> None:
    cfg = load_config()
    assert cfg == MiningConfig()
    assert cfg.trivial_tools == ("clarify", "memory", "fact_store", "fact_feedback")
    assert cfg.result_chars == 500


def test_overrides_from_toml(warmstart_home: Path) -> None:
    (warmstart_home / "config.toml").write_text(
        '[mining]\nresult_chars = 80\ntrivial_tools = ["think"]\n'
        '[mining.categories]\ncode = ["calculate"]\n'
    )
    cfg = load_config()
    assert cfg.result_chars == 80
    assert cfg.trivial_tools == ("think",)
    assert cfg.category_of("calculate") == "code"
    assert cfg.category_of("read_file") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[mining]\nbogus = 1\n", "unknown [mining] keys: bogus"),
        ("[mining]\nresult_chars = -3\n", "result_chars must be a positive integer"),
        ("[mining\n", "cannot read config"),
    ],
)
def test_bad_config_names_the_problem(warmstart_home: Path, text: str, message: str) -> None:
    (warmstart_home / "config.toml").write_text(text)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        load_config()

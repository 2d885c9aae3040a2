"""The per-model settings are declared once, on ModelSpec's fields: each is a flag and a TOML key of the same effect."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from ovserve.service.config import MODEL_SETTINGS, ConfigError, add_arguments
from ovserve.service.models import ModelSpec
from ovserve.service.pipelines import PipelineKind
from tests.service.test_config import configure, model_dir


def test_every_field_with_help_is_a_serve_flag_in_field_order() -> None:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    flags = [action.option_strings[0] for action in parser._actions if action.option_strings]
    declared = [field for field in dataclasses.fields(ModelSpec) if "help" in field.metadata]
    assert list(MODEL_SETTINGS) == declared
    expected = ["--model", "--draft-model", "--task", "--prompt-lookup", "--chat-template", "--tool-parser",
                "--reasoning-parser"]  # fmt: skip
    assert [flag for flag in flags if flag in expected] == expected
    assert MODEL_SETTINGS[0].name == "path"  # --model, which adds the model the other flags set


def test_a_flag_and_its_toml_key_give_the_same_model(tmp_path: Path) -> None:
    one, draft = model_dir(tmp_path, "one"), model_dir(tmp_path, "draft")
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages }}")
    toml = tmp_path / "ovserve.toml"
    toml.write_text(
        f'[[models]]\nname = "one"\npath = "{one}"\ndraft_path = "{draft}"\ntask = "generate"\n'
        f'chat_template = "{template}"\ntool_parser = "hermes"\nreasoning_parser = "think"\n'
    )
    flagged = configure(
        "--model", f"one={one}", "--draft-model", f"one={draft}", "--task", "one=generate",
        "--chat-template", f"one={template}", "--tool-parser", "one=hermes", "--reasoning-parser", "one=think",
    )  # fmt: skip
    [from_file] = configure("--config", toml).models
    [from_flags] = flagged.models
    assert from_file == from_flags
    assert (from_file.draft_path, from_file.kind, from_file.tool_parser) == (draft, PipelineKind.GENERATE, "hermes")


def test_toml_paths_expand_the_home_directory_as_flags_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    model_dir(tmp_path, "one")
    toml = tmp_path / "ovserve.toml"
    toml.write_text('[[models]]\nname = "one"\npath = "~/one"\n')
    [spec] = configure("--config", toml).models
    assert spec.path == tmp_path / "one" == configure("--model", "one=~/one").models[0].path


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [("--task", "one", "expected NAME=TASK"), ("--tool-parser", "one", "expected NAME=PARSER")],
)
def test_a_malformed_flag_value_names_what_the_flag_takes(tmp_path: Path, flag: str, value: str, expected: str) -> None:
    one = model_dir(tmp_path, "one")
    with pytest.raises(ConfigError, match=expected):
        configure("--model", f"one={one}", flag, value)


def test_an_unknown_task_is_named_with_its_flag_and_its_toml_entry(tmp_path: Path) -> None:
    one = model_dir(tmp_path, "one")
    with pytest.raises(ConfigError, match=r"--task one: 'draw' is not one of generate"):
        configure("--model", f"one={one}", "--task", "one=draw")
    toml = tmp_path / "ovserve.toml"
    toml.write_text(f'[[models]]\nname = "one"\npath = "{one}"\ntask = "draw"\n')
    with pytest.raises(ConfigError, match=r"\[\[models\]\] #1 task: 'draw' is not one of generate"):
        configure("--config", toml)

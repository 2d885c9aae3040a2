"""The bundled models are one list of models like any other: every per-model flag, a path-less ``[[models]]``
entry of the TOML file and ``--lora`` can name them when ``ovserve serve`` serves them (no model configured)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from ovserve.service.config import MODEL_SETTINGS, ConfigError
from ovserve.service.models import BUNDLED_MODEL, BUNDLED_MODELS_DIR
from ovserve.service.pipelines import PipelineKind
from ovserve.service.sources import SourceError
from tests.conftest import SERVED_BY_DEFAULT, TINY_CHAT_DRAFT
from tests.service.test_config import by_name, configure, model_dir, needs_bundled, toml_file

CAPITALS = BUNDLED_MODELS_DIR / "tiny-chat-capitals"  # the bundled LoRA adapter of tiny-chat
TEMPLATE = Path(__file__).parents[1] / "data" / "chat_templates" / "Apertus-8B-Instruct.jinja"
# Every per-model setting but the path (--model adds a model): its flag's value after "tiny-chat=" (a switch
# names the model alone), its TOML value, and what the served model's field becomes.
SETTING_VALUES: dict[str, tuple[str | None, Any, Any]] = {
    "draft_path": (str(TINY_CHAT_DRAFT), str(TINY_CHAT_DRAFT), TINY_CHAT_DRAFT),
    "weight_format": ("int8", "int8", "int8"),
    "kind": ("generate", "generate", PipelineKind.GENERATE),
    "prompt_lookup": (None, True, True),
    "tool_guided_generation": (None, False, False),  # on by default: --no-tool-guided-generation NAME turns it off
    "chat_template": (str(TEMPLATE), str(TEMPLATE), TEMPLATE),
    "tool_parser": ("hermes", "hermes", "hermes"),
    "reasoning_parser": ("think", "think", "think"),
    "load_on_request": (None, True, True),
    "idle_unload_s": ("90", 90, 90.0),
}
# Settings a bundled model takes but cannot use: the flag reaches the model and is refused for its own reason.
REFUSED = {"weight_format": r"model 'tiny-chat': .*already an OpenVINO model; --weight-format applies to converted"}
SETTINGS = {setting.name: setting for setting in MODEL_SETTINGS[1:]}


def _flag(setting: dataclasses.Field[Any]) -> str:
    return "--" + str(setting.metadata.get("flag", setting.name.replace("_", "-")))


def test_the_table_covers_every_per_model_setting() -> None:
    assert set(SETTING_VALUES) == set(SETTINGS)  # a new per-model setting gets its row here


@needs_bundled
@pytest.mark.parametrize("name", sorted(SETTING_VALUES))
def test_each_per_model_flag_and_toml_key_names_a_bundled_model(tmp_path: Path, name: str) -> None:
    setting = SETTINGS[name]
    flag_value, toml_value, expected = SETTING_VALUES[name]
    argument = BUNDLED_MODEL if flag_value is None else f"{BUNDLED_MODEL}={flag_value}"
    toml_key = str(setting.metadata.get("toml", name))
    shown = str(toml_value).lower() if isinstance(toml_value, bool) else f'"{toml_value}"'
    path = toml_file(tmp_path, f'[[models]]\nname = "{BUNDLED_MODEL}"\n{toml_key} = {shown}\n')
    if name in REFUSED:
        for argv in ((_flag(setting), argument), ("--config", path)):
            with pytest.raises(SourceError, match=REFUSED[name]):
                configure(*argv)
        return
    flagged = by_name(configure(_flag(setting), argument))
    from_file = by_name(configure("--config", path))
    plain = by_name(configure())
    for configured in (flagged, from_file):
        assert list(configured) == SERVED_BY_DEFAULT  # the bundled models all stay served
        assert getattr(configured[BUNDLED_MODEL], name) == expected != getattr(plain[BUNDLED_MODEL], name)
        assert configured[BUNDLED_MODEL] == dataclasses.replace(plain[BUNDLED_MODEL], **{name: expected})
        assert {key: spec for key, spec in configured.items() if key != BUNDLED_MODEL} == {
            key: spec for key, spec in plain.items() if key != BUNDLED_MODEL
        }  # and only the one named changes


@needs_bundled
def test_lora_names_a_bundled_base_model_from_the_flag_and_the_toml(tmp_path: Path) -> None:
    flagged = by_name(configure("--lora", f"caps={BUNDLED_MODEL}:{CAPITALS}"))
    path = toml_file(tmp_path, f'[[models]]\nname = "{BUNDLED_MODEL}"\nlora = {{ caps = "{CAPITALS}" }}\n')
    from_file = by_name(configure("--config", path))
    for configured in (flagged, from_file):
        assert list(configured) == SERVED_BY_DEFAULT
        assert configured[BUNDLED_MODEL].lora == {"caps": CAPITALS}


@needs_bundled
def test_a_pathless_toml_entry_sets_a_bundled_models_scheduler_and_flags_win(tmp_path: Path) -> None:
    path = toml_file(
        tmp_path,
        f'[scheduler]\nmax_num_seqs = 16\n\n[[models]]\nname = "{BUNDLED_MODEL}"\ntool_parser = "hermes"\n'
        "scheduler = { max_num_seqs = 4 }\n",
    )
    specs = by_name(configure("--config", path, "--tool-parser", f"{BUNDLED_MODEL}=qwen3_coder"))
    assert specs[BUNDLED_MODEL].settings.max_num_seqs == 4
    assert {spec.settings.max_num_seqs for name, spec in specs.items() if name != BUNDLED_MODEL} == {16}
    assert specs[BUNDLED_MODEL].tool_parser == "qwen3_coder"  # the flag over the file


def test_a_configured_model_replaces_the_bundled_ones_and_a_flag_naming_one_says_what_is_served(
    tmp_path: Path,
) -> None:
    one = model_dir(tmp_path, "one")
    with pytest.raises(ConfigError, match=r"--prompt-lookup tiny-chat: no model named 'tiny-chat'; served: one$"):
        configure("--model", f"one={one}", "--prompt-lookup", BUNDLED_MODEL)
    with pytest.raises(ConfigError, match=r"--lora x=tiny-chat:/a: no model named 'tiny-chat'; served: one$"):
        configure("--model", f"one={one}", "--lora", f"x={BUNDLED_MODEL}:/a")
    path = toml_file(tmp_path, f'[[models]]\nname = "one"\npath = "{one}"\n\n[[models]]\nname = "{BUNDLED_MODEL}"\n')
    with pytest.raises(ConfigError, match=r"\[\[models\]\] #2: needs name and path .*no model is named 'tiny-chat'"):
        configure("--config", path)

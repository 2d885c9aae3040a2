"""The model families the end-to-end tests build tiny models of: ONE table, read by the builder and the tests.

Each family is a real chat template (tests/data/chat_templates) on a real tokenizer (llama.cpp's vocab-only
GGUFs, converted once to tests/data/tokenizers/*.tokenizer.json.xz by extract_tokenizers.py). Where the
family's own tokenizer is not among those GGUFs, the closest one stands in and the family's markup tokens
are added with the special flag the real tokenizer gives them, so that tool-call and reasoning markup
encodes to single ids as in the real model. The token ids differ from the real model's; the text does not.

Each family also has a ``script``: what its tiny model writes, greedily, after the family's generation prompt
(build.py makes the weights a bigram model that plays it): the family's own reasoning markup around THOUGHT,
then ANSWER, then the token that ends the family's turn. A bigram model gives each token one successor, so no
token may repeat in a script: whitespace and punctuation are chosen for that (THOUGHT has no full stop, the
answer has one), and a script may not contain the last token of a thinking-on prompt either.

Special flags, as the real tokenizers have them: control markup (roles, turn ends, Mistral's
``[TOOL_CALLS]``, Llama's ``<|python_tag|>``, harmony's ``<|channel|>``) is special and vanishes from
``skip_special_tokens`` decoding; Qwen's ``<tool_call>``, ``<think>`` and DeepSeek's ``<｜tool▁calls▁begin｜>``
family are added but not special, so they stay in the decoded text (vLLM's parsers rely on that).
"""

# DeepSeek's markup is spelled with fullwidth bars (U+FF5C) and U+2581: they are the real tokens.
# ruff: noqa: RUF001, RUF002

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "data"
TEMPLATES_DIR = DATA / "chat_templates"
TOKENIZERS_DIR = DATA / "tokenizers"


@dataclass(frozen=True)
class Family:
    """One model family: its chat template on a tokenizer, with the tokens it needs."""

    name: str
    template: str  # file name in tests/data/chat_templates
    tokenizer: str  # llama.cpp's ggml-vocab-<tokenizer>.gguf, as tests/data/tokenizers/<tokenizer>.tokenizer.json.xz
    bos: str | None  # the tokenizer's bos_token / eos_token / pad_token (as tokenizer_config.json names them)
    eos: str
    end_of_turn: tuple[str, ...]  # generation_config.json's eos_token_id: what ends an assistant turn
    script: str  # what the model writes after the generation prompt, ending with one of end_of_turn
    special: tuple[str, ...] = ()  # tokens made (or kept) special added tokens
    added: tuple[str, ...] = ()  # tokens made non-special added tokens (matched whole, kept when decoding)
    pad: str | None = None
    add_bos: bool = False  # encode(add_special_tokens=True) prepends bos, as the real tokenizer does
    markup: tuple[str, ...] = field(default=())  # tool-call/reasoning markup the tests expect as single ids

    @property
    def template_path(self) -> Path:
        return TEMPLATES_DIR / self.template


THOUGHT, ANSWER = "Checking the sky", "Sunny today."  # the scripts' reasoning and reply

# Qwen2.5's added tokens in their real order: on the qwen2 GGUF they take the ids of llama.cpp's [PADn]
# fillers, so they get their real ids (151646...). Qwen3 appends <tool_response>, <think> after them.
_QWEN25_SPECIAL = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>",
    "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>",
)  # fmt: skip
_QWEN25_ADDED = (
    "<tool_call>", "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>",
)  # fmt: skip
_QWEN3_ADDED = (*_QWEN25_ADDED, "<tool_response>", "</tool_response>", "<think>", "</think>")
_QWEN = {"tokenizer": "qwen2", "bos": None, "eos": "<|im_end|>", "pad": "<|endoftext|>",
         "end_of_turn": ("<|im_end|>", "<|endoftext|>"), "special": _QWEN25_SPECIAL}  # fmt: skip

_LLAMA3_SPECIAL = ("<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>",
                   "<|eot_id|>", "<|eom_id|>", "<|python_tag|>", "<|finetune_right_pad_id|>")  # fmt: skip
_LLAMA3 = {"tokenizer": "llama-bpe", "bos": "<|begin_of_text|>", "eos": "<|eot_id|>", "add_bos": True,
           "end_of_turn": ("<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"), "special": _LLAMA3_SPECIAL}  # fmt: skip

# Mistral's v3 control tokens (Mistral-7B-Instruct-v0.3 has them at ids 3-9); Tekken (Devstral) has more.
_MISTRAL_V3 = ("<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
               "[TOOL_RESULTS]", "[/TOOL_RESULTS]")  # fmt: skip
_TEKKEN = (*_MISTRAL_V3, "[IMG]", "[SYSTEM_PROMPT]", "[/SYSTEM_PROMPT]", "[TOOL_CONTENT]", "[ARGS]", "[CALL_ID]")

_DEEPSEEK_SPECIAL = ("<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>")
_DEEPSEEK_ADDED = (
    "<｜User｜>", "<｜Assistant｜>", "<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
    "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁outputs▁begin｜>", "<｜tool▁outputs▁end｜>",
    "<｜tool▁output▁begin｜>", "<｜tool▁output▁end｜>", "<｜tool▁sep｜>",
)  # fmt: skip
_DEEPSEEK = {"bos": "<｜begin▁of▁sentence｜>", "eos": "<｜end▁of▁sentence｜>", "add_bos": True,
             "end_of_turn": ("<｜end▁of▁sentence｜>",), "special": _DEEPSEEK_SPECIAL, "added": _DEEPSEEK_ADDED,
             "markup": ("<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<think>")}  # fmt: skip

# Command R's control tokens (llama.cpp's command-r GGUF has them unmarked: the families mark them special).
_COHERE_SPECIAL = ("<PAD>", "<BOS_TOKEN>", "<EOS_TOKEN>", "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>",
                   "<|USER_TOKEN|>", "<|CHATBOT_TOKEN|>", "<|SYSTEM_TOKEN|>")  # fmt: skip

# Hy3's think and tool-call tags, each with the checkpoint's ":opensource" suffix, opening and closing.
_HY3_TAGS = ("think", "tool_calls", "tool_call", "arg_key", "arg_value", "tool_responses", "tool_response")
_HY3_ADDED = (*(f"<{close}{tag}:opensource>" for tag in _HY3_TAGS for close in ("", "/")), "<tool_sep:opensource>")

# Markup a turn writes more than once in pieces (a bigram model writes each token once) is added whole: one id for
# a whole tag, the text the real model's. Apriel's end of reasoning; Kimi K3's channel tags in the order a reply
# writes them (think closed, response opened; response closed, message closed); Solar Open's and Onyx's reply
# headers (each ends with the word every prompt ends with).
APRIEL_FINAL = "[BEGIN FINAL RESPONSE]"
APRIEL_STEPS, APRIEL_END = "Here are my reasoning steps:", "[END FINAL RESPONSE]"  # Apriel 1.5's own words
_KIMI_K3_TAGS = ("<|close|>think<|sep|>", "<|open|>response<|sep|>", "<|close|>response<|sep|>",
                 "<|close|>message<|sep|>")  # fmt: skip
_SOLAR_REPLY = "<|begin|>assistant<|content|>"
_SOLAR_SPECIAL = (
    "<|begin|>", "<|end|>", "<|content|>", "<|think|>", "<|flush|>", "<|calls|>", "<|tool_calls|>",
    "<|tool_call:begin|>", "<|tool_call:name|>", "<|tool_call:args|>", "<|tool_call:end|>", "<|tool_response|>",
    "<|tool_response:begin|>", "<|tool_response:name|>", "<|tool_response:result|>", "<|tool_response:end|>",
)  # fmt: skip
_ONYX_REPLY = "assistant to=user<|message|>"

FAMILIES: dict[str, Family] = {
    family.name: family
    for family in [
        Family(
            "qwen2.5",
            "Qwen-Qwen2.5-7B-Instruct.jinja",
            added=_QWEN25_ADDED,
            markup=("<tool_call>",),
            script=f"{ANSWER}<|im_end|>",
            **_QWEN,
        ),
        # Qwen3's prompt leaves <think> to the model (or, thinking off, ends an empty block with "\n\n").
        Family(
            "qwen3",
            "Qwen-Qwen3-0.6B.jinja",
            added=_QWEN3_ADDED,
            markup=("<tool_call>", "<think>"),
            script=f"<think>{THOUGHT}</think>\n\n{ANSWER}<|im_end|>",
            **_QWEN,
        ),
        # QwQ's prompt opens the block ("<think>\n") or, thinking off, ends an empty one with </think>.
        Family(
            "qwq",
            "Qwen-QwQ-32B.jinja",
            added=_QWEN3_ADDED,
            markup=("<tool_call>", "<think>"),
            script=f"{THOUGHT}</think>{ANSWER}<|im_end|>",
            **_QWEN,
        ),
        Family(
            "qwen3-coder",
            "Qwen3-Coder.jinja",
            added=_QWEN3_ADDED,
            markup=("<tool_call>",),
            script=f"{ANSWER}<|im_end|>",
            **_QWEN,
        ),
        Family(
            "llama3.1",
            "meta-llama-Llama-3.1-8B-Instruct.jinja",
            markup=("<|python_tag|>",),
            script=f"{ANSWER}<|eot_id|>",
            **_LLAMA3,
        ),
        Family(
            "llama3.2",
            "meta-llama-Llama-3.2-3B-Instruct.jinja",
            markup=("<|eot_id|>",),
            script=f"{ANSWER}<|eot_id|>",
            **_LLAMA3,
        ),
        Family(
            "hermes3",
            "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
            script=f"{ANSWER}<|im_end|>",
            tokenizer="llama-bpe",
            bos="<|begin_of_text|>",
            eos="<|im_end|>",
            add_bos=True,
            end_of_turn=("<|im_end|>",),
            # Hermes 3 turned Llama 3's reserved special tokens into these (special, like the ones they replace).
            special=(
                *_LLAMA3_SPECIAL,
                "<|im_start|>",
                "<|im_end|>",
                "<tool_call>",
                "</tool_call>",
                "<tools>",
                "</tools>",
                "<tool_response>",
                "</tool_response>",
            ),
            markup=("<tool_call>",),
        ),
        Family(
            "mistral-v0.3",
            "mistralai-Mistral-7B-Instruct-v0.3.jinja",
            script=f"{ANSWER}</s>",
            tokenizer="llama-spm",
            bos="<s>",
            eos="</s>",
            add_bos=True,
            end_of_turn=("</s>",),
            special=_MISTRAL_V3,
            markup=("[TOOL_CALLS]", "[AVAILABLE_TOOLS]"),
        ),
        Family(
            "devstral",
            "unsloth-mistral-Devstral-Small-2507.jinja",
            script=f"{ANSWER}</s>",
            tokenizer="llama-bpe",  # Tekken is byte-level BPE like Llama 3's; Llama 3's own specials stay
            bos="<s>",
            eos="</s>",
            add_bos=True,
            end_of_turn=("</s>",),
            special=_TEKKEN,
            markup=("[TOOL_CALLS]", "[ARGS]", "[SYSTEM_PROMPT]"),
        ),
        # Both open the block (R1 "<think>\n", V3.1 "<think>") or, thinking off, end an empty one with </think>.
        Family(
            "deepseek-r1",
            "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
            tokenizer="qwen2",
            script=f"{THOUGHT}</think>{ANSWER}<｜end▁of▁sentence｜>",
            **_DEEPSEEK,
        ),
        Family(
            "deepseek-v3.1",
            "deepseek-ai-DeepSeek-V3.1.jinja",
            tokenizer="deepseek-llm",
            script=f"{THOUGHT}</think>{ANSWER}<｜end▁of▁sentence｜>",
            **_DEEPSEEK,
        ),
        Family(
            "phi-4-mini",
            "microsoft-Phi-4-mini-instruct.jinja",
            script=f"{ANSWER}<|end|>",
            tokenizer="gpt-2",  # Phi-4-mini's o200k-like BPE is not among the GGUFs
            bos="<|endoftext|>",
            eos="<|endoftext|>",
            end_of_turn=("<|end|>", "<|endoftext|>"),
            special=(
                "<|endoftext|>",
                "<|assistant|>",
                "<|end|>",
                "<|user|>",
                "<|system|>",
                "<|tool|>",
                "<|/tool|>",
                "<|tool_call|>",
                "<|/tool_call|>",
                "<|tool_response|>",
                "<|tag|>",
            ),
            markup=("<|tool|>", "<|/tool|>", "<|tool_call|>"),
        ),
        Family(
            "gpt-oss",
            "openai-gpt-oss-120b.jinja",
            # The final message would repeat <|channel|> and <|message|>: the analysis message alone.
            script=f"<|channel|>analysis<|message|>{THOUGHT}<|end|><|return|>",
            tokenizer="gpt-2",  # o200k_harmony is not among the GGUFs
            bos="<|startoftext|>",
            eos="<|return|>",
            pad="<|endoftext|>",
            end_of_turn=("<|return|>", "<|endoftext|>", "<|call|>"),
            special=(
                "<|startoftext|>",
                "<|endoftext|>",
                "<|start|>",
                "<|end|>",
                "<|message|>",
                "<|channel|>",
                "<|constrain|>",
                "<|return|>",
                "<|call|>",
            ),
            markup=("<|channel|>", "<|constrain|>", "<|call|>"),
        ),
        Family(
            "granite-3.3",
            "ibm-granite-granite-3.3-2B-Instruct.jinja",
            # Thinking asks for <think>...</think><response>...</response>. Several ids each in this vocabulary
            # ("think" and ">" twice), which a bigram model cannot write: they are added here as non-special
            # tokens, which decode to the same text the parser reads either way.
            script=f"<think>{THOUGHT}</think><response>{ANSWER}</response><|end_of_text|>",
            tokenizer="starcoder",  # Granite 3's vocabulary is StarCoder's plus these
            bos="<|end_of_text|>",
            eos="<|end_of_text|>",
            end_of_turn=("<|end_of_text|>",),
            special=(
                "<|end_of_text|>",
                "<|start_of_role|>",
                "<|end_of_role|>",
                "<|tool_call|>",
                "<|start_of_cite|>",
                "<|end_of_cite|>",
            ),
            added=("<think>", "</think>", "<response>", "</response>"),
            markup=("<|tool_call|>", "<|start_of_role|>"),
        ),
        Family(
            "gemma-3",
            "google-gemma-3-270m-it.jinja",
            script=f"{ANSWER}<end_of_turn>",
            tokenizer="gemma-4",  # Gemma 3's 262k SentencePiece vocabulary, Gemma 4's revision of it
            bos="<bos>",
            eos="<eos>",
            add_bos=False,  # the template writes <bos> itself
            end_of_turn=("<eos>", "<end_of_turn>"),
            special=("<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>", "<start_of_image>"),
            markup=("<start_of_turn>", "<end_of_turn>"),
        ),
        Family(
            "gemma-4",
            "google-gemma-4-31B-it.jinja",
            # Gemma 4 writes "<|channel>thought\n"; "\n" ends the thinking-on prompt ("<|turn>model\n"), so "\n\n".
            # Thinking off, the prompt ends with an empty channel: "<|channel>thought\n<channel|>".
            script=f"<|channel>thought\n\n{THOUGHT}<channel|>{ANSWER}<turn|>",
            tokenizer="gemma-4",  # the real one: the GGUF already has every markup token
            bos="<bos>",
            eos="<eos>",
            end_of_turn=("<eos>", "<turn|>"),
            special=("<bos>", "<eos>", "<|turn>", "<turn|>", "<|tool>", "<tool|>"),
            markup=("<|tool_call>", "<tool_call|>", "<|turn>"),
        ),
        Family(
            "kimi-k2",
            "moonshotai-Kimi-K2.jinja",
            script=f"{ANSWER}<|im_end|>",
            tokenizer="llama-bpe",  # Kimi's tiktoken vocabulary is not among the GGUFs
            bos="[BOS]",
            eos="[EOS]",
            end_of_turn=("<|im_end|>",),
            special=(
                "[BOS]",
                "[EOS]",
                "<|im_end|>",
                "<|im_user|>",
                "<|im_assistant|>",
                "<|im_system|>",
                "<|im_middle|>",
                "<|tool_calls_section_begin|>",
                "<|tool_calls_section_end|>",
                "<|tool_call_begin|>",
                "<|tool_call_argument_begin|>",
                "<|tool_call_end|>",
            ),
            markup=("<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>"),
        ),
        Family(
            "glm-4.6",
            "GLM-4.6.jinja",
            # Thinking off, the prompt ends with "\n<think></think>".
            script=f"\n<think>{THOUGHT}</think>{ANSWER}<|user|>",
            tokenizer="qwen2",  # GLM-4's 151k BPE is not among the GGUFs; Qwen2's is the nearest in kind
            bos=None,
            eos="<|endoftext|>",
            end_of_turn=("<|endoftext|>", "<|user|>", "<|observation|>"),
            special=(
                "<|endoftext|>",
                "[gMASK]",
                "<sop>",
                "<|system|>",
                "<|user|>",
                "<|assistant|>",
                "<|observation|>",
            ),
            added=(
                "<think>",
                "</think>",
                "<tool_call>",
                "</tool_call>",
                "<tool_response>",
                "</tool_response>",
                "<arg_key>",
                "</arg_key>",
                "<arg_value>",
                "</arg_value>",
            ),
            markup=("<tool_call>", "<arg_key>", "<arg_value>"),
        ),
        # Seed-OSS's own 155k BPE is not among the GGUFs; Qwen2's is the nearest in kind. Its role and sequence
        # tokens are special; its think and tool-call tags are added but kept in the text, where vLLM's
        # seed_oss parsers read them. The model always thinks (no switch but a thinking budget).
        Family(
            "seed-oss",
            "ByteDance-Seed-OSS.jinja",
            script=f"<seed:think>{THOUGHT}</seed:think>{ANSWER}<seed:eos>",
            tokenizer="qwen2",
            bos="<seed:bos>",
            eos="<seed:eos>",
            pad="<seed:pad>",
            end_of_turn=("<seed:eos>",),
            special=("<seed:bos>", "<seed:eos>", "<seed:pad>"),
            added=(
                "<seed:think>",
                "</seed:think>",
                "<seed:tool_call>",
                "</seed:tool_call>",
                "<seed:cot_budget_reflect>",
                "</seed:cot_budget_reflect>",
            ),
            markup=("<seed:tool_call>", "<seed:think>"),
        ),
        # Functionary v3.1 is Llama 3.1 with its tokenizer; its calls are plain text (<function=NAME>{...}).
        Family(
            "functionary-v3.1",
            "meetkai-functionary-medium-v3.1.jinja",
            markup=("<|python_tag|>", "<|eot_id|>"),
            script=f"{ANSWER}<|eot_id|>",
            **_LLAMA3,
        ),
        # Ministral 3 reasoning (Tekken, as Devstral): [THINK] and [/THINK] are control tokens there.
        Family(
            "ministral-3-reasoning",
            "mistralai-Ministral-3-14B-Reasoning-2512.jinja",
            script=f"[THINK]{THOUGHT}[/THINK]{ANSWER}</s>",
            tokenizer="llama-bpe",  # Tekken is byte-level BPE like Llama 3's; Llama 3's own specials stay
            bos="<s>",
            eos="</s>",
            end_of_turn=("</s>",),
            special=(*_TEKKEN, "[THINK]", "[/THINK]"),
            markup=("[TOOL_CALLS]", "[ARGS]", "[THINK]", "[/THINK]"),
        ),
        # LFM2's 65k byte-level BPE is not among the GGUFs; GPT-2's is the nearest in kind. Its ChatML and tool
        # tokens are special control tokens; the thinking tags are added and kept in the text.
        Family(
            "lfm2.5",
            "LFM2.5-8B-A1B.jinja",
            script=f"<think>{THOUGHT}</think>{ANSWER}<|im_end|>",
            tokenizer="gpt-2",
            bos="<|startoftext|>",
            eos="<|im_end|>",
            pad="<|pad|>",
            end_of_turn=("<|im_end|>",),
            special=(
                "<|startoftext|>",
                "<|pad|>",
                "<|im_start|>",
                "<|im_end|>",
                "<|tool_list_start|>",
                "<|tool_list_end|>",
                "<|tool_call_start|>",
                "<|tool_call_end|>",
                "<|tool_response_start|>",
                "<|tool_response_end|>",
            ),
            added=("<think>", "</think>"),
            markup=("<|tool_call_start|>", "<|tool_call_end|>", "<think>"),
        ),
        # Command R7B on Command R's own 256k BPE (llama.cpp's GGUF predates R7B's thinking, action and response
        # tokens: added here, special as all of Cohere's <|...|> control tokens are).
        Family(
            "command-r7b",
            "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
            script=f"<|START_THINKING|>{THOUGHT}<|END_THINKING|><|START_RESPONSE|>{ANSWER}<|END_RESPONSE|>"
            "<|END_OF_TURN_TOKEN|>",
            tokenizer="command-r",
            bos="<BOS_TOKEN>",
            eos="<|END_OF_TURN_TOKEN|>",
            pad="<PAD>",
            end_of_turn=("<|END_OF_TURN_TOKEN|>",),
            special=(
                *_COHERE_SPECIAL,
                "<|START_THINKING|>",
                "<|END_THINKING|>",
                "<|START_ACTION|>",
                "<|END_ACTION|>",
                "<|START_RESPONSE|>",
                "<|END_RESPONSE|>",
                "<|START_TOOL_RESULT|>",
                "<|END_TOOL_RESULT|>",
            ),
            markup=("<|START_ACTION|>", "<|END_ACTION|>", "<|START_THINKING|>", "<|START_RESPONSE|>"),
        ),
        # Phi-3.5-mini on its own vocabulary (llama.cpp's phi-3 GGUF: Llama 2's SentencePiece and Phi-3's control
        # tokens). Its template shows no tool format: the generic one serves it; it has no reasoning mode.
        Family(
            "phi-3.5",
            "microsoft-Phi-3.5-mini-instruct.jinja",
            script=f"{ANSWER}<|end|>",
            tokenizer="phi-3",
            bos="<s>",
            eos="<|endoftext|>",
            end_of_turn=("<|end|>", "<|assistant|>", "<|endoftext|>"),
            special=("<s>", "</s>", "<|endoftext|>", "<|assistant|>", "<|system|>", "<|end|>", "<|user|>"),
            markup=("<|assistant|>", "<|end|>"),
        ),
        # Qwen3.5 on llama.cpp's qwen35 vocabulary (Qwen2's tokens and merges under Qwen3.5's pre-tokenizer
        # name; the real 248k vocabulary is not among the GGUFs). Its prompt opens the block ("<think>\n") or,
        # thinking off, writes an empty one ("<think>\n\n</think>\n\n"): the script goes on from its "\n\n".
        Family(
            "qwen3.5",
            "Qwen3.5-4B.jinja",
            added=_QWEN3_ADDED,
            markup=("<tool_call>", "<think>"),
            script=f"{THOUGHT}</think>\n\n{ANSWER}<|im_end|>",
            **{**_QWEN, "tokenizer": "qwen35"},
        ),
        # Llama 4 under vLLM's pythonic template ([NAME(ARG="..."), ...]); Llama 4's 200k BPE is not among the
        # GGUFs: Llama 3's byte-level BPE stands in, with Llama 4's header and turn tokens.
        Family(
            "llama4-pythonic",
            "vllm-llama4-pythonic.jinja",
            script=f"{ANSWER}<|eot|>",
            tokenizer="llama-bpe",
            bos="<|begin_of_text|>",
            eos="<|eot|>",
            add_bos=True,
            end_of_turn=("<|end_of_text|>", "<|eom|>", "<|eot|>"),
            special=(
                *_LLAMA3_SPECIAL,
                "<|header_start|>",
                "<|header_end|>",
                "<|eot|>",
                "<|eom|>",
                "<|image|>",
                "<|python_start|>",
                "<|python_end|>",
            ),
            markup=("<|header_start|>", "<|eot|>"),
        ),
        # Functionary v3.2 is Llama 3.1 with its tokenizer. The prompt ends with ">>>"; the model names the
        # recipient ("all" for text, a function's name for a call) on the first line.
        Family(
            "functionary-v3.2",
            "meetkai-functionary-medium-v3.2.jinja",
            markup=("<|eot_id|>",),
            script=f"all\n{ANSWER}<|eot_id|>",
            **_LLAMA3,
        ),
        # Nemotron Nano v2 (9B): its 131k Tekken-like byte-level BPE is not among the GGUFs; Llama 3's stands in.
        # Its <SPECIAL_n> role and turn tokens are control tokens; <think> and <TOOLCALL> stay in the text, where
        # vLLM's parsers read them. Thinking is switched by /think or /no_think in a message, not by a kwarg: the
        # prompt opens the block ("<think>\n") unless told /no_think. The model ends it with "</think>\n\n" (a forced
        # call's grammar takes the blank line or none: ovserve.service.structured.output.AFTER_THINK_BLANKS).
        Family(
            "nemotron-nano-v2",
            "NVIDIA-Nemotron-Nano-v2.jinja",
            script=f"{THOUGHT}</think>\n\n{ANSWER}<SPECIAL_12>",
            tokenizer="llama-bpe",
            bos="<s>",
            eos="<SPECIAL_12>",
            end_of_turn=("<SPECIAL_12>",),
            special=("<s>", "</s>", "<SPECIAL_10>", "<SPECIAL_11>", "<SPECIAL_12>"),
            added=(
                "<think>",
                "</think>",
                "<TOOLCALL>",
                "</TOOLCALL>",
                "<AVAILABLE_TOOLS>",
                "</AVAILABLE_TOOLS>",
                "<TOOL_RESPONSE>",
                "</TOOL_RESPONSE>",
            ),
            markup=("<TOOLCALL>", "<think>", "<SPECIAL_11>"),
        ),
        # MiniMax-M2: its 200k byte-level BPE is not among the GGUFs; Qwen2's is the nearest in kind. Its role
        # markers (]~!b[, ]~b], [e~[) are control tokens; the think and tool-call tags stay in the text. The
        # prompt always opens the block ("<think>\n"); the model ends it with "</think>\n\n", as its template
        # writes a past turn's.
        Family(
            "minimax-m2",
            "MiniMax-M2.jinja",
            script=f"{THOUGHT}</think>\n\n{ANSWER}[e~[",
            tokenizer="qwen2",
            bos="]~!b[",
            eos="[e~[",
            end_of_turn=("[e~[",),
            special=("]~!b[", "]~b]", "[e~["),
            added=("<think>", "</think>", "<minimax:tool_call>", "</minimax:tool_call>"),
            markup=("<minimax:tool_call>", "<think>", "]~b]"),
        ),
        # MiniMax-M1: its 200k byte-level BPE is not among the GGUFs; Qwen2's stands in. Its sentence markers are
        # control tokens; <think> and <tool_calls> stay in the text. The model opens its reasoning block itself
        # (no switch) and ends it with "</think>\n\n".
        Family(
            "minimax-m1",
            "MiniMax-M1.jinja",
            script=f"<think>{THOUGHT}</think>\n\n{ANSWER}<end_of_sentence>",
            tokenizer="qwen2",
            bos="<begin_of_document>",
            eos="<end_of_sentence>",
            end_of_turn=("<end_of_sentence>",),
            special=("<begin_of_document>", "<beginning_of_sentence>", "<end_of_sentence>"),
            added=("<think>", "</think>", "<tool_calls>", "</tool_calls>"),
            markup=("<tool_calls>", "<think>", "<beginning_of_sentence>"),
        ),
        # DeepSeek-R1-Distill-Llama-8B on its real vocabulary: Llama 3.1's, DeepSeek's markup in place of its
        # reserved special tokens. The prompt opens the block ("<think>\n"); the model ends it with "</think>\n\n".
        Family(
            "deepseek-r1-llama",
            "deepseek-ai-DeepSeek-R1-Distill-Llama-8B.jinja",
            tokenizer="llama-bpe",
            script=f"{THOUGHT}</think>\n\n{ANSWER}<｜end▁of▁sentence｜>",
            **_DEEPSEEK,
        ),
        # InternLM2-chat under vLLM's tool template: its 92k SentencePiece is not among the GGUFs; Llama 2's stands
        # in. Its ChatML, action and plugin tokens are control tokens (vLLM's parser reads them kept in the text).
        Family(
            "internlm2",
            "vllm-internlm2-tool.jinja",
            script=f"{ANSWER}<|im_end|>",
            tokenizer="llama-spm",
            bos="<s>",
            eos="</s>",
            add_bos=True,
            end_of_turn=("</s>", "<|im_end|>"),
            special=(
                "<s>",
                "</s>",
                "<|im_start|>",
                "<|im_end|>",
                "<|action_start|>",
                "<|action_end|>",
                "<|interpreter|>",
                "<|plugin|>",
            ),
            markup=("<|action_start|>", "<|plugin|>", "<|im_start|>"),
        ),
        # granite-20b-functioncalling under vLLM's template, on StarCoder's vocabulary (Granite's code models'
        # own kind); <function_call> is text the parser reads.
        Family(
            "granite-20b-fc",
            "vllm-granite-20b-fc.jinja",
            script=f"{ANSWER}<|endoftext|>",
            tokenizer="starcoder",
            bos="<|endoftext|>",
            eos="<|endoftext|>",
            end_of_turn=("<|endoftext|>",),
            special=("<|endoftext|>",),
            added=("<function_call>", "<function_response>", "<|function_call_library|>"),
            markup=("<function_call>",),
        ),
        # DeepSeek V3.2 (DSML calls, written as text) on DeepSeek LLM's vocabulary, as V3.1's row. Thinking on, the
        # prompt opens the block ("<think>"); off or not asked, it writes an empty one.
        Family(
            "deepseek-v3.2",
            "deepseek-ai-DeepSeek-V3.2.jinja",
            tokenizer="deepseek-llm",
            script=f"{THOUGHT}</think>{ANSWER}<｜end▁of▁sentence｜>",
            **_DEEPSEEK,
        ),
        # Apertus: its 131k byte-level BPE (Mistral Nemo's kind) is not among the GGUFs; Llama 3's stands in. Every
        # role, tool and reasoning marker is a control token; the model reasons between <|inner_prefix|> and
        # <|inner_suffix|> and goes straight on with its reply.
        Family(
            "apertus",
            "Apertus-8B-Instruct.jinja",
            script=f"<|inner_prefix|>{THOUGHT}<|inner_suffix|>{ANSWER}<|assistant_end|>",
            tokenizer="llama-bpe",
            bos="<s>",
            eos="<|assistant_end|>",
            end_of_turn=("<|assistant_end|>", "</s>"),
            special=(
                "<s>",
                "</s>",
                "<|system_start|>",
                "<|system_end|>",
                "<|developer_start|>",
                "<|developer_end|>",
                "<|user_start|>",
                "<|user_end|>",
                "<|assistant_start|>",
                "<|assistant_end|>",
                "<|inner_prefix|>",
                "<|inner_suffix|>",
                "<|tools_prefix|>",
                "<|tools_suffix|>",
            ),
            markup=("<|tools_prefix|>", "<|tools_suffix|>", "<|inner_prefix|>", "<|inner_suffix|>"),
        ),
        # Hunyuan 3 (Hy3): its 120k BPE is not among the GGUFs; Qwen2's stands in. Every tag carries the
        # checkpoint's ":opensource" suffix; the role tokens are control tokens, the think and tool-call tags stay
        # in the text. Thinking on, the prompt opens the block; off or not asked, it writes an empty one.
        Family(
            "hy3",
            "tencent-Hy3.jinja",
            script=f"{THOUGHT}</think:opensource>{ANSWER}<｜hy_eos:opensource｜>",
            tokenizer="qwen2",
            bos="<｜hy_begin_of_sentence:opensource｜>",
            eos="<｜hy_eos:opensource｜>",
            pad="<｜hy_pad:opensource｜>",
            end_of_turn=("<｜hy_eos:opensource｜>",),
            special=(
                "<｜hy_begin_of_sentence:opensource｜>",
                "<｜hy_eos:opensource｜>",
                "<｜hy_pad:opensource｜>",
                "<｜hy_User:opensource｜>",
                "<｜hy_Assistant:opensource｜>",
                "<｜reasoning_mode:opensource｜>",
            ),
            added=_HY3_ADDED,
            markup=("<tool_calls:opensource>", "<tool_call:opensource>", "<think:opensource>"),
        ),
        # Falcon 3 (OpenVINO GenAI's record of its template): its own 131k BPE is not among the GGUFs; llama.cpp's
        # falcon vocabulary (Falcon 1's 65k byte-level BPE, the family's earlier one) stands in. Its prompt with
        # tools names <tool_call>: hermes.
        Family(
            "falcon3",
            "genai-tiiuae-Falcon3-3B-Instruct.jinja",
            script=f"{ANSWER}<|endoftext|>",
            tokenizer="falcon",
            bos=None,
            eos="<|endoftext|>",
            end_of_turn=("<|endoftext|>",),
            special=("<|endoftext|>", "<|system|>", "<|user|>", "<|assistant|>"),
            added=("<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<tools>", "</tools>"),
            markup=("<tool_call>", "<|assistant|>"),
        ),
        # Hermes 2 Pro (Llama 3 8B) on its real vocabulary: Llama 3's, its ChatML and tool tags in place of
        # reserved special tokens, as Hermes 3's row.
        Family(
            "hermes2-pro",
            "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja",
            script=f"{ANSWER}<|im_end|>",
            tokenizer="llama-bpe",
            bos="<|begin_of_text|>",
            eos="<|im_end|>",
            add_bos=True,
            end_of_turn=("<|im_end|>",),
            special=(
                *_LLAMA3_SPECIAL,
                "<|im_start|>",
                "<|im_end|>",
                "<tool_call>",
                "</tool_call>",
                "<tools>",
                "</tools>",
                "<tool_response>",
                "</tool_response>",
            ),
            markup=("<tool_call>",),
        ),
        # MiniMax-M3: as M2, Qwen2's vocabulary stands in for its own. Its XML tags each start with the
        # ]<]minimax[>[ marker, kept in the text; the model reasons in <mm:think> and goes straight on (its template
        # writes a past call right after </mm:think>).
        Family(
            "minimax-m3",
            "MiniMax-M3.jinja",
            script=f"<mm:think>{THOUGHT}</mm:think>{ANSWER}[e~[",
            tokenizer="qwen2",
            bos="]~!b[",
            eos="[e~[",
            end_of_turn=("[e~[",),
            special=("]~!b[", "]~b]", "[e~["),
            added=("<mm:think>", "</mm:think>", "]<]minimax[>["),
            markup=("]<]minimax[>[", "<mm:think>"),
        ),
        # MiniCPM5: its vocabulary is not among the GGUFs; Qwen2's (ChatML, the same <think> tags) stands in. Its
        # calls are plain XML text. Thinking on, the prompt opens the block ("<think>\n"); not asked, it opens
        # none, and both prompts end with the same "\n": a bigram model cannot answer the one and reason after the
        # other, so it answers (matrix.NO_REASONING: its reasoning is Qwen3's, checked on those families).
        Family(
            "minicpm5",
            "openbmb-MiniCPM5-1B.jinja",
            added=_QWEN3_ADDED,
            markup=("<think>", "<|im_start|>"),
            script=f"{ANSWER}<|im_end|>",
            **_QWEN,
        ),
        # DeepSeek V4 (DSML calls in a tool_calls block) as V3.2's row. Thinking on, the prompt opens the block;
        # off or not asked, it ends with </think>.
        Family(
            "deepseek-v4",
            "deepseek-ai-DeepSeek-V4.jinja",
            tokenizer="deepseek-llm",
            script=f"{THOUGHT}</think>{ANSWER}<｜end▁of▁sentence｜>",
            **_DEEPSEEK,
        ),
        # Command R+ under its tool_use template, on Command R's own 256k BPE (the same vocabulary). Its calls are
        # plain text ("Action:" and a ```json list of tool_name/parameters objects); it has no reasoning mode.
        Family(
            "command-r-plus",
            "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
            script=f"{ANSWER}<|END_OF_TURN_TOKEN|>",
            tokenizer="command-r",
            bos="<BOS_TOKEN>",
            eos="<|END_OF_TURN_TOKEN|>",
            pad="<PAD>",
            end_of_turn=("<|END_OF_TURN_TOKEN|>",),
            special=_COHERE_SPECIAL,
            markup=("<|START_OF_TURN_TOKEN|>", "<|CHATBOT_TOKEN|>"),
        ),
        # Apriel 1.6 (Thinker): its Tekken-like byte-level BPE is not among the GGUFs; Llama 3's stands in, with
        # Apriel's role tokens. It always reasons: the prompt opens the block with "Here are my reasoning steps:\n"
        # and the model ends it with "[BEGIN FINAL RESPONSE]" (added whole: several ids in this vocabulary, "]"
        # among them). Its first line break is "\n", so the one after the marker is "\n\n" (a bigram model
        # writes each token once); the reply after it is read the same with either.
        Family(
            "apriel-1.6",
            "Apriel-1.6-15b-Thinker-fixed.jinja",
            script=f"{THOUGHT}\n{APRIEL_FINAL}\n\n{ANSWER}<|end|>",
            tokenizer="llama-bpe",
            bos="<s>",
            eos="</s>",
            end_of_turn=("<|end|>", "</s>"),
            special=(
                "<s>",
                "</s>",
                "<|begin_system|>",
                "<|begin_user|>",
                "<|begin_assistant|>",
                "<|begin_tool_result|>",
                "<|begin_content|>",
                "<|end|>",
            ),
            added=("<tool_calls>", "</tool_calls>", APRIEL_FINAL),
            markup=("<tool_calls>", APRIEL_FINAL, "<|begin_assistant|>"),
        ),
        # Apriel 1.5 (Thinker) on its published template as it defaults (add_thoughts unset, as the model card's
        # examples leave it): Llama 3's vocabulary stands in as for 1.6, with 1.5's role tokens. The prompt opens no
        # block; the model writes "Here are my reasoning steps:" itself, ends the block with "[BEGIN FINAL RESPONSE]"
        # and closes the reply with "[END FINAL RESPONSE]", as the system prompt asks (each added whole: several ids
        # in this vocabulary, "]" among them, and a bigram model writes each token once; the opening words with their
        # line break, as the prompt ends with "\n").
        Family(
            "apriel-1.5",
            "unsloth-Apriel-1.5.jinja",
            script=f"{APRIEL_STEPS}\n{THOUGHT}\n\n{APRIEL_FINAL}{ANSWER}{APRIEL_END}<|end|>",
            tokenizer="llama-bpe",
            bos="<s>",
            eos="</s>",
            end_of_turn=("<|end|>", "</s>"),
            special=(
                "<s>",
                "</s>",
                "<|system|>",
                "<|user|>",
                "<|assistant|>",
                "<|tool_result|>",
                "<|content|>",
                "<|end|>",
            ),
            added=("<tool_calls>", "</tool_calls>", f"{APRIEL_STEPS}\n", APRIEL_FINAL, APRIEL_END),
            markup=("<tool_calls>", APRIEL_FINAL, APRIEL_END, "<|assistant|>"),
        ),
        # Kimi K3 (XTML): Kimi's tiktoken vocabulary is not among the GGUFs; Llama 3's stands in. <|open|>, <|close|>
        # and <|sep|> are control tokens, as in the real vocabulary; each channel tag a turn writes (the think
        # channel's close, the response channel, the message's close) is added whole (_KIMI_K3_TAGS). Thinking on,
        # the prompt opens the think channel; off, the response channel. The message ends with <|end_of_msg|>.
        Family(
            "kimi-k3",
            "Kimi-K3.jinja",
            script=f"{THOUGHT}{''.join(_KIMI_K3_TAGS[:2])}{ANSWER}{''.join(_KIMI_K3_TAGS[2:])}<|end_of_msg|>",
            tokenizer="llama-bpe",
            bos="[BOS]",
            eos="[EOS]",
            end_of_turn=("<|end_of_msg|>",),
            special=("[BOS]", "[EOS]", "<|end_of_msg|>", "<|open|>", "<|close|>", "<|sep|>"),
            added=_KIMI_K3_TAGS,
            markup=("<|open|>", "<|sep|>", *_KIMI_K3_TAGS),
        ),
        # Solar Open 100B: its own vocabulary is not among the GGUFs; Llama 3's stands in, with Solar's control
        # tokens. The prompt ends with the next message's header ("<|begin|>assistant"); the model reasons in a
        # <|think|> message, opens its reply message ("<|begin|>assistant<|content|>", added whole: "assistant" ends
        # every prompt) and ends the turn with <|flush|> (after calls, <|calls|>).
        Family(
            "solar-open",
            "upstage-Solar-Open-100B.jinja",
            script=f"<|think|>{THOUGHT}<|end|>{_SOLAR_REPLY}{ANSWER}<|flush|>",
            tokenizer="llama-bpe",
            bos=None,
            eos="<|flush|>",
            end_of_turn=("<|flush|>", "<|calls|>"),
            special=_SOLAR_SPECIAL,
            added=(_SOLAR_REPLY,),
            markup=("<|think|>", "<|tool_calls|>", "<|tool_call:begin|>", _SOLAR_REPLY),
        ),
        # Onyx (OVMS's ATEM test template): its vocabulary is not known here; Llama 3's stands in, with harmony-like
        # control tokens. The prompt ends with the header's "assistant"; the model reasons in a message to itself,
        # then answers in a message to the user, whose header (after <|start|>) is added whole: "assistant" ends
        # every prompt.
        Family(
            "onyx",
            "ovms-chat_template_onyx.jinja",
            script=f" to=self<|message|>{THOUGHT}<|eom|><|start|>{_ONYX_REPLY}{ANSWER}<|eot|>",
            tokenizer="llama-bpe",
            bos=None,
            eos="<|eot|>",
            end_of_turn=("<|eot|>",),
            special=("<|start|>", "<|message|>", "<|eom|>", "<|eot|>"),
            added=(_ONYX_REPLY,),
            markup=("<|message|>", "<|eom|>", _ONYX_REPLY),
        ),
    ]
}


def tokenizer_sources() -> set[str]:
    """The GGUF tokenizers the families use."""
    return {family.tokenizer for family in FAMILIES.values()}

"""The agent recipe's corpus (tools/model_builder/agent_corpus.py): the wide pool of tool and parameter names, and
nothing of the held-out split in it.

The held-out scores mean something only while no held-out topic, place, person or company is ever trained on:
made-up words can spell some of them ("Porto", "Rossi", "Tom Baker"), so this generates a corpus and looks.
"""

from __future__ import annotations

import hashlib
import json
import random
import re

from tools.model_builder import agent_corpus as ac
from tools.model_builder import agent_eval

EXAMPLES = 4000
# The scorer's cases as recorded with the scores in the issue and model cards: the wide pool must not move them.
CASES_SHA256 = "a091da17e73a3b8fab7b9bd7c60075be9b639d61a842ce47c6eccb73455c585d"


def _plain() -> tuple[str, str, str]:
    return "Hello!", "Hi, how can I help?", "A greeting."


def _held_out_pattern() -> re.Pattern[str]:
    """Any held-out phrase as a whole word, its words joined by a space or an underscore (tool names, JSON keys)."""
    phrases = [phrase for group in ac.HELD_OUT.values() for phrase in group]
    spelled = [r"[ _]".join(re.escape(word) for word in phrase.split()) for phrase in phrases]
    return re.compile(r"(?<![a-z])(" + "|".join(spelled) + r")(?![a-z])", re.I)


def test_no_held_out_topic_place_person_or_company_in_the_corpus() -> None:
    examples = ac.agent_examples(random.Random(7), EXAMPLES, _plain)
    pattern = _held_out_pattern()
    leaks = []
    for example in examples:
        text = json.dumps([example.messages, example.tools, example.completion])
        leaks += pattern.findall(text)
    assert not leaks, sorted(set(leaks))


def test_the_pattern_finds_what_it_looks_for() -> None:
    # The check above could pass by matching nothing: it must find each kind of held-out text.
    pattern = _held_out_pattern()
    for text in ('{"name": "get_air_quality"}', "The market cap of ACME", "in Porto?", "Tom Baker's team"):
        assert pattern.search(text), text
    assert not pattern.search("steam in Portofino")


def test_made_up_names_are_never_held_out_words() -> None:
    rng = random.Random(3)
    words = {word.lower() for _ in range(20000) for word in ac.made_up_name(rng, 2).split()}
    assert not words & ac.HELD_OUT_WORDS
    # ... which they could be without the check: the syllables spell some of them.
    assert {"porto", "rossi", "baker"} <= ac.HELD_OUT_WORDS


def test_two_thirds_of_training_topics_are_made_up_and_a_third_of_parameters_renamed() -> None:
    rng = random.Random(5)
    listed = set(ac.PLACE_TOPICS + ac.COMPANY_TOPICS + ac.PERSON_TOPICS)
    usual = set(ac.PLACE_PARAMS + ac.COMPANY_PARAMS + ac.PERSON_PARAMS)
    n = 3000
    tools = [ac.make_tool(rng, *ac.training_topic(rng), wide=True) for _ in range(n)]
    made_up = sum(tool.topic not in listed for tool in tools) / n
    renamed = sum(tool.param not in usual for tool in tools) / n
    assert abs(made_up - ac.GENERATED_TOPIC_SHARE) < 0.04, made_up
    # A renamed parameter is sometimes a usual name again? No: WIDE_PARAMS and made-up words are other names.
    assert abs(renamed - ac.RENAMED_PARAM_SHARE) < 0.04, renamed
    assert len({tool.name for tool in tools}) > 0.6 * n  # a wide pool: most names are seen once
    for tool in tools:
        schema = tool.definition["function"]["parameters"]
        assert list(schema["properties"]) == [tool.param] == schema["required"]
        assert tool.topic.replace(" ", "_") in tool.name


def test_the_scorer_cases_are_unchanged() -> None:
    cases = agent_eval.cases(40)
    digest = hashlib.sha256(json.dumps([case.as_json() for case in cases]).encode()).hexdigest()
    assert digest == CASES_SHA256

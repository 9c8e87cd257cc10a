"""Issue 29, item 8: every model call carries an output-token cap sized to its schema, and an
answer that the cap (or the model's own limit) cut off counts as its structured-output method
failing, so the next method is tried. The HTTP side — the cap in the request a server
receives, a looping model stopped at it — is in ``test_openai_http.py``."""

from __future__ import annotations

import json
import logging

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from scripted_model import (
    ScriptedChatModel,
    cut_off,
    entity,
    episode_tool_call,
    invalid_json_text,
    invalid_json_tool_call,
    memory,
    turn_json,
    turn_tool_call,
)

from langchain_tiered_memory import ConfigError, ExtractionCutOffError, ExtractionError, MemoryConfig
from langchain_tiered_memory.errors import InvalidInputError
from langchain_tiered_memory.extraction import LLMExtractor
from langchain_tiered_memory.extraction import caps
from langchain_tiered_memory.extraction.caps import MIN_CAP, answer_cap, compression_cap
from langchain_tiered_memory.extraction.structured import EPISODE_TOOL, TURN_TOOL
from langchain_tiered_memory.extraction.offline import ExtractiveSummaries
from langchain_tiered_memory.tokens import TiktokenCounter

TURN = [HumanMessage("My name is Alice and I prefer green tea."), AIMessage("Noted, Alice!")]
JAZZ = [memory("The user likes jazz.", "preference", 0.7)]
LONG_SUMMARY = "\n".join(f"user: point number {i} about the trip to Rome." for i in range(40))


@pytest.fixture(scope="module")
def counter():
    return TiktokenCounter()


def extractor(*script, counter=None, **kwargs):
    model = ScriptedChatModel(script=list(script))
    # As make_extractor builds it: the extractive summaries are its fallback.
    kwargs.setdefault("fallback", ExtractiveSummaries(counter=counter))
    return model, LLMExtractor(model, counter=counter, **kwargs)


# --- the cap ----------------------------------------------------------------------------


def test_every_call_carries_a_cap_sized_to_its_schema(counter):
    model, ex = extractor(
        turn_tool_call(memories=JAZZ),
        turn_tool_call(memories=JAZZ, summary="The user is Alice."),
        episode_tool_call("Talked about tea."),
        "The user plans a trip to Rome.",
        counter=counter,
    )
    ex.extract_turn(TURN)
    ex.extract_turn(TURN, summary="Earlier: tea.", evicted=TURN, summary_max_tokens=800)
    ex.extract_episode(TURN)
    ex.compress_summary(LONG_SUMMARY, 50)
    sent = [kwargs["max_tokens"] for kwargs in model.call_kwargs]
    assert sent == [
        answer_cap(TURN_TOOL, counter),
        answer_cap(TURN_TOOL, counter, summary_tokens=800),
        answer_cap(EPISODE_TOOL, counter),
        compression_cap(50),
    ]
    turn, with_summary, episode, compression = sent
    # About one screen of JSON for a turn; a requested summary adds its budget (models
    # overshoot it a little); an episode asks for less; a short rewrite gets the floor.
    assert 1_000 < turn < 3_000
    assert with_summary >= turn + 800 * caps.SUMMARY_OVERSHOOT - 1
    assert MIN_CAP < episode < turn
    assert compression == MIN_CAP


def test_a_generous_real_answer_fits_under_the_default_cap(counter):
    # More than a turn ever yields: 8 entities with 4 attributes each, 10 memories, pretty-printed.
    answer = {
        "entities": [
            {"name": f"Dorota Kowalska {i}", "type": "person", "attributes": [
                {"key": "relation_to_user", "value": "sister"}, {"key": "location", "value": "Porto, Portugal"},
                {"key": "job", "value": "paediatric nurse"}, {"key": "likes", "value": "green tea and jazz"},
            ]}
            for i in range(8)
        ],
        "memories": [
            {"content": f"The user's sister Dorota moved to Porto in {2010 + i} to work night shifts as a "
                        "paediatric nurse at the children's hospital.", "memory_type": "fact", "importance": 0.7}
            for i in range(10)
        ],
        "summary": None,
    }
    assert counter.count_text(json.dumps(answer, indent=2)) < answer_cap(TURN_TOOL, counter)


def test_a_fixed_cap_replaces_the_sizing(counter):
    model, ex = extractor(turn_tool_call(memories=JAZZ), episode_tool_call("Tea."), "Short.",
                          counter=counter, max_output_tokens=500)
    ex.extract_turn(TURN)
    ex.extract_episode(TURN)
    ex.compress_summary(LONG_SUMMARY, 50)
    assert [kwargs["max_tokens"] for kwargs in model.call_kwargs] == [500, 500, 500]


def test_the_memory_config_sets_the_cap(tmp_path):
    from langchain_tiered_memory import TieredMemory

    model = ScriptedChatModel(default=turn_tool_call(memories=JAZZ))
    config = MemoryConfig(llm_max_output_tokens=700, job_mode="inline", job_backoff_seconds=0.0)
    with TieredMemory(tmp_path / "m", config, model=model) as memory:
        memory.after_turn("alice", "t1", TURN)
        assert memory.flush(timeout=30)
    assert model.calls >= 1 and all(kwargs["max_tokens"] == 700 for kwargs in model.call_kwargs)


@pytest.mark.parametrize("bad", [0, -5, True, 1.5, "100"])
def test_a_cap_must_be_a_positive_whole_number(bad):
    with pytest.raises(InvalidInputError, match="max_output_tokens"):
        LLMExtractor(ScriptedChatModel(), max_output_tokens=bad)


@pytest.mark.parametrize("bad", [0, -5, 1.5, "many", 2_000_000_000])
def test_the_config_refuses_a_cap_that_is_no_token_count(bad):
    with pytest.raises(ConfigError, match="llm_max_output_tokens"):
        MemoryConfig(llm_max_output_tokens=bad)


class _Recording(BaseChatModel):
    """A model without a ``max_tokens`` field, that keeps the keyword arguments of each call."""

    answer: str
    seen: list = []

    @property
    def _llm_type(self) -> str:
        return "recording"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        self.seen.append(kwargs)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(self.answer))])


def test_a_model_without_a_max_tokens_field_is_sent_no_cap():
    # Its integration may not take the keyword (ChatOllama's limit is num_predict): passing
    # it could break every call, so its own limit applies.
    model = _Recording(answer=turn_json(memories=JAZZ))
    LLMExtractor(model).extract_turn(TURN)
    assert model.seen == [{}]
    assert not caps.takes_cap(model) and caps.takes_cap(ScriptedChatModel())


# --- a cut-off answer -------------------------------------------------------------------


@pytest.mark.parametrize(
    "metadata",
    [{"finish_reason": "length"}, {"finish_reason": "MAX_TOKENS"}, {"stop_reason": "max_tokens"},
     {"stopReason": "max_tokens"}, {"done_reason": "length"}],
    ids=["openai", "gemini", "anthropic", "bedrock", "ollama"],
)
def test_each_providers_cut_off_is_recognised(metadata):
    assert caps.cut_off(AIMessage("{", response_metadata=metadata))


@pytest.mark.parametrize(
    "message",
    [AIMessage("{}", response_metadata={"finish_reason": "stop"}), turn_tool_call(), AIMessage("{}"), {"x": 1}],
    ids=["stop", "tool-call", "no-metadata", "not-a-message"],
)
def test_a_finished_answer_is_not_a_cut_off(message):
    assert not caps.cut_off(message)


def test_a_cut_off_tool_call_is_not_stored_and_the_next_method_answers(counter):
    # The cut left parseable arguments, but whatever came after them is missing.
    model, ex = extractor(
        cut_off(turn_tool_call(memories=[memory("The user likes jazz.")])),
        turn_json(memories=[memory("The user likes jazz and blues.", "preference", 0.7)]),
        counter=counter,
    )
    result = ex.extract_turn(TURN)
    assert result.method == "text"
    assert [m.content for m in result.memories] == ["The user likes jazz and blues."]
    assert model.calls == 2 and "tools" in model.call_kwargs[0] and "tools" not in model.call_kwargs[1]
    cap = answer_cap(TURN_TOOL, counter)
    assert [kwargs["max_tokens"] for kwargs in model.call_kwargs] == [cap, cap]


def test_a_truncated_tool_call_falls_back_instead_of_failing_the_job():
    # Invalid JSON arguments alone are the model's slip, and the job retries
    # (test_extraction.py::test_invalid_json_arguments); cut off, they are the method failing.
    model, ex = extractor(cut_off(invalid_json_tool_call()), turn_json(entities=[entity("Alice", "person")]))
    result = ex.extract_turn(TURN)
    assert result.method == "text" and [e.name for e in result.entities] == ["Alice"]


def test_truncated_json_text_falls_back_and_what_worked_is_remembered():
    model, ex = extractor(cut_off(invalid_json_text()), turn_json(memories=JAZZ), turn_json(memories=JAZZ))
    assert ex.extract_turn(TURN).method == "text"
    assert ex.extract_turn(TURN).method == "text"
    assert model.calls == 3 and "tools" not in model.call_kwargs[2]  # straight to text


def test_cut_off_by_every_method_is_a_cut_off_error_saying_what_to_raise(caplog):
    model, ex = extractor(cut_off(turn_tool_call(memories=JAZZ)), cut_off(invalid_json_text()))
    with caplog.at_level(logging.INFO, logger="langchain_tiered_memory"):
        with pytest.raises(ExtractionCutOffError) as info:
            ex.extract_turn(TURN)
    message = str(info.value)
    assert isinstance(info.value, ExtractionError)  # the job retries it like any other
    assert "function_calling: the answer was cut off" in message and "text: the answer was cut off" in message
    assert "llm_max_output_tokens" in message
    assert "cut off at the output limit" in caplog.text  # the fallback was logged


def test_a_cut_off_episode_falls_back_too():
    full = '{"summary": "Talked about tea.", "decisions": [], "outcome": "Bye.", "topics": ["tea"]}'
    model, ex = extractor(cut_off(episode_tool_call("Talked about")), full)
    episode = ex.extract_episode(TURN)
    assert episode.summary == "Talked about tea." and episode.method == "text"


def test_a_cut_off_compression_is_cut_extractively_instead(counter, caplog):
    model, ex = extractor(cut_off("The user plans a trip to"), counter=counter)
    with caplog.at_level(logging.WARNING, logger="langchain_tiered_memory"):
        out = ex.compress_summary(LONG_SUMMARY, 50)
    assert "point number" in out and 0 < counter.count_text(out) <= 50
    assert "cut off at the output limit" in caplog.text


def test_the_error_names_an_earlier_cut_off_when_the_last_method_fails_otherwise():
    # As SmolLM2-135M does: cut off under one method, prose under the next. The job's recorded
    # reason must say both, or an operator sees only "no JSON object".
    model, ex = extractor(cut_off(turn_tool_call(memories=JAZZ)), "I'm sorry, I can't help with that.")
    with pytest.raises(ExtractionError) as info:
        ex.extract_turn(TURN)
    message = str(info.value)
    assert not isinstance(info.value, ExtractionCutOffError)
    assert "function_calling: the answer was cut off at the output limit" in message
    assert "text: no JSON object" in message


class LengthFinishReasonError(Exception):
    """Named as the OpenAI SDK's: ChatOpenAI raises it for a json_schema answer cut off."""


def test_a_cut_off_the_sdk_raises_falls_back_like_a_cut_off_answer():
    model, ex = extractor(LengthFinishReasonError("length limit reached"), turn_json(memories=JAZZ))
    result = ex.extract_turn(TURN)
    assert result.method == "text" and model.calls == 2
    wrapped = ExtractionError("turn extraction: failed")
    wrapped.__cause__ = LengthFinishReasonError()
    assert caps.cut_off_error(wrapped) and not caps.cut_off_error(ExtractionError("x"))

"""The output-token cap of each model call, and how a cut-off answer is recognised.

Without a cap, a model that loops — a small one under a grammar-constrained JSON schema
repeats itself inside a string ("User:User:…") — generates until its context is full:
SmolLM2-135M wrote 3,493 tokens (78 s on 2 cores) for one turn, and the job failed anyway. Every extraction, episode
and compression call therefore carries ``max_tokens``, sized to what a generous answer of
its schema spends (:func:`answer_cap`), or fixed by ``MemoryConfig.llm_max_output_tokens``.

A cap that stops an answer leaves it cut off: :func:`cut_off` reads that from the message's
metadata (OpenAI's ``finish_reason == "length"`` and its equivalents), and
:func:`cut_off_error` from the error an SDK raises instead of returning it (the OpenAI
SDK's ``LengthFinishReasonError``, which ``ChatOpenAI`` meets under ``json_schema``). The
extractor counts a cut-off answer as that structured-output method failing and tries the
next one — even when the cut happens to leave parseable JSON: a truncated answer is
retried, never half stored.

The cap is sent only to models with a ``max_tokens`` field (``ChatOpenAI`` and every
OpenAI-compatible server behind it, ``ChatAnthropic``, Mistral, Groq …), whose integrations
take it per call; for others (``ChatOllama``'s ``num_predict``) set the model's own limit.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage
from langchain_core.runnables import Runnable

from ..tokens import TokenCounter

__all__ = [
    "CUT_OFF_ERRORS",
    "CUT_OFF_REASONS",
    "ITEMS",
    "MIN_CAP",
    "PARAGRAPH_TOKENS",
    "SENTENCE_TOKENS",
    "SUMMARY_OVERSHOOT",
    "WORD_TOKENS",
    "answer_cap",
    "compression_cap",
    "cut_off",
    "cut_off_error",
    "takes_cap",
    "with_output_cap",
]

# What a generous answer spends. A turn names a few entities and states a few facts (the
# prompt asks for stable facts, not a transcript); these counts are well above what real
# turns need, so a genuine answer is never cut, while a model that loops is stopped after
# about one screen of JSON instead of at the end of its context.
#: Items per array: top level (entities, memories, decisions, topics), then nested (attributes).
ITEMS = (10, 4)
#: A statement: a memory's content, a decision, an episode's outcome.
SENTENCE_TOKENS = 32
#: An episode's summary: "what happened, in a few sentences".
PARAGRAPH_TOKENS = 160
#: Any other string: a name, an attribute key or value, a topic keyword.
WORD_TOKENS = 4
#: The string fields that hold more than words, by name (the schemas are ours: structured.py).
_LENGTHS: Mapping[str, int] = {
    "content": SENTENCE_TOKENS,
    "decisions": SENTENCE_TOKENS,
    "outcome": SENTENCE_TOKENS,
    "summary": PARAGRAPH_TOKENS,
}
#: Models overshoot "keep it under N tokens": a requested summary may run this much longer.
SUMMARY_OVERSHOOT = 1.25
#: No call is capped below this: a prompt that asks for little still gets room to answer.
MIN_CAP = 256
#: Metadata values by which integrations say the output limit stopped the answer.
CUT_OFF_REASONS: Mapping[str, frozenset[str]] = {
    "finish_reason": frozenset({"length", "max_tokens", "MAX_TOKENS"}),  # OpenAI & co., Gemini
    "stop_reason": frozenset({"max_tokens"}),  # Anthropic
    "stopReason": frozenset({"max_tokens"}),  # Bedrock Converse
    "done_reason": frozenset({"length"}),  # Ollama
}
#: Errors by which an SDK reports a cut-off answer instead of returning it, by class name
#: (no SDK is imported for it): the OpenAI SDK parses json_schema answers, and raises this
#: for one whose finish_reason is "length".
CUT_OFF_ERRORS = frozenset({"LengthFinishReasonError"})


def _words(n: int) -> str:
    return " ".join(["word"] * n)  # one cl100k token per word


def _sample(node: Mapping[str, Any], field: str, depth: int, summary_tokens: int) -> Any:
    kind = node.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind}
    if "object" in kinds:
        props: Mapping[str, Any] = node.get("properties") or {}
        return {key: _sample(sub, key, depth, summary_tokens) for key, sub in props.items()}
    if "array" in kinds:
        item = _sample(node.get("items") or {}, field, depth + 1, summary_tokens)
        return [item] * ITEMS[min(depth, len(ITEMS) - 1)]
    if "enum" in node:
        return max((str(v) for v in node["enum"]), key=len)
    if "string" in kinds:
        if field == "summary" and "null" in kinds:
            # The turn's running summary: null unless asked for, then its budget.
            return _words(math.ceil(summary_tokens * SUMMARY_OVERSHOOT)) if summary_tokens else None
        return _words(_LENGTHS.get(field, WORD_TOKENS))
    return 0.75  # a number (importance), as a model writes it


def answer_cap(tool: Mapping[str, Any], counter: TokenCounter, *, summary_tokens: int = 0) -> int:
    """The output tokens a generous answer to ``tool`` (an OpenAI function schema) spends.

    A sample answer is built from the schema — :data:`ITEMS` per array, each string as long
    as its field holds (:data:`SENTENCE_TOKENS`, :data:`PARAGRAPH_TOKENS`,
    :data:`WORD_TOKENS`), the turn's ``summary`` null unless ``summary_tokens`` asks for one,
    which then gets that budget plus :data:`SUMMARY_OVERSHOOT` — pretty-printed as models
    write it, and counted with ``counter``. A ``<think>`` block before the JSON gets no room
    of its own: a reasoning model needs ``MemoryConfig.llm_max_output_tokens`` raised.
    """
    sample = _sample(tool.get("parameters") or {}, "", 0, summary_tokens)
    return max(MIN_CAP, counter.count_text(json.dumps(sample, indent=2)))


def compression_cap(max_tokens: int) -> int:
    """The cap of a call asked to rewrite a summary under ``max_tokens`` tokens."""
    return max(MIN_CAP, math.ceil(max_tokens * SUMMARY_OVERSHOOT))


def takes_cap(model: BaseChatModel) -> bool:
    """Whether ``model``'s integration takes ``max_tokens`` per call (module doc)."""
    return "max_tokens" in getattr(type(model), "model_fields", {})


def with_output_cap(runnable: Runnable[Any, Any], model: BaseChatModel, cap: int | None) -> Runnable[Any, Any]:
    """``runnable`` sending ``max_tokens=cap``, where ``model`` takes it and a cap is set."""
    if cap is None or not takes_cap(model):
        return runnable
    return runnable.bind(max_tokens=cap)


def cut_off(message: Any) -> bool:
    """Whether ``message`` says the output limit stopped it (see :data:`CUT_OFF_REASONS`)."""
    if not isinstance(message, BaseMessage):
        return False
    meta = message.response_metadata or {}
    return any(meta.get(key) in values for key, values in CUT_OFF_REASONS.items())


def cut_off_error(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or what caused it) is an SDK saying the answer was cut off."""
    for _ in range(5):
        if exc is None:
            return False
        if type(exc).__name__ in CUT_OFF_ERRORS:
            return True
        exc = exc.__cause__ or exc.__context__
    return False

"""The :class:`Extractor` over any chat model: one structured call per turn.

The seed design spent three LLM calls a turn (summary, entities, importance). Here one call
returns a :class:`~langchain_tiered_memory.extraction.schema.TurnExtraction`; the running
summary is asked for only when messages left the window (``evicted``), so most turns ask for
less. How the model is asked — a strict JSON schema, a tool call, or JSON in text — is chosen
per model and remembered (:mod:`~langchain_tiered_memory.extraction.structured`); each call
is bounded in time without leaving threads behind
(:mod:`~langchain_tiered_memory.extraction.calls`) and in output tokens
(:mod:`~langchain_tiered_memory.extraction.caps`: a cut-off answer counts as its method
failing, and the next method is tried); the answer is read tolerantly
(:mod:`~langchain_tiered_memory.extraction.parsing`) and validated item by item, the
unusable items recorded in the result's ``dropped``.

Errors: a provider error or an answer of the wrong overall shape raises
:class:`~langchain_tiered_memory.errors.ExtractionError` (``__cause__`` is the original), a
call past ``timeout`` :class:`~langchain_tiered_memory.errors.ExtractionTimeoutError`; the
job that called retries. The summary is never lost to the model: with a ``fallback``
(:class:`SummaryFallback`; :func:`~langchain_tiered_memory.extraction.make_extractor` hands
in the offline package's extractive summaries) a missing one is folded in extractively and
a compression that fails is cut extractively; without one, both raise
:class:`~langchain_tiered_memory.errors.ExtractionError` and the job retries. This module
does not import the offline package: the fallback is handed in, so the model path and the
offline rules stay two boxes with no arrow between them.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Sequence
from typing import Any, Literal, Protocol, TypeVar

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from pydantic import BaseModel

from ..errors import ExtractionCutOffError, ExtractionError, ExtractionTimeoutError, InvalidInputError
from ..fence import quote
from ..tokens import TiktokenCounter, TokenCounter
from ..llm.usage import note_method
from .calls import call_with_timeout, with_request_timeout
from .caps import answer_cap, compression_cap, cut_off, cut_off_error, with_output_cap
from .messages import render_messages
from .parsing import check_size, read_message, strip_reasoning, validate_payload
from .prompts import Prompts
from .arguments import check_messages, check_names, check_summary, check_tokens
from .schema import EpisodeExtraction, ExtractionMethod, TurnExtraction
from .structured import (
    AUTO_METHODS,
    EPISODE_TOOL,
    TURN_TOOL,
    StructuredMethod,
    bound_for,
    model_id,
    model_key,
    rejects_method,
    remember_method,
    remembered_method,
    supports,
)

__all__ = [
    "DEFAULT_MAX_MESSAGE_TOKENS",
    "DEFAULT_TIMEOUT",
    "LLMExtractor",
    "SummaryFallback",
]

logger = logging.getLogger("langchain_tiered_memory")

DEFAULT_TIMEOUT = 60.0
#: Each message is cut (middle out) to this many tokens in the extraction prompt, so that
#: one pasted document cannot crowd out the turn.
DEFAULT_MAX_MESSAGE_TOKENS = 4_000
#: Known entity names listed in the prompt, at most (each cut to 100 characters).
MAX_KNOWN_ENTITIES = 200

_M = TypeVar("_M", bound=BaseModel)
_CODE_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)```", re.S)
MethodChoice = Literal["auto", "json_schema", "function_calling", "json_mode", "text"]


class SummaryFallback(Protocol):
    """What :class:`LLMExtractor` falls back on when a model's answer leaves the running
    summary unusable: the offline package's
    :class:`~langchain_tiered_memory.extraction.offline.ExtractiveSummaries` (or the whole
    :class:`~langchain_tiered_memory.extraction.offline.OfflineExtractor`) fits."""

    def fold_summary(self, evicted: Sequence[BaseMessage], *, previous: str | None, max_tokens: int) -> str:
        """``previous`` with ``evicted`` folded in, within ``max_tokens`` (no model call)."""
        ...

    def compress_summary(self, summary: str, max_tokens: int) -> str:
        """``summary`` cut to at most ``max_tokens`` tokens (no model call)."""
        ...


def _known_block(names: Sequence[str]) -> str:
    if not names:
        return "(none)"
    return "\n".join(f"- {quote(n[:100])}" for n in names[:MAX_KNOWN_ENTITIES])


def _has_tool_call(message: Any) -> bool:
    return isinstance(message, AIMessage) and bool(message.tool_calls or message.invalid_tool_calls)


class LLMExtractor:
    """The :class:`Extractor` over any chat model: one structured call per turn.

    ``method="auto"`` (the default) picks the structured-output method the model's server
    supports and remembers it (see :mod:`~langchain_tiered_memory.extraction.structured`);
    ``"json_schema"``, ``"function_calling"``, ``"json_mode"`` or ``"text"`` force one
    (``"text"``: the JSON prompt and the tolerant parser, even for a model with tools).
    ``timeout`` bounds each model call in seconds, and is sent to the provider as its
    request timeout where its SDK takes one. ``max_output_tokens`` caps each call's answer
    (``max_tokens``); ``None`` sizes the cap to each call's schema
    (:func:`~langchain_tiered_memory.extraction.caps.answer_cap`). ``fallback`` folds and
    cuts the summary when the model's answer cannot (see the module doc); build with
    :func:`~langchain_tiered_memory.extraction.make_extractor` to get the extractive one.
    """

    offline = False

    def __init__(
        self,
        model: BaseChatModel,
        *,
        prompts: Prompts | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        counter: TokenCounter | None = None,
        method: MethodChoice = "auto",
        max_message_tokens: int = DEFAULT_MAX_MESSAGE_TOKENS,
        max_output_tokens: int | None = None,
        fallback: SummaryFallback | None = None,
    ) -> None:
        if not isinstance(model, BaseChatModel):
            raise InvalidInputError(f"model must be a langchain BaseChatModel, got {type(model).__name__}")
        if prompts is not None and not isinstance(prompts, Prompts):
            raise InvalidInputError(f"prompts must be a Prompts, got {type(prompts).__name__}")
        if (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidInputError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if method not in ("auto", *AUTO_METHODS, "json_mode"):
            raise InvalidInputError(
                f"unknown structured-output method {method!r}; use auto, json_schema, "
                "function_calling, json_mode or text"
            )
        if counter is not None and not isinstance(counter, TokenCounter):
            raise InvalidInputError(f"counter must be a TokenCounter, got {type(counter).__name__}")
        if fallback is not None and not (
            callable(getattr(fallback, "fold_summary", None)) and callable(getattr(fallback, "compress_summary", None))
        ):
            raise InvalidInputError(
                f"fallback must have fold_summary and compress_summary (a SummaryFallback), got {type(fallback).__name__}"
            )
        self.model = model
        self.fallback = fallback
        self.prompts = prompts or Prompts()
        self.timeout = float(timeout)
        self.max_message_tokens = check_tokens(max_message_tokens, "max_message_tokens")
        if max_output_tokens is not None and not check_tokens(max_output_tokens, "max_output_tokens"):
            raise InvalidInputError("max_output_tokens must be positive (None: sized to each call's schema)")
        self.max_output_tokens = max_output_tokens
        self.name = f"llm:{type(model).__name__}:{model_id(model)}"
        self._forced: StructuredMethod | None = None if method == "auto" else method
        self._key = model_key(model)
        # A model without a name is known only by its instance, whose id() a later model may
        # reuse: what worked for it is kept on this extractor, not in the process-wide memo.
        self._shared = model_id(model) != "?"
        self._learned: StructuredMethod | None = None
        self._counter = counter
        self._runnables: dict[tuple[str, str], Any] = {}

    @property
    def counter(self) -> TokenCounter:
        """The token counter (tiktoken ``cl100k_base`` unless one was given)."""
        if self._counter is None:
            self._counter = TiktokenCounter()
        return self._counter

    @property
    def structured(self) -> bool:
        """Whether the model is asked for structured output (else JSON in text)."""
        return self.method != "text"

    @property
    def method(self) -> StructuredMethod:
        """The method the next call starts with: forced, remembered, or the first offered."""
        return self._methods()[0]

    def _methods(self) -> list[StructuredMethod]:
        if self._forced is not None:
            return [self._forced]
        offered = [m for m in AUTO_METHODS if supports(self.model, m) and self._runnable(TURN_TOOL, m) is not None]
        known = remembered_method(self._key) if self._shared else self._learned
        # What worked before comes first; only the methods after it are fallbacks.
        return offered[offered.index(known) :] if known in offered else offered

    def _runnable(self, tool: dict[str, Any], method: StructuredMethod) -> Any:
        key = (tool["name"], method)
        if key not in self._runnables:
            bound = bound_for(self.model, tool, method)
            self._runnables[key] = None if bound is None else with_request_timeout(bound, self.model, self.timeout)
        return self._runnables[key]

    # -- calls

    def _cap(self, sized: int) -> int:
        """The output cap of a call whose schema sizes it at ``sized``, unless one is fixed."""
        return self.max_output_tokens if self.max_output_tokens is not None else sized

    def _call(self, runnable: Any, prompt: list[BaseMessage], what: str, method: str, cap: int) -> Any:
        # A run of its own in a tracer, under the job's run (its tags and metadata, see usage.py).
        config: RunnableConfig = {
            "run_name": f"tiered-memory {what}",
            "metadata": {"structured_output_method": method, "max_output_tokens": cap},
        }
        capped = with_output_cap(runnable, self.model, cap)
        return call_with_timeout(
            lambda: capped.invoke(prompt, config), timeout=self.timeout, key=self._key, label=self.name, what=what
        )

    def _read(self, out: Any, schema: type[_M], tool: dict[str, Any], what: str) -> tuple[_M, str]:
        context = {"counter": self.counter}
        if isinstance(out, BaseModel) and not isinstance(out, BaseMessage):
            out = out.model_dump()  # an integration that parsed the answer itself
        if isinstance(out, dict):
            return validate_payload(out, schema, what=what, context=context), "tool"
        return read_message(out, schema, what, name=tool["name"], context=context)

    def _ask(
        self, tool: dict[str, Any], schema: type[_M], system: str, json_hint: str, user: str, what: str, cap: int
    ) -> _M:
        """The answer to one extraction question, trying the methods in turn (module doc),
        each call capped at ``cap`` output tokens."""
        methods = self._methods()
        failures: list[str] = []
        for n, method in enumerate(methods):
            last = n == len(methods) - 1
            runnable = self._runnable(tool, method)
            if runnable is None:
                failures.append(f"{method}: not offered by {type(self.model).__name__}")
                continue
            hint = json_hint if method in ("text", "json_mode") else ""
            prompt: list[BaseMessage] = [SystemMessage(system + hint), HumanMessage(user)]
            out: Any = None
            try:
                out = self._call(runnable, prompt, what, method, cap)
            except ExtractionTimeoutError:
                raise
            except ExtractionError as exc:
                if not cut_off_error(exc):  # a cut-off raised by the SDK is handled below
                    if last or not rejects_method(exc.__cause__):
                        raise
                    failures.append(f"{method}: {exc}")
                    logger.info("%s: the server refused %s (%s); trying %s", self.name, method, exc, methods[n + 1])
                    continue
                out = None
            if out is None or cut_off(out):
                # Stopped by the cap (or the model's own limit): even where the cut leaves
                # parseable JSON, the rest is missing. The method failed; a truncated answer
                # is retried, never half stored.
                reason = f"{method}: the answer was cut off at the output limit (max_tokens {cap})"
                failures.append(reason)
                if last:
                    break
                logger.info("%s: %s; trying %s", self.name, reason, methods[n + 1])
                continue
            try:
                result, source = self._read(out, schema, tool, what)
            except ExtractionError as exc:
                # A malformed tool call is the model's slip, not the method's: the job retries.
                if method == "function_calling" and _has_tool_call(out):
                    raise
                if last:
                    if not failures:
                        raise
                    # The earlier methods' failures (a cut-off, a refusal) belong in the error too.
                    failures.append(f"{method}: " + str(exc).removeprefix(f"{what}: "))
                    raise ExtractionError(
                        f"{what}: no way of asking {self.name} worked: " + "; ".join(failures)
                    ) from exc.__cause__
                failures.append(f"{method}: {exc}")
                logger.info("%s: %s gave no structured answer; trying %s", self.name, method, methods[n + 1])
                continue
            used: StructuredMethod = method
            if source == "tool" and method in ("json_schema", "json_mode"):
                used = "function_calling"  # the integration bound tools for this method
            elif source == "text" and method == "function_calling":
                used = "text"  # the server ignored the tool: ask for text next time
            note_method(used)
            if self._forced is None:
                self._learned = used
                if self._shared:
                    remember_method(self._key, used)
            recorded: ExtractionMethod = used
            return result.model_copy(update={"method": recorded})
        advice = (
            f"; method={self._forced!r} was forced: pass method='auto' to let the extractor choose"
            if self._forced is not None
            else ""
        )
        message = f"{what}: no way of asking {self.name} worked: " + "; ".join(failures) + advice
        if failures and "cut off" in failures[-1]:
            raise ExtractionCutOffError(
                message + "; the job retries. If the model was not looping, raise "
                "MemoryConfig.llm_max_output_tokens (a reasoning model's thinking counts against it)"
            )
        raise ExtractionError(message)

    def _render(self, messages: Sequence[BaseMessage]) -> str:
        return render_messages(messages, counter=self.counter, max_message_tokens=self.max_message_tokens)

    # -- the Extractor protocol

    def extract_turn(
        self,
        messages: Sequence[BaseMessage],
        *,
        summary: str | None = None,
        evicted: Sequence[BaseMessage] = (),
        known_entities: Sequence[str] = (),
        summary_max_tokens: int = 2000,
    ) -> TurnExtraction:
        """Entities, memories and (with ``evicted``) the new summary, in one model call.

        No call is made when there are neither messages nor evicted messages. Unusable items
        are left out and listed in ``dropped``; raises :class:`ExtractionError` (or
        :class:`ExtractionTimeoutError`) when the answer as a whole cannot be used.
        """
        turn = check_messages(messages, "messages")
        gone = check_messages(evicted, "evicted")
        summary = check_summary(summary)
        known = check_names(known_entities)
        budget = check_tokens(summary_max_tokens, "summary_max_tokens")
        if not turn and not gone:
            return TurnExtraction()
        p = self.prompts
        user = p.render("turn_user", known_entities=_known_block(known), conversation=self._render(turn))
        if gone:
            user += p.render(
                "turn_summary",
                summary=quote(summary) if summary and summary.strip() else "(empty)",
                evicted=self._render(gone),
                max_tokens=budget,
            )
        else:
            user += p.render("turn_no_summary")
        cap = self._cap(answer_cap(TURN_TOOL, self.counter, summary_tokens=budget if gone else 0))
        result = self._ask(TURN_TOOL, TurnExtraction, p.turn_system, p.json_turn, user, "turn extraction", cap)
        if not gone:
            return result.model_copy(update={"summary": None}) if result.summary else result
        if not result.summary:
            if self.fallback is None:
                raise ExtractionError(
                    f"turn extraction: {self.name} returned no summary although messages were evicted; "
                    "the job retries (build the extractor with make_extractor, or pass fallback=, to "
                    "fold them in extractively instead)"
                )
            logger.warning(
                "%s returned no summary although messages were evicted; folding them in extractively",
                self.name,
            )
            folded = self.fallback.fold_summary(gone, previous=summary, max_tokens=budget)
            return result.model_copy(update={"summary": folded or summary})
        return result

    def extract_episode(self, messages: Sequence[BaseMessage]) -> EpisodeExtraction:
        """A record of a finished conversation, in one model call."""
        turn = check_messages(messages, "messages")
        if not turn:
            raise InvalidInputError("extract_episode needs at least one message")
        p = self.prompts
        user = p.render("episode_user", conversation=self._render(turn))
        cap = self._cap(answer_cap(EPISODE_TOOL, self.counter))
        return self._ask(
            EPISODE_TOOL, EpisodeExtraction, p.episode_system, p.json_episode, user, "episode extraction", cap
        )

    def compress_summary(self, summary: str, max_tokens: int) -> str:
        """``summary`` under ``max_tokens``: a model rewrite, cut extractively if still over.

        A summary already within budget is returned unchanged, without a call. When the
        model's answer is unusable (an error, a timeout, an empty text, a text cut off at the
        output cap) the summary is cut extractively instead: the turn's extraction is not
        lost over its summary.
        """
        if not isinstance(summary, str):
            raise InvalidInputError(f"summary must be a str, got {type(summary).__name__}")
        budget = check_tokens(max_tokens, "max_tokens")
        if self.counter.count_text(summary) <= budget:
            return summary
        if budget == 0:
            return ""
        p = self.prompts
        prompt: list[BaseMessage] = [
            SystemMessage(p.render("compress_system", max_tokens=budget)),
            HumanMessage(p.render("compress_user", summary=quote(summary), max_tokens=budget)),
        ]
        text = ""
        cap = self._cap(compression_cap(budget))
        try:
            answer = self._call(self._runnable(TURN_TOOL, "text"), prompt, "summary compression", "text", cap)
            if cut_off(answer):
                # A rewrite stopped mid-sentence would lose its end silently.
                raise ExtractionError(f"the rewrite was cut off at the output limit (max_tokens {cap})")
            if isinstance(answer, BaseMessage):
                check_size(answer.text, "summary compression: the answer")
                text = strip_reasoning(answer.text).strip()
                fenced = _CODE_FENCE.fullmatch(text)
                text = fenced.group(1).strip() if fenced else text
            reason = "an empty summary" if not text else ""
        except ExtractionError as exc:
            reason = str(exc)
        if not text:
            if self.fallback is None:
                raise ExtractionError(
                    f"summary compression by {self.name} failed ({reason}); the job retries (build the "
                    "extractor with make_extractor, or pass fallback=, to cut it extractively instead)"
                )
            logger.warning("summary compression by %s failed (%s); cutting the summary extractively", self.name, reason)
            return self.fallback.compress_summary(summary, budget)
        if self.counter.count_text(text) > budget:
            # Still over: cut by salience when there is a fallback, else at the budget.
            if self.fallback is None:
                return self.counter.truncate_text(text, budget)
            text = self.fallback.compress_summary(text, budget)
        return text

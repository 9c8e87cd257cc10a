"""The one place extractors are built: the model the environment configures, and the choice
between the LLM extractor and the offline rules.

It is here, not in :mod:`.llm`, because it needs both boxes: it hands the LLM extractor
the offline package's extractive summaries as its fallback, so that :mod:`.llm` imports
nothing of :mod:`.offline`.
"""

from __future__ import annotations

import logging

from langchain_core.language_models import BaseChatModel

from ..errors import InvalidInputError
from ..tokens import TokenCounter
from .llm import DEFAULT_TIMEOUT, LLMExtractor
from .offline import ExtractiveSummaries, OfflineExtractor
from .prompts import Prompts
from .protocol import Extractor

__all__ = ["default_model", "make_extractor"]

logger = logging.getLogger("langchain_tiered_memory")


def default_model(*, timeout: float | None = None, max_retries: int = 0) -> BaseChatModel | None:
    """The chat model the environment configures (:class:`~langchain_tiered_memory.llm.settings.ModelSettings`),
    or ``None``: ``ChatOpenAI`` on ``OPENAI_BASE_URL`` (any OpenAI-compatible server, e.g. a
    local llama.cpp, Ollama or vLLM) with the model named by ``TIERED_MEMORY_MODEL``
    (default ``gpt-4o-mini``), when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set.

    ``timeout`` is the client's request timeout (default 60 s) and ``max_retries`` its own
    retries (default none: extraction jobs retry with backoff).
    """
    from ..llm.settings import ModelSettings

    try:
        settings = ModelSettings.from_env(timeout=timeout or DEFAULT_TIMEOUT, max_retries=max_retries)
        return None if settings is None else settings.chat_model()
    except Exception as exc:
        logger.warning("a model is configured but ChatOpenAI cannot be built (%s); working offline", exc)
        return None


def make_extractor(
    model: BaseChatModel | Extractor | None = None,
    *,
    prompts: Prompts | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    counter: TokenCounter | None = None,
    max_output_tokens: int | None = None,
) -> Extractor:
    """The extractor for ``model``: an :class:`~langchain_tiered_memory.extraction.LLMExtractor`
    over it (with the extractive summaries as its fallback), over :func:`default_model` when
    it is ``None``, or the offline extractor when there is no model at all. An
    :class:`~langchain_tiered_memory.extraction.Extractor` passed in is returned as is.
    ``max_output_tokens`` fixes every call's output cap (``None``: sized to each call's schema).
    """
    if model is not None and not isinstance(model, BaseChatModel):
        if isinstance(model, Extractor):
            return model
        raise InvalidInputError(
            f"model must be a langchain BaseChatModel, an Extractor or None, got {type(model).__name__}"
        )
    chosen = model if model is not None else default_model(timeout=timeout)
    if chosen is None:
        return OfflineExtractor(counter=counter)
    return LLMExtractor(
        chosen,
        prompts=prompts,
        timeout=timeout,
        counter=counter,
        max_output_tokens=max_output_tokens,
        fallback=ExtractiveSummaries(counter=counter),
    )

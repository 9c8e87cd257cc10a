"""Extraction: what a conversation adds to memory, from a chat model or from offline rules.

One structured call per turn returns entities, memories with their importance and — when
messages left the window — the updated running summary (:class:`TurnExtraction`); one call
per finished session returns an episode (:class:`EpisodeExtraction`). Any ``BaseChatModel``
works (:class:`LLMExtractor`); without one, :class:`OfflineExtractor` applies English rules.
:func:`make_extractor` picks between them.

Modules, one job each:

- :mod:`.schema` — the results, item-by-item validation, argument checks; :mod:`.protocol`
  — the :class:`Extractor` protocol; :mod:`.normalise` — what models write turned into stored values, and the
  per-answer limits; :mod:`.messages` — messages as prompt lines;
- :mod:`.parsing` — the tolerant, bounded reading of an answer;
- :mod:`.structured` — which structured-output method each model gets, remembered;
  :mod:`.calls` — a model call bounded in time; :mod:`.caps` — and in output tokens, and
  a cut-off answer recognised; :mod:`.prompts` — the prompts;
- :mod:`.llm` — :class:`LLMExtractor` (handed its :class:`SummaryFallback`, it imports
  nothing of the offline package); :mod:`.factory` — :func:`default_model`,
  :func:`make_extractor`, the one place extractors are built.

The offline package imports only :mod:`.schema`, :mod:`.arguments` and :mod:`.messages`
from here; no module imports one that imports it back.
"""

from __future__ import annotations

from ..vocabulary import ENTITY_TYPES, MEMORY_TYPES, RELATION_ATTRIBUTE, SELF, USER_ENTITY, MemoryType
from .calls import MAX_HUNG_CALLS
from .factory import default_model, make_extractor
from .llm import LLMExtractor, SummaryFallback
from .messages import message_text, render_messages, speaker
from .offline import OfflineExtractor
from .normalise import (
    DEFAULT_IMPORTANCE,
    MAX_ATTRIBUTES,
    MAX_CONTENT_CHARS,
    MAX_CONTENT_TOKENS,
    MAX_ENTITIES,
    MAX_MEMORIES,
    normalise_attributes,
    normalise_importance,
)
from .parsing import MAX_ANSWER_CHARS, parse_json_object, parse_text, validate_payload
from .prompts import PLACEHOLDERS, Prompts
from .schema import (
    DroppedItem,
    EpisodeExtraction,
    ExtractedEntity,
    ExtractedMemory,
    ExtractionMethod,
    TurnExtraction,
)
from .protocol import Extractor
from .structured import StructuredMethod, forget_methods

__all__ = [
    "DEFAULT_IMPORTANCE",
    "ENTITY_TYPES",
    "MAX_ANSWER_CHARS",
    "MAX_ATTRIBUTES",
    "MAX_CONTENT_CHARS",
    "MAX_CONTENT_TOKENS",
    "MAX_ENTITIES",
    "MAX_HUNG_CALLS",
    "MAX_MEMORIES",
    "MEMORY_TYPES",
    "PLACEHOLDERS",
    "RELATION_ATTRIBUTE",
    "SELF",
    "USER_ENTITY",
    "DroppedItem",
    "EpisodeExtraction",
    "ExtractedEntity",
    "ExtractedMemory",
    "ExtractionMethod",
    "Extractor",
    "LLMExtractor",
    "MemoryType",
    "OfflineExtractor",
    "Prompts",
    "StructuredMethod",
    "SummaryFallback",
    "TurnExtraction",
    "default_model",
    "forget_methods",
    "make_extractor",
    "message_text",
    "normalise_attributes",
    "normalise_importance",
    "parse_json_object",
    "parse_text",
    "render_messages",
    "speaker",
    "validate_payload",
]

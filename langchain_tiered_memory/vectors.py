"""Long-term memory: facts, preferences, experiences and instructions, recalled by meaning.

Each memory is one point in a Qdrant collection (an embedded Edge shard by default, a
server by URL; see :mod:`.backends`): a dense embedding of its content, a BM25 sparse
vector of the same text, and a payload with the :class:`MemoryEntry` fields. The
collection is the memory's only home; ``reindex`` rebuilds the vectors from the stored
content. Content is embedded and indexed exactly as given, speaker prefix included
("user: I like tea" stays so): dropping the speaker cut dense recall@10 by a third on a
public long-conversation benchmark.

Recall (:meth:`VectorMemory.search`), all of it inside Qdrant in one query:

1. candidates: the user's ``CANDIDATES`` nearest memories by dense cosine and their
   ``CANDIDATES`` best by BM25, both filtered by ``user_id`` (and the type / importance
   filters);
2. fused by reciprocal rank fusion, ``rrf = Σ 1/(60 + rank)``, normalised to
   ``relevance = rrf / (2/60)``: 1.0 for a memory that both dense and BM25 rank first,
   0.5 for one that only one of them ranks first (or that both rank about 60th);
3. ``score_threshold`` drops memories whose **relevance** is below it. It is compared
   with relevance, not with the decayed score: age and importance reorder what matches
   but never hide a memory that matches (forgetting by age is the capacity eviction's
   job). At the default 0.5 a memory is recalled when dense and BM25 both find it among
   their candidates, or when it is the best match of either;
4. ranked by ``score = relevance × (0.5 + 0.5 × importance × decay^days)``, where ``days``
   is the time since the memory was last recalled and ``decay`` is
   ``MemoryConfig.decay`` (0.95 a day): importance and age can halve a score at most;
5. the returned memories get ``last_accessed = now``, ``access_count + 1`` and
   ``importance + access_boost`` (capped at 1.0) in one batched payload write.

Writing (:meth:`VectorMemory.remember`): a memory whose nearest neighbour of the same user
has cosine above ``merge_threshold`` merges into it instead of adding a duplicate (the new
wording and its vector, the higher importance, the summed access count, the new id in
``merged_from``; no LLM call). Past ``max_memories_per_user`` the memories of lowest
effective importance (``importance × decay^days``) are deleted, never one stored by the
same call unless that call alone exceeds the cap.
"""

from __future__ import annotations

import json
import logging
import math
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Literal, get_args

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator

from .backends.base import (
    MEMORY_SCHEMA,
    MODEL_FIELD,
    Decay,
    HybridQuery,
    OrderBy,
    PointData,
    Range,
    ScoredRecord,
    VectorBackend,
    Where,
    iso,
    reindex_backend,
)
from .config import MemoryConfig
from .context import ContextSection
from .embeddings import embedding_model_id
from .errors import (
    EmbeddingError,
    EmbeddingMismatchError,
    InvalidIdentifierError,
    InvalidInputError,
    MemoryClosedError,
    NotFoundError,
    TieredMemoryError,
)

if TYPE_CHECKING:
    import os

    from langchain_core.embeddings import Embeddings

    from .tokens import TokenCounter

logger = logging.getLogger("langchain_tiered_memory")

__all__ = [
    "CANDIDATES",
    "IMPORTANCE_WEIGHT",
    "MAX_CONTENT_CHARS",
    "MAX_CONTENT_TOKENS",
    "MAX_K",
    "MEMORY_TYPES",
    "SECTION_NAME",
    "MemoryEntry",
    "MemoryHit",
    "MemoryType",
    "ScoreParts",
    "VectorMemory",
    "embedding_dimension",
]

MemoryType = Literal["fact", "preference", "experience", "instruction"]
#: The memory types, in the order error messages list them.
MEMORY_TYPES: tuple[str, ...] = get_args(MemoryType)
#: Longest content accepted, in characters. A memory is one statement; longer text
#: belongs in several memories (and MiniLM embeds only its first 256 tokens anyway).
MAX_CONTENT_CHARS = 32_000
#: Longest content accepted, in the counter's tokens.
MAX_CONTENT_TOKENS = 8_000
#: Most memories one search returns.
MAX_K = 100
#: Candidates per retriever (dense, BM25) before fusion; at least 4 × k are taken.
CANDIDATES = 50
#: ``w`` in ``score = relevance × (1 − w + w × effective importance)``.
IMPORTANCE_WEIGHT = 0.5
#: Name of the context section :meth:`VectorMemory.section` returns.
SECTION_NAME = "memories"
MAX_ID_LENGTH = 512
_LIST_LIMIT = 1_000


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


class MemoryEntry(BaseModel):
    """One long-term memory of one user.

    ``importance`` is in [0, 1]; recall adds ``access_boost`` to it (capped at 1.0).
    ``last_accessed`` is when it was stored, merged or last recalled; with
    ``MemoryConfig.decay`` it gives the effective importance (:meth:`effective_importance`).
    ``merged_from`` holds the ids of the memories merged into this one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str
    content: str
    memory_type: MemoryType
    user_id: str
    session_id: str | None = None
    importance: float = Field(ge=0.0, le=1.0)
    created_at: AwareDatetime
    last_accessed: AwareDatetime
    access_count: int = Field(0, ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)
    merged_from: list[str] = Field(default_factory=list)

    @field_validator("created_at", "last_accessed")
    @classmethod
    def _utc(cls, value: datetime) -> datetime:
        return value.astimezone(timezone.utc)

    def effective_importance(self, now: datetime, decay: float) -> float:
        """``importance × decay^days`` since :attr:`last_accessed`."""
        return Decay(now, decay).effective(self.importance, self.last_accessed)

    def to_payload(self) -> dict[str, Any]:
        """The entry as stored in Qdrant (datetimes as ISO 8601 strings)."""
        return {
            "user_id": self.user_id,
            "content": self.content,
            "memory_type": self.memory_type,
            "session_id": self.session_id,
            "importance": self.importance,
            "created_at": iso(self.created_at),
            "last_accessed": iso(self.last_accessed),
            "access_count": self.access_count,
            "metadata": dict(self.metadata),
            "merged_from": list(self.merged_from),
        }

    @classmethod
    def from_payload(cls, point_id: str, payload: Mapping[str, Any]) -> MemoryEntry:
        """The entry of a stored point."""
        fields = {k: payload.get(k) for k in cls.model_fields if k != "id" and k in payload}
        fields.setdefault("metadata", {})
        fields.setdefault("merged_from", [])
        if fields.get("metadata") is None:
            fields["metadata"] = {}
        return cls(id=str(point_id), **fields)


class ScoreParts(BaseModel):
    """How a recalled memory's score was made (``search(..., explain=True)``).

    ``relevance`` is the fused RRF score normalised to (0, 1] (1.0: first in both the
    dense and the BM25 list); ``decay`` is ``MemoryConfig.decay ** days_since_access``;
    ``effective_importance = importance × decay``; ``score = relevance × (1 − w + w ×
    effective_importance)`` with ``w = IMPORTANCE_WEIGHT``. The values are those at query
    time, before the access boost.
    """

    model_config = ConfigDict(frozen=True)

    relevance: float
    importance: float
    days_since_access: float
    decay: float
    effective_importance: float
    score: float


class MemoryHit(BaseModel):
    """A recalled memory: the entry (after the access update), its score, and with
    ``explain`` the parts of the score."""

    model_config = ConfigDict(frozen=True)

    entry: MemoryEntry
    score: float
    parts: ScoreParts | None = None

    def _repr_html_(self) -> str:
        from .display import hits_html

        return hits_html([self])


@dataclass(frozen=True)
class _Draft:
    id: str
    content: str
    memory_type: str
    importance: float
    metadata: dict[str, Any]
    session_id: str | None
    given_id: bool


def embedding_dimension(embeddings: Embeddings) -> int:
    """The width of ``embeddings``' vectors: its ``dimension`` attribute, else one probe."""
    value = getattr(embeddings, "dimension", None)
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    try:
        probe = embeddings.embed_query("dimension probe")
    except TieredMemoryError:
        raise
    except Exception as exc:
        raise EmbeddingError(f"the embeddings failed on a probe text: {exc}") from exc
    if not probe:
        raise EmbeddingError("the embeddings returned an empty vector")
    return len(probe)


class VectorMemory:
    """Long-term memories of many users in one vector collection (see the module docs).

    Args:
        backend: the collection (``EdgeBackend`` or ``QdrantServerBackend``), opened with
            this ``embeddings``' dimension and ``embedding_model_id``. Closed by
            :meth:`close`.
        embeddings: any LangChain ``Embeddings``.
        config: forgetting and recall parameters; the defaults if ``None``.
        clock: returns the current time as an aware datetime; every timestamp and decay
            uses it (tests freeze it).
        counter: token counter for :meth:`section` and the content limit; tiktoken
            ``cl100k_base`` by default, loaded when first needed.

    Thread-safe: writes, and each search with its access update, run under one lock.
    Every method raises :class:`~langchain_tiered_memory.errors.InvalidInputError`
    (or its subclasses) for bad arguments, and those that need vectors raise
    :class:`~langchain_tiered_memory.errors.EmbeddingMismatchError` while the collection
    was built with other embeddings (run :meth:`reindex`).
    """

    def __init__(
        self,
        backend: VectorBackend,
        embeddings: Embeddings,
        config: MemoryConfig | None = None,
        *,
        clock: Callable[[], datetime] | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.backend = backend
        self.embeddings = embeddings
        self.config = config if config is not None else MemoryConfig()
        self._clock = clock or _utcnow
        self._counter = counter
        self._lock = threading.RLock()
        self._closed = False
        model = embedding_model_id(embeddings)
        if backend.model_id != model:
            raise EmbeddingMismatchError(
                f"the vector backend was opened for embedding model {backend.model_id!r}, but "
                f"the embeddings given are {model!r}; open it with model_id="
                "embedding_model_id(embeddings)"
            )

    @classmethod
    def open(
        cls,
        data_dir: str | os.PathLike[str] | None,
        embeddings: Embeddings,
        config: MemoryConfig | None = None,
        *,
        collection: str = "memories",
        url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        clock: Callable[[], datetime] | None = None,
        counter: TokenCounter | None = None,
    ) -> VectorMemory:
        """Open the memories collection: an Edge shard in ``data_dir/qdrant/<collection>``,
        or a server collection with ``url`` (or ``client``)."""
        from .backends import open_backend

        config = config if config is not None else MemoryConfig()
        extra: dict[str, Any] = {}
        if url is None and client is None:
            extra["max_tenant_points"] = config.max_memories_per_user
        backend = open_backend(
            data_dir, collection,
            dimension=embedding_dimension(embeddings), model_id=embedding_model_id(embeddings),
            schema=MEMORY_SCHEMA, url=url, api_key=api_key, client=client, **extra,
        )
        try:
            return cls(backend, embeddings, config, clock=clock, counter=counter)
        except BaseException:
            backend.close()
            raise

    def __repr__(self) -> str:
        return f"VectorMemory({self.backend!r})"

    # --- lifecycle ----------------------------------------------------------------------

    def close(self) -> None:
        """Close the backend (idempotent)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self.backend.close()

    def __enter__(self) -> VectorMemory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise MemoryClosedError("this VectorMemory is closed; open a new one")

    # --- writing ------------------------------------------------------------------------

    def remember(
        self,
        user_id: str,
        content: str,
        memory_type: MemoryType = "fact",
        importance: float = 0.5,
        metadata: Mapping[str, Any] | None = None,
        session_id: str | None = None,
        *,
        memory_id: str | None = None,
        merge: bool = True,
    ) -> str:
        """Store one memory; returns its id, or the id of the memory it merged into.

        ``memory_id`` (a UUID string) makes the call idempotent: storing the same id again
        changes nothing and returns the id it ended up under. Content longer than
        :data:`MAX_CONTENT_CHARS` characters or :data:`MAX_CONTENT_TOKENS` tokens is refused.
        ``merge=False`` stores it as its own memory even beside a near-duplicate.
        """
        item = {
            "content": content, "memory_type": memory_type, "importance": importance,
            "metadata": metadata, "session_id": session_id, "memory_id": memory_id,
        }
        return self.remember_many(user_id, [item], merge=merge)[0]

    def remember_many(
        self, user_id: str, items: Iterable[Mapping[str, Any] | Any], *, merge: bool = True
    ) -> list[str]:
        """Store several memories with one embedding call; one id per item, in order.

        Each item is a mapping (or an object with those attributes) with ``content`` and
        optionally ``memory_type``, ``importance``, ``metadata``, ``session_id`` and
        ``memory_id``, as :meth:`remember` takes them. Every item is validated before
        anything is written. Items merge into existing memories and into each other, unless
        ``merge=False`` (a LangGraph store put is one exact item).
        """
        self._check_open()
        _check_user(user_id)
        batch = _as_list(items, "items")
        drafts = [self._draft(i if len(batch) > 1 else None, item) for i, item in enumerate(batch)]
        if not drafts:
            return []
        vectors = self._embed_documents([d.content for d in drafts])
        with self._lock:
            self._check_open()
            now = self._now()
            return self._write(user_id, drafts, vectors, now, merge)

    def _write(
        self, user_id: str, drafts: list[_Draft], vectors: list[list[float]], now: datetime,
        merge: bool = True,
    ) -> list[str]:
        tenant = Where(equals={"user_id": user_id})
        # The points this call writes, by id: payload and (unit) vector, in write order.
        pending: dict[str, tuple[dict[str, Any], list[float]]] = {}
        out: list[str] = []
        for draft, vector in zip(drafts, vectors):
            if draft.given_id:
                settled = self._already_stored(user_id, draft.id, pending)
                if settled is not None:
                    out.append(settled)
                    continue
            unit = _unit(vector)
            target_id, target_payload = self._merge_target(tenant, unit, pending) if merge else (None, {})
            if target_id is None:
                payload = MemoryEntry(
                    id=draft.id, content=draft.content, memory_type=draft.memory_type,  # type: ignore[arg-type]
                    user_id=user_id, session_id=draft.session_id, importance=draft.importance,
                    created_at=now, last_accessed=now, access_count=0,
                    metadata=draft.metadata, merged_from=[],
                ).to_payload()
                pending[draft.id] = (payload, unit)
                out.append(draft.id)
            else:
                pending[target_id] = (_merged(target_payload, draft, now), unit)
                out.append(target_id)
        self.backend.upsert(
            [PointData(pid, vec, payload["content"], payload) for pid, (payload, vec) in pending.items()]
        )
        self._enforce_capacity(user_id, set(pending), now)
        return out

    def _already_stored(
        self, user_id: str, memory_id: str, pending: Mapping[str, Any]
    ) -> str | None:
        """Where a memory stored before under ``memory_id`` lives now, if anywhere."""
        if memory_id in pending:
            return memory_id
        for pid, (payload, _) in pending.items():
            if memory_id in payload.get("merged_from", ()):
                return pid
        for record in self.backend.retrieve([memory_id]):
            if record.payload.get("user_id") != user_id:
                raise InvalidInputError(f"memory_id {memory_id!r} is already used by another user")
            return record.id
        merged, _ = self.backend.scroll(
            Where(equals={"user_id": user_id, "merged_from": memory_id}), limit=1
        )
        return merged[0].id if merged else None

    def _merge_target(
        self,
        tenant: Where,
        unit: list[float],
        pending: Mapping[str, tuple[dict[str, Any], list[float]]],
    ) -> tuple[str | None, dict[str, Any]]:
        """The memory a new one merges into (cosine above the threshold), if any."""
        best_id: str | None = None
        best_cos = -math.inf
        best_payload: dict[str, Any] = {}
        hits = self.backend.nearest(unit, tenant, limit=1)
        if hits:
            hit = hits[0]
            if hit.id in pending:
                payload, vec = pending[hit.id]
                cos = _dot(unit, vec)
            else:
                payload, cos = hit.payload, hit.score
            best_id, best_cos, best_payload = hit.id, cos, payload
        for pid, (payload, vec) in pending.items():
            cos = _dot(unit, vec)
            if cos > best_cos:
                best_id, best_cos, best_payload = pid, cos, payload
        if best_id is not None and best_cos > self.config.merge_threshold:
            return best_id, best_payload
        return None, {}

    def _enforce_capacity(self, user_id: str, written: set[str], now: datetime) -> None:
        cap = self.config.max_memories_per_user
        excess = self.backend.count(Where(equals={"user_id": user_id})) - cap
        if excess <= 0:
            return
        decay = Decay(now, self.config.decay)
        victims = self.backend.weakest(
            Where(equals={"user_id": user_id}, exclude_ids=sorted(written)), decay, excess
        )
        if len(victims) < excess:  # this call alone stored more than the cap
            victims += self.backend.weakest(
                Where(equals={"user_id": user_id}, ids=sorted(written)), decay, excess - len(victims)
            )
        if victims:
            logger.debug("evicting %d memories of %r over the cap of %d", len(victims), user_id, cap)
            self.backend.delete([v.id for v in victims])

    # --- recall -------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str,
        k: int = 5,
        memory_types: Sequence[MemoryType] | MemoryType | None = None,
        min_importance: float | None = None,
        explain: bool = False,
    ) -> list[MemoryHit]:
        """The user's memories that best match ``query``, best first (see the module docs).

        ``memory_types`` keeps those types only; ``min_importance`` keeps memories whose
        stored importance is at least that. An empty or blank query, or a user with no
        memories, returns ``[]``. Every memory returned counts as recalled (one batched
        write); ``explain=True`` adds the parts of each score.
        """
        self._check_open()
        _check_user(user_id)
        k = _check_k(k)
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a str, got {type(query).__name__}")
        where = self._where(user_id, memory_types, min_importance)
        if not query.strip():
            return []
        vector = self._embed_query(query)
        with self._lock:
            self._check_open()
            now = self._now()
            scored = self._recall(where, query, vector, k, now)
            entries = self._touch([e for e, _ in scored], now)
        return [
            MemoryHit(entry=entry, score=hit.score, parts=self._parts(old, hit, now) if explain else None)
            for entry, (old, hit) in zip(entries, scored)
        ]

    def _where(
        self, user_id: str, memory_types: Any, min_importance: float | None
    ) -> Where:
        any_of: dict[str, list[str]] = {}
        ranges: dict[str, Range] = {}
        if memory_types is not None:
            any_of["memory_type"] = _check_types(memory_types)
        if min_importance is not None:
            ranges["importance"] = Range(gte=_check_importance(min_importance, "min_importance"))
        return Where(equals={"user_id": user_id}, any_of=any_of, ranges=ranges)

    def _recall(
        self, where: Where, query: str, vector: list[float], k: int, now: datetime
    ) -> list[tuple[MemoryEntry, ScoredRecord]]:
        request = HybridQuery(
            vector=vector,
            text=query,
            where=where,
            limit=k,
            candidates=max(CANDIDATES, 4 * k),
            min_relevance=self.config.score_threshold,
            decay=Decay(now, self.config.decay),
            decay_weight=IMPORTANCE_WEIGHT,
        )
        user_id = where.equals["user_id"]
        out = []
        for hit in self.backend.hybrid(request):
            if hit.payload.get("user_id") != user_id:  # the filter did it; never trust alone
                logger.error("vector backend returned another user's memory %s; dropped", hit.id)
                continue
            out.append((MemoryEntry.from_payload(hit.id, hit.payload), hit))
        return out

    def _parts(self, entry: MemoryEntry, hit: ScoredRecord, now: datetime) -> ScoreParts:
        decay = Decay(now, self.config.decay)
        factor = decay.factor(entry.last_accessed)
        effective = entry.importance * factor
        return ScoreParts(
            relevance=hit.score / (1.0 - IMPORTANCE_WEIGHT + IMPORTANCE_WEIGHT * effective),
            importance=entry.importance,
            days_since_access=decay.days(entry.last_accessed),
            decay=factor,
            effective_importance=effective,
            score=hit.score,
        )

    def _touch(self, entries: list[MemoryEntry], now: datetime) -> list[MemoryEntry]:
        """Count ``entries`` as recalled, in one batched payload write."""
        if not entries:
            return []
        boost = self.config.access_boost
        changes = {
            e.id: {
                "last_accessed": iso(now),
                "access_count": e.access_count + 1,
                "importance": min(1.0, e.importance + boost),
            }
            for e in entries
        }
        self.backend.set_payload(changes)
        return [
            e.model_copy(update={**changes[e.id], "last_accessed": now}) for e in entries
        ]

    def section(
        self, user_id: str, query: str, max_tokens: int, *, k: int | None = None, touch: bool = True
    ) -> ContextSection | None:
        """The ``"memories"`` context section for ``query``: the best memories, one a line.

        Each line reads ``- [preference, importance 0.8] The user prefers green tea`` (the
        content on one line, whitespace collapsed); lines are added best first while the
        text fits ``max_tokens`` (a first line too long on its own is cut to fit). Only the
        memories shown count as recalled (``touch=False``: they don't). ``k`` defaults to
        ``MemoryConfig.memories_k``.
        ``None`` when nothing matches or fits.
        """
        self._check_open()
        _check_user(user_id)
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
            raise InvalidInputError(f"max_tokens must be an int, got {max_tokens!r}")
        k = self.config.memories_k if k is None else k
        if max_tokens <= 0 or k == 0:
            return None
        k = _check_k(k)
        if not isinstance(query, str):
            raise InvalidInputError(f"query must be a str, got {type(query).__name__}")
        if not query.strip():
            return None
        where = self._where(user_id, None, None)
        vector = self._embed_query(query)
        counter = self._token_counter()
        with self._lock:
            self._check_open()
            now = self._now()
            scored = self._recall(where, query, vector, k, now)
            lines: list[str] = []
            shown: list[MemoryEntry] = []
            for entry, _ in scored:
                line = _render(entry)
                if counter.count_text("\n".join([*lines, line])) <= max_tokens:
                    lines.append(line)
                    shown.append(entry)
                elif not lines:
                    cut = counter.truncate_text(line, max_tokens).rstrip()
                    if len(cut) > len("- ["):
                        lines.append(cut)
                        shown.append(entry)
            if not lines:
                return None
            if touch:
                self._touch(shown, now)
        text = "\n".join(lines)
        return ContextSection(SECTION_NAME, text, counter.count_text(text))

    # --- reading and editing ------------------------------------------------------------

    def get(self, user_id: str, memory_id: str) -> MemoryEntry:
        """The memory ``memory_id`` of ``user_id``; :class:`NotFoundError` if there is none
        (another user's memory is not found either)."""
        self._check_open()
        _check_user(user_id)
        point_id = _check_memory_id(memory_id, missing_ok=True)
        if point_id is not None:
            for record in self.backend.retrieve([point_id]):
                if record.payload.get("user_id") == user_id:
                    return MemoryEntry.from_payload(record.id, record.payload)
        raise NotFoundError(f"user {user_id!r} has no memory {memory_id!r}")

    def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        importance: float | None = None,
        memory_type: MemoryType | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> MemoryEntry:
        """Change a memory's fields; new content is re-embedded. ``metadata`` replaces the old.

        Timestamps and the access count are kept. Raises :class:`NotFoundError` as
        :meth:`get` does.
        """
        self._check_open()
        changes: dict[str, Any] = {}
        if content is not None:
            changes["content"] = _check_content(content, self._token_counter)
        if importance is not None:
            changes["importance"] = _check_importance(importance)
        if memory_type is not None:
            changes["memory_type"] = _check_type(memory_type)
        if metadata is not None:
            changes["metadata"] = _check_metadata(metadata)
        with self._lock:
            entry = self.get(user_id, memory_id)
            if not changes:
                return entry
            updated = entry.model_copy(update=changes)
            if "content" in changes and changes["content"] != entry.content:
                vector = self._embed_documents([updated.content])[0]
                self.backend.upsert(
                    [PointData(entry.id, _unit(vector), updated.content, updated.to_payload())]
                )
            else:
                payload = updated.to_payload()
                self.backend.set_payload({entry.id: {key: payload[key] for key in changes}})
            return updated

    def list(
        self,
        user_id: str,
        memory_types: Sequence[MemoryType] | MemoryType | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[MemoryEntry]:
        """The user's memories, newest first (by ``created_at``), ``limit`` from ``offset``."""
        self._check_open()
        _check_user(user_id)
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= _LIST_LIMIT:
            raise InvalidInputError(f"limit must be an int within 1..{_LIST_LIMIT}, got {limit!r}")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise InvalidInputError(f"offset must be a non-negative int, got {offset!r}")
        where = self._where(user_id, memory_types, None)
        records, _ = self.backend.scroll(
            where, limit=offset + limit, order_by=OrderBy("created_at", descending=True)
        )
        entries = [MemoryEntry.from_payload(r.id, r.payload) for r in records]
        # Ties on created_at (a frozen clock) get a stable order.
        entries.sort(key=lambda e: (e.created_at, e.id), reverse=True)
        return entries[offset : offset + limit]

    def count(self, user_id: str) -> int:
        """How many memories ``user_id`` has."""
        self._check_open()
        _check_user(user_id)
        return self.backend.count(Where(equals={"user_id": user_id}))

    def forget(self, user_id: str, memory_id: str) -> bool:
        """Delete one memory of ``user_id``; False if it has no such memory."""
        self._check_open()
        _check_user(user_id)
        point_id = _check_memory_id(memory_id, missing_ok=True)
        if point_id is None:
            return False
        with self._lock:
            records = self.backend.retrieve([point_id])
            if not records or records[0].payload.get("user_id") != user_id:
                return False
            self.backend.delete([point_id])
            return True

    def forget_user(self, user_id: str) -> int:
        """Delete every memory of ``user_id``; returns how many there were."""
        self._check_open()
        _check_user(user_id)
        with self._lock:
            return self.backend.delete_where(Where(equals={"user_id": user_id}))

    def reindex(
        self, progress: Callable[[int, int], None] | None = None, *, batch_size: int = 128
    ) -> int:
        """Rebuild every vector from the stored content with the current embeddings.

        For a model change (``EmbeddingMismatchError`` says when one is needed). Resumable:
        each point is stamped with the model of its vector, so a run that was interrupted
        and is started again skips what was done. ``progress(done, total)`` is called as it
        goes. Returns the number of memories re-embedded by this call.
        """
        self._check_open()
        with self._lock:
            return reindex_backend(
                self.backend,
                lambda texts: [_unit(v) for v in self._embed_documents(texts)],
                lambda payload: str(payload.get("content") or ""),
                progress=progress,
                batch_size=batch_size,
            )

    # --- helpers ------------------------------------------------------------------------

    def _now(self) -> datetime:
        value = self._clock()
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise InvalidInputError(f"clock() must return a timezone-aware datetime, got {value!r}")
        return value.astimezone(timezone.utc)

    def _token_counter(self) -> TokenCounter:
        if self._counter is None:
            from .tokens import TiktokenCounter

            self._counter = TiktokenCounter()
        return self._counter

    def _draft(self, index: int | None, item: Any) -> _Draft:
        def field(name: str, default: Any = None) -> Any:
            if isinstance(item, Mapping):
                return item.get(name, default)
            return getattr(item, name, default)

        if isinstance(item, str) or (not isinstance(item, Mapping) and not hasattr(item, "content")):
            raise InvalidInputError(
                f"items[{index or 0}] must be a mapping with 'content' (and optionally memory_type, "
                f"importance, metadata, session_id, memory_id), got {type(item).__name__}"
            )
        try:
            memory_type = field("memory_type") or "fact"
            importance = field("importance")
            memory_id = field("memory_id")
            return _Draft(
                id=_check_memory_id(memory_id) if memory_id is not None else str(uuid.uuid4()),
                content=_check_content(field("content"), self._token_counter),
                memory_type=_check_type(memory_type),
                importance=_check_importance(0.5 if importance is None else importance),
                metadata=_check_metadata(field("metadata")),
                session_id=_check_session(field("session_id")),
                given_id=memory_id is not None,
            )
        except InvalidInputError as exc:
            if index is None:
                raise
            raise type(exc)(f"items[{index}]: {exc}") from None

    def _embed_documents(self, texts: list[str]) -> list[list[float]]:
        try:
            vectors = self.embeddings.embed_documents(texts)
        except TieredMemoryError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"the embeddings failed: {exc}") from exc
        if len(vectors) != len(texts):
            raise EmbeddingError(f"the embeddings returned {len(vectors)} vectors for {len(texts)} texts")
        return [self._check_vector(v) for v in vectors]

    def _embed_query(self, text: str) -> list[float]:
        try:
            vector = self.embeddings.embed_query(text)
        except TieredMemoryError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"the embeddings failed: {exc}") from exc
        return self._check_vector(vector)

    def _check_vector(self, vector: Sequence[float]) -> list[float]:
        try:
            out = list(map(float, vector))
        except (TypeError, ValueError) as exc:
            raise EmbeddingError(f"the embeddings returned something that is not a vector: {exc}") from None
        if len(out) != self.backend.dimension:
            raise EmbeddingMismatchError(
                f"the embeddings returned a {len(out)}-d vector but the vector backend was "
                f"opened for {self.backend.dimension}-d ones"
            )
        # NaN and ±inf survive a sum, and a sum is 20× cheaper than a scan of 384 values.
        if not math.isfinite(sum(out)):
            raise EmbeddingError("the embeddings returned NaN or infinite values")
        if not any(out):
            raise EmbeddingError("the embeddings returned a zero vector, which has no direction")
        return out


# --- validation and small helpers -----------------------------------------------------------


def _as_list(items: Any, name: str) -> list[Any]:
    if isinstance(items, (str, bytes, Mapping)) or not isinstance(items, Iterable):
        raise InvalidInputError(f"{name} must be a list of memories, got {type(items).__name__}")
    return list(items)


def _check_user(user_id: Any) -> None:
    if not isinstance(user_id, str):
        raise InvalidIdentifierError(f"user_id must be a non-empty str, got {type(user_id).__name__}")
    if not user_id.strip():
        raise InvalidIdentifierError(f"user_id must be a non-empty str, got {user_id!r}")
    if len(user_id) > MAX_ID_LENGTH:
        raise InvalidIdentifierError(f"user_id is {len(user_id)} characters long; the limit is {MAX_ID_LENGTH}")
    if "\x00" in user_id:
        raise InvalidIdentifierError("user_id must not contain NUL characters")


def _check_content(content: Any, counter: Callable[[], TokenCounter]) -> str:
    if not isinstance(content, str):
        raise InvalidInputError(f"content must be a str, got {type(content).__name__}")
    if not content.strip():
        raise InvalidInputError("content is empty: a memory needs some text")
    if len(content) > MAX_CONTENT_CHARS:
        raise InvalidInputError(
            f"content is {len(content):,} characters long; the limit is {MAX_CONTENT_CHARS:,}: "
            "split it into several memories, one statement each"
        )
    # A token is at least one character, so only long texts can exceed the token limit.
    if len(content) > MAX_CONTENT_TOKENS:
        tokens = counter().count_text(content)
        if tokens > MAX_CONTENT_TOKENS:
            raise InvalidInputError(
                f"content is {tokens:,} tokens long; the limit is {MAX_CONTENT_TOKENS:,}: "
                "split it into several memories, one statement each"
            )
    return content


def _check_type(memory_type: Any) -> str:
    if memory_type not in MEMORY_TYPES:
        raise InvalidInputError(
            f"memory_type must be one of {', '.join(MEMORY_TYPES)}; got {memory_type!r}"
        )
    return str(memory_type)


def _check_types(memory_types: Any) -> list[str]:
    if isinstance(memory_types, str):
        memory_types = [memory_types]
    types = [_check_type(t) for t in _as_list(memory_types, "memory_types")]
    if not types:
        raise InvalidInputError("memory_types is empty; pass None for every type")
    return types


def _check_importance(value: Any, name: str = "importance") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{name} must be a number within [0, 1], got {value!r}")
    value = float(value)
    if not math.isfinite(value) or not 0.0 <= value <= 1.0:
        raise InvalidInputError(f"{name} must be a finite number within [0, 1], got {value!r}")
    return value


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InvalidInputError(f"k must be an int within 1..{MAX_K}, got {k!r}")
    return k


def _check_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidInputError(f"metadata must be a dict, got {type(metadata).__name__}")
    out = dict(metadata)
    if not all(isinstance(key, str) for key in out):
        raise InvalidInputError("metadata keys must be str")
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"metadata must be JSON-serialisable: {exc}") from None
    return out


def _check_session(session_id: Any) -> str | None:
    if session_id is None:
        return None
    if not isinstance(session_id, str) or not session_id.strip() or len(session_id) > MAX_ID_LENGTH:
        raise InvalidInputError(f"session_id must be None or a non-empty str, got {session_id!r}")
    return session_id


def _check_memory_id(memory_id: Any, *, missing_ok: bool = False) -> str | None:
    if not isinstance(memory_id, str):
        raise InvalidInputError(f"memory_id must be a str, got {type(memory_id).__name__}")
    try:
        return str(uuid.UUID(memory_id))
    except ValueError:
        if missing_ok:
            return None  # no memory can have it
        raise InvalidInputError(f"memory_id must be a UUID string, got {memory_id!r}") from None


def _merged(old: Mapping[str, Any], draft: _Draft, now: datetime) -> dict[str, Any]:
    """``old`` restated by ``draft``: the newer wording, the higher importance."""
    merged_from = list(old.get("merged_from") or [])
    if draft.id not in merged_from:
        merged_from.append(draft.id)
    return {
        **{k: v for k, v in old.items() if k != MODEL_FIELD},
        "content": draft.content,
        "memory_type": draft.memory_type,
        "importance": max(float(old.get("importance", 0.0)), draft.importance),
        # The new memory has never been recalled: the sum is the old count.
        "access_count": int(old.get("access_count", 0)),
        "last_accessed": iso(now),
        "session_id": draft.session_id if draft.session_id is not None else old.get("session_id"),
        "metadata": {**(old.get("metadata") or {}), **draft.metadata},
        "merged_from": merged_from,
    }


def _unit(vector: Sequence[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector] if norm else list(vector)


def _dot(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def _render(entry: MemoryEntry) -> str:
    text = " ".join(entry.content.split())
    return f"- [{entry.memory_type}, importance {entry.importance:.1f}] {text}"

"""The recall index: one Qdrant collection of points over the records the database owns.

Every searchable unit — a long-term memory (grain ``fact``), an episode (``session``), a
turn or a window of turns — is a point: its id (the record's), a dense embedding and a BM25
vector of its text, and the few fields recall filters on (an opaque tenant key derived from
the user id, the grain, the time it was said, whether it is current, a memory's type and
importance). No text and no user id is stored in Qdrant, so the index can be deleted and
rebuilt from ``memory.db`` at any time, and a forgotten record leaves nothing readable in it.

Records are written to the database first with ``indexed = 0``; :meth:`RecallIndex.sync`
(run by whoever holds the index: after a write, by the job worker, in ``flush``) embeds
them in batches, writes their points and marks them. Opening an index that is missing or
behind its records resets the marks, so it catches up (logged, with its progress); an index
holding points of records the database does not have (an older ``memory.db`` restored
beside a newer index) has those points deleted, loudly (:mod:`.repair`). Several processes share one
directory: only the one holding the Edge shard runs the index; the others store records
and leave the indexing to it (:attr:`RecallIndex.unavailable` says why), or all of them
use a Qdrant server (``qdrant_url=``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..backends.base import BaseBackend
from ..backends.records import (
    MODEL_FIELD,
    PointData,
    Range,
    ScoredRecord,
    Where,
)
from ..backends.reindex import reindex_backend
from ..embeddings.checks import embedding_dimension, unit_vector
from ..embeddings.spans import Spans, embed_with_spans
from ..errors import (
    EmbeddingError,
    ShardLockedError,
    TieredMemoryError,
    VectorStoreError,
)
from .points import (
    CANDIDATE_FIELDS,
    COLLECTION,
    GRAINS,
    RECALL_SCHEMA,
    Candidate,
    Probe,
    UnitSource,
    candidate_of,
    point_payload,
    tenant_key,
)
from .repair import CatchUp, reconcile
from .space import check_space, raise_if

if TYPE_CHECKING:
    from datetime import datetime

    from langchain_core.embeddings import Embeddings

    from ..storage import Storage, Unit

__all__ = ["Embedder", "RecallIndex"]

#: Records indexed per batch (one embedding call, one write).
BATCH = 64
#: Vector KB below which a user's points are scanned, not searched by graph (~2,600 points).
EDGE_FULL_SCAN_KB = 4_000
#: How the embedded index opens its shard (see RecallIndex.backend).
EDGE_TUNING: dict[str, Any] = {
    "hnsw_m": 0, "tenant_graphs": True, "full_scan_kb": EDGE_FULL_SCAN_KB, "quantize": True,
}
#: A locked shard is tried again after this many seconds (the holder may have closed it).
RETRY_LOCKED_S = 2.0


class Embedder(Protocol):
    """A source that computes (some of) its units' vectors itself, from vectors it has."""

    def embed(
        self, units: Sequence[Unit], embed: Callable[[list[str]], list[list[float]]], index: RecallIndex
    ) -> list[list[float]]:
        """One unit vector per unit."""


class RecallIndex:
    """The recall collection of one memory (see the module docs).

    Args:
        data_dir: where the Edge shard lives (``qdrant/recall``) in embedded mode (``None``
            with a server).
        storage: the relational store (for the forget journal and catch-up counts).
        embeddings: returns the embeddings in use (called when first needed: loading the
            model is slow, and a memory that never recalls never pays it).
        url, api_key, client: a Qdrant server (or a qdrant-client) instead of Edge.
        repair: see :attr:`repair`.
    """

    def __init__(
        self,
        data_dir: Path | None,
        storage: Storage,
        embeddings: Callable[[], Embeddings],
        *,
        url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        repair: bool = True,
    ) -> None:
        self.data_dir = data_dir
        #: Whether opening the index repairs it (rebuild marks, pending forgets) and may
        #: replace a lost one; ``False`` for a memory that only looks.
        self.repair = repair
        self._storage = storage
        self._embeddings = embeddings
        self._server = {"url": url, "api_key": api_key, "client": client}
        self._backend: BaseBackend | None = None
        self._lock = threading.RLock()
        self._write_lock = threading.Lock()
        self._sources: list[UnitSource] = []
        self._locked_reason: str | None = None
        self._locked_at = 0.0
        self._closed = False
        #: The catch-up under way (records to index after a lost or behind index), if any.
        self._catching_up: CatchUp | None = None
        self._space: str | None = None  # the fingerprint's verdict (space.py); None: unchecked

    def add_source(self, source: UnitSource) -> None:
        """Register a family of records to index."""
        self._sources.append(source)

    @property
    def server(self) -> bool:
        """Whether the index is on a Qdrant server (``qdrant_url=``/``qdrant_client=``)."""
        return self._server["url"] is not None or self._server["client"] is not None

    @property
    def path(self) -> Path:
        """The Edge shard's directory (embedded mode)."""
        if self.data_dir is None:
            raise VectorStoreError("a memory without a data directory has no embedded index; pass qdrant_url=")
        return self.data_dir / "qdrant" / COLLECTION

    def exists(self) -> bool:
        """Whether there is an index to open (always, on a server)."""
        return self.server or self.path.is_dir()

    # --- opening ------------------------------------------------------------------------

    @property
    def unavailable(self) -> str | None:
        """Why this process cannot use the index now (another holds the shard), or ``None``."""
        return self._locked_reason if self._backend is None else None

    def available(self) -> bool:
        """Whether this process holds the index (opening it, or retrying a locked shard)."""
        try:
            self.backend()
        except (ShardLockedError, _IndexLost):
            return False
        return True

    def backend(self) -> BaseBackend:
        """The open collection; raises :class:`ShardLockedError` while another process holds
        the shard (retried every few seconds)."""
        with self._lock:
            if self._closed:
                raise VectorStoreError("this memory's index is closed; open a new TieredMemory")
            if self._backend is not None:
                return self._backend
            if self._locked_reason is not None and time.monotonic() - self._locked_at < RETRY_LOCKED_S:
                raise ShardLockedError(self._locked_reason)
            if not self.repair and not self.exists() and any(s.indexed_count() for s in self._sources):
                # Lost, not new: an empty one made here would answer every search with
                # nothing, and rebuilding it is a repair.
                self._locked_reason = (
                    f"the vector index {self.path} is missing; a memory that runs jobs "
                    "(job_mode 'background' or 'inline') rebuilds it from memory.db when it opens"
                )
                raise _IndexLost(self._locked_reason)
            from ..backends import open_backend
            from ..embeddings import embedding_model_id

            embeddings = self._embeddings()
            # Embedded: a graph per user, searched once the user's points outgrow an exact
            # scan (a few thousand); smaller users are scanned through the tenant index. One
            # graph over every point instead lost most of a user's nearest neighbours once
            # other users shared the shard (3,000 points each for 10 users: recall@10 0.2
            # against an exact search, 1.0 with graphs per user). The search walks an int8
            # copy of the vectors: a user of 10k memories and 10k turns searched 25% faster
            # inside before_turn, whose embedding model has just pushed the vectors out of
            # the CPU caches.
            tuning: dict[str, Any] = {} if self.server else dict(EDGE_TUNING)
            try:
                backend = open_backend(
                    self.data_dir, COLLECTION, dimension=embedding_dimension(embeddings),
                    model_id=embedding_model_id(embeddings), schema=RECALL_SCHEMA, **self._server, **tuning,
                )
            except ShardLockedError as exc:
                self._locked_reason, self._locked_at = str(exc), time.monotonic()
                raise
            self._locked_reason = None
            self._backend = backend
            if self.repair:
                self._catch_up(backend)
            return backend

    def _catch_up(self, backend: BaseBackend) -> None:
        """Bring a just-opened index in line with the database (see :mod:`.index_repair`)."""
        # First: a forget interrupted between the layers leaves points whose records are gone
        # on purpose, and they are not orphans to warn about.
        self.resume_forgets()
        progress = reconcile(backend, self._sources, self._storage)
        if progress is not None:
            self._catching_up = progress

    def close(self) -> None:
        """Release the collection (the shard goes when its last user in this process closes)."""
        with self._lock:
            self._closed = True
            backend, self._backend = self._backend, None
        if backend is not None:
            backend.close()

    # --- writing ------------------------------------------------------------------------

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Unit vectors of ``texts`` with the embeddings in use."""
        return self.embed_with_spans(texts, [()] * len(texts))[0]

    def embed_with_spans(self, texts: list[str], spans: Spans) -> tuple[list[list[float]], list[list[list[float] | None]]]:
        """Unit vectors of ``texts`` and of their character ``spans`` (``None``: the model
        kept no token of the span; see :mod:`..embeddings.spans`)."""
        if not texts:
            return [], []
        self._check_space()
        try:
            vectors, parts = embed_with_spans(self._embeddings(), texts, spans)
        except TieredMemoryError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"the embeddings failed: {exc}") from exc
        if len(vectors) != len(texts) or [len(p) for p in parts] != [len(s) for s in spans]:
            raise EmbeddingError(f"the embeddings returned {len(vectors)} vectors for {len(texts)} texts, or "
                                 "not one per span")
        return [unit_vector(v) for v in vectors], [[None if v is None else unit_vector(v) for v in p] for p in parts]

    def embed_query(self, text: str) -> list[float]:
        """The unit vector of a query."""
        self._check_space()
        try:
            return unit_vector(self._embeddings().embed_query(text))
        except TieredMemoryError:
            raise
        except Exception as exc:
            raise EmbeddingError(f"the embeddings failed: {exc}") from exc

    def _check_space(self) -> None:
        if self._space is None and self.available():  # else checked once this process holds it
            self._space = check_space(self.backend(), lambda texts: self._embeddings().embed_documents(texts)) or ""
        raise_if(self._space or None)

    def write(self, units: Sequence[Unit], vectors: Sequence[Sequence[float]]) -> None:
        """Write the points of ``units`` (embedded as ``vectors``)."""
        if units:
            self.backend().upsert([PointData(u.id, v, u.text, point_payload(u)) for u, v in zip(units, vectors)])

    def delete(self, ids: Sequence[str]) -> None:
        """Delete points (of records deleted or merged away)."""
        if ids:
            self.backend().delete(list(ids))

    def sync(self, limit: int | None = None, stop: threading.Event | None = None,
             sources: Sequence[UnitSource] | None = None) -> int:
        """Index the records that wait for their point (only those of ``sources``, if given:
        a bulk load leaves a thread's backlog to the job worker); how many were indexed.
        Does nothing while another process holds the shard; stops between batches once
        ``stop`` is set (the memory is closing: the rest waits for next time)."""
        if not self._sources or not self.available():
            return 0
        chosen = self._sources if sources is None else [s for s in self._sources if s in sources]
        done = 0
        with self._write_lock:
            drained = len(chosen) == len(self._sources)  # every source was read to its end
            for source in chosen:
                while True:
                    if (limit is not None and done >= limit) or (stop is not None and stop.is_set()):
                        drained = False
                        break
                    units = list(source.pending(BATCH if limit is None else min(BATCH, limit - done)))
                    if not units:
                        break
                    custom = getattr(source, "embed", None)
                    if custom is not None:
                        vectors = custom(units, self.embed_documents, self)
                    else:
                        vectors = self.embed_documents([u.text for u in units])
                    self.write(units, vectors)
                    source.indexed(units, vectors)
                    # A record forgotten while it was embedded had its points deleted before
                    # this write made one: drop the point of every record now gone.
                    alive = source.texts([u.id for u in units])
                    self.delete([u.id for u in units if u.id not in alive])
                    done += len(units)
                    if self._catching_up is not None:
                        self._catching_up.advance(len(units))
            if drained and self._catching_up is not None:
                self._catching_up.finish()
                self._catching_up = None
        return done

    def pending(self) -> int:
        """Records waiting for their point."""
        return self._storage.unindexed_count()

    def resume_forgets(self) -> int:
        """Delete the points of journaled forgets; how many ops finished."""
        ops = self._storage.forgetting.pending()
        if not ops:
            return 0
        backend = self.backend()
        for op in ops:
            user = op.scope.get("user")
            if isinstance(user, str):
                backend.delete_where(Where(equals={"user": tenant_key(user)}))
            if op.point_ids:
                backend.delete(op.point_ids)
        # One flush for the batch (each costs an fsync of the segments), then the journal
        # lets go; a crash in between only repeats the deletions.
        backend.flush()
        for op in ops:
            self._storage.forgetting.finish(op.id)
        return len(ops)

    # --- reading ------------------------------------------------------------------------

    def candidates(
        self,
        user_id: str,
        query: str,
        vector: Sequence[float],
        *,
        grains: Iterable[str],
        limit: int,
        memory_types: Sequence[str] | None = None,
        min_importance: float | None = None,
        current_only: bool = True,
        since: Any = None,
        until: Any = None,
        news: bool = False,
        fields: Sequence[str] = CANDIDATE_FIELDS,
    ) -> list[Candidate]:
        """The user's units best matching ``query`` by either leg, with both legs' scores
        (``news``: only turns and windows whose people tell of a change or of the present;
        ``fields``: the payload they carry, none leaves their grain blank). A unit found by
        BM25 alone gets its cosine from its stored vector: every candidate has both to fuse.
        """
        where = self.where(user_id, grains, memory_types, min_importance, current_only, since, until, news)
        return self.candidates_many([Probe(query, vector, where, limit)], fields)[0]

    def candidates_many(self, probes: Sequence[Probe], fields: Sequence[str] = CANDIDATE_FIELDS) -> list[list[Candidate]]:
        """:meth:`candidates` of each probe, in one trip to the engine whatever their
        number: every probe's two legs, and the cosines of the units BM25 found, in one
        batch."""
        if not probes:
            return []
        found = self.backend().hybrid_many([(p.vector, p.query, p.where, p.limit) for p in probes], fields)
        out: list[list[Candidate]] = []
        for hits in found:
            by_id: dict[str, Candidate] = {h.id: candidate_of(h, h.score, None) for h in hits.dense}
            for h in hits.sparse:
                c = by_id.get(h.id)
                by_id[h.id] = (
                    Candidate(c.id, c.grain, c.dense, h.score, c.payload) if c is not None
                    else candidate_of(h, hits.cosines.get(h.id), h.score)
                )
            out.append(list(by_id.values()))
        return out

    def nearest_many(self, searches: Sequence[tuple[str, Sequence[float]]], grain: str, limit: int) -> list[list[ScoredRecord]]:
        """For each ``(user_id, vector)``, the user's current units of ``grain`` nearest by
        cosine: one batch of the engine (a bulk load's merge checks, not a query each)."""
        return self.backend().dense_many([(v, self.where(u, [grain]), limit) for u, v in searches]) if searches else []

    @staticmethod
    def where(
        user_id: str,
        grains: Iterable[str],
        memory_types: Sequence[str] | None = None,
        min_importance: float | None = None,
        current_only: bool = True,
        since: Any = None,
        until: Any = None,
        news: bool = False,
        told: tuple[datetime, datetime] | None = None,
        said_until: datetime | None = None,
        discloses: bool = False,
    ) -> Where:
        """The filter of a user's units of some grains (``told``: those that tell of a time
        within that span, see :func:`..recall.dates.told_of`; ``said_until``: no turn,
        window or session said after it, whatever the time of the long-term memories;
        ``discloses``: only what states its speaker's state, goal, value or a cause)."""
        equals: dict[str, Any] = {"user": tenant_key(user_id)}
        if current_only:
            equals["current"] = 1
        wanted = list(dict.fromkeys(grains))
        others = [g for g in GRAINS if g not in wanted]
        any_of: dict[str, list[str]] = {}
        none_of: dict[str, list[str]] = {}
        # Every point has one of GRAINS: excluding the few others is the same filter, and
        # the engine checks one short exclusion faster than a long "any of" (on a long-used
        # 10k-memory shard, a third of the filtered graph search; never slower).
        if not wanted or [g for g in wanted if g not in GRAINS] or len(others) >= len(wanted):
            any_of["grain"] = wanted
        elif others:
            none_of["grain"] = others
        if memory_types:
            any_of["memory_type"] = list(memory_types)
        ranges: dict[str, Range] = {}
        if min_importance is not None:
            ranges["importance"] = Range(gte=min_importance)
        if since is not None or until is not None:
            ranges["at"] = Range(gte=since, lte=until)
        if news:
            ranges["news"] = Range(gt=0.0)
        if discloses:
            ranges["discloses"] = Range(gt=0.0)
        if told is not None:
            ranges["told_until"] = Range(gt=told[0])
            ranges["told_from"] = Range(lt=told[1])
        excluded: list[Where] = []
        if said_until is not None:
            said = [g for g in wanted if g != "fact"]
            if said:
                excluded.append(Where(any_of={"grain": said}, ranges={"at": Range(gt=said_until)}))
        return Where(equals=equals, any_of=any_of, none_of=none_of, ranges=ranges, excluded=excluded)

    # --- rebuilding ---------------------------------------------------------------------

    def vectors(self, ids: Sequence[str]) -> dict[str, list[float]]:
        """The stored dense vectors of the points among ``ids`` made by the embeddings in use
        (a point left by another model, awaiting ``reindex``, has none to give)."""
        if not ids:
            return {}
        backend = self.backend()
        return {
            r.id: r.vector
            for r in backend.retrieve(list(ids), with_vectors=True)
            if r.vector and r.payload.get(MODEL_FIELD) == backend.model_id
        }

    def cosines(self, ids: Sequence[str], vector: Sequence[float]) -> dict[str, tuple[float, dict[str, Any]]]:
        """The cosine to ``vector`` and the payload of the points among ``ids`` (read, not
        searched: for units a search did not return but whose neighbours it did)."""
        if not ids:
            return {}
        backend = self.backend()
        found = backend.cosines(list(ids), vector, (*CANDIDATE_FIELDS, MODEL_FIELD))
        return {r.id: (r.score, r.payload) for r in found if r.payload.get(MODEL_FIELD) == backend.model_id}

    def optimize(self) -> None:
        """Merge segments, build the search graphs and vacuum deleted points, now (the
        embedded shard also does this in the background every few thousand writes)."""
        backend = self.backend()
        optimize = getattr(backend, "optimize", None)
        if callable(optimize):
            optimize()

    def count(self) -> int:
        """Points in the index."""
        return self.backend().count()

    def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]:
        """Rebuild every vector with the embeddings in use (after a model change), from the
        records' text. Resumable: a second run skips what the first finished. Records never
        indexed are indexed after. Returns the points re-embedded, by source name."""
        backend = self.backend()
        counts = {getattr(s, "name", type(s).__name__): 0 for s in self._sources}

        def texts(ids: list[str]) -> dict[str, str]:
            out: dict[str, str] = {}
            for source in self._sources:
                found = source.texts(ids)
                counts[getattr(source, "name", type(source).__name__)] += len(found)
                out.update(found)
            return out

        with self._write_lock:
            reindex_backend(backend, self.embed_documents, texts, progress=progress)
        self.sync()
        return counts


class _IndexLost(VectorStoreError):
    """The index is missing and this memory does not rebuild it (``repair=False``)."""

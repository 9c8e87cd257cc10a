"""The vector backends on real engines: a Qdrant Edge shard in tmp_path and qdrant-client's
local mode (the server backend's test double, the same client code a server gets)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import uuid
from datetime import datetime, timedelta, timezone

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import pytest
from qdrant_client import QdrantClient

from langchain_tiered_memory.backends import (
    MEMORY_SCHEMA,
    MODEL_FIELD,
    CollectionSchema,
    Decay,
    EdgeBackend,
    HybridQuery,
    OrderBy,
    PointData,
    QdrantServerBackend,
    Range,
    Where,
    bm25_document,
    bm25_query,
    open_backend,
    reindex_backend,
)
from langchain_tiered_memory.embeddings import HashingEmbeddings
from langchain_tiered_memory.errors import (
    EmbeddingMismatchError,
    ShardLockedError,
    VectorStoreError,
)

DIM = 32
EMB = HashingEmbeddings(DIM)
NOW = datetime(2025, 3, 1, 12, tzinfo=timezone.utc)


class Factory:
    """Opens backends of one kind over the same storage location, and closes them all."""

    def __init__(self, kind: str, tmp_path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.opened: list = []
        self.clients: list = []

    def __call__(self, dimension=DIM, model_id=EMB.model_id, schema=MEMORY_SCHEMA, name="memories", **kw):
        if self.kind == "edge":
            backend = EdgeBackend(self.tmp_path / "qdrant" / name, dimension, model_id, schema=schema, **kw)
        else:
            client = QdrantClient(path=str(self.tmp_path / f"local-{name}"))
            self.clients.append(client)
            backend = QdrantServerBackend(
                client=client, collection=name, dimension=dimension, model_id=model_id, schema=schema
            )
        self.opened.append(backend)
        return backend

    def reopen(self, backend, **kw):
        """Close ``backend`` (and its local client) and open the same collection again."""
        backend.close()
        if self.kind == "server":
            backend.client.close()
        return self(**kw)

    def close(self) -> None:
        for backend in self.opened:
            backend.close()
        for client in self.clients:
            client.close()


@pytest.fixture(params=["edge", "server"])
def make(request, tmp_path):
    factory = Factory(request.param, tmp_path)
    yield factory
    factory.close()


def point(text: str, user: str = "alice", emb=EMB, **payload) -> PointData:
    data = {"user_id": user, "content": text, "importance": 0.5, "last_accessed": NOW.isoformat(),
            "created_at": NOW.isoformat(), "memory_type": "fact"}
    data.update(payload)
    return PointData(str(uuid.uuid4()), emb.embed_query(text), text, data)


def hybrid(backend, text, user="alice", **kw) -> list:
    kw.setdefault("limit", 5)
    where = kw.pop("where", Where(equals={"user_id": user}))
    return backend.hybrid(HybridQuery(vector=EMB.embed_query(text), text=text, where=where, **kw))


# --- BM25 -------------------------------------------------------------------------------------


def test_bm25_is_deterministic_and_keeps_the_speaker():
    indices, values = bm25_document("user: I like green tea")
    assert (indices, values) == bm25_document("user: I like green tea")
    assert len(indices) == 4  # user, like, green, tea ("I" is a stopword)
    speaker, _ = bm25_query("user")
    assert set(speaker) <= set(indices)
    assert bm25_document("") == ([], [])


# --- basic operations ---------------------------------------------------------------------


def test_upsert_retrieve_count_scroll_delete(make):
    backend = make()
    pts = [point(f"note number {i} about topic{i}", user="alice" if i % 2 else "bob") for i in range(6)]
    backend.upsert(pts)
    assert backend.count() == 6
    assert backend.count(Where(equals={"user_id": "alice"})) == 3
    got = {r.id: r for r in backend.retrieve([pts[0].id, str(uuid.uuid4())], with_vectors=True)}
    assert list(got) == [pts[0].id]
    assert got[pts[0].id].payload["content"] == pts[0].text
    assert got[pts[0].id].payload[MODEL_FIELD] == EMB.model_id
    assert got[pts[0].id].vector == pytest.approx(pts[0].vector, abs=1e-5)
    records, _ = backend.scroll(Where(equals={"user_id": "bob"}), limit=10)
    assert {r.id for r in records} == {p.id for p in pts[::2]}
    backend.delete([pts[0].id])
    assert backend.count() == 5
    assert backend.delete_where(Where(equals={"user_id": "alice"})) == 3
    assert backend.count() == 2
    with pytest.raises(VectorStoreError, match="every point"):
        backend.delete_where(Where())


def test_scroll_orders_by_a_datetime_field(make):
    backend = make()
    pts = [point(f"event {i}", created_at=(NOW + timedelta(hours=i)).isoformat()) for i in range(5)]
    backend.upsert(pts)
    records, cont = backend.scroll(Where(equals={"user_id": "alice"}), limit=3, order_by=OrderBy("created_at", descending=True))
    assert [r.payload["content"] for r in records] == ["event 4", "event 3", "event 2"]
    assert cont is None


def test_set_payload_updates_several_points_at_once(make):
    backend = make()
    a, b = point("first"), point("second")
    backend.upsert([a, b])
    backend.set_payload({a.id: {"access_count": 1, "importance": 0.6}, b.id: {"access_count": 7}})
    got = {r.id: r.payload for r in backend.retrieve([a.id, b.id])}
    assert got[a.id]["access_count"] == 1 and got[a.id]["importance"] == 0.6
    assert got[b.id]["access_count"] == 7 and got[b.id]["content"] == "second"
    with pytest.raises(VectorStoreError):
        backend.set_payload({a.id: {MODEL_FIELD: "other"}})


# --- hybrid recall ------------------------------------------------------------------------


def test_hybrid_is_filtered_by_tenant(make):
    backend = make()
    backend.upsert([point("green tea every morning", user=u) for u in ("alice", "bob", "carol")])
    for user in ("alice", "bob", "carol"):
        hits = hybrid(backend, "green tea", user=user, limit=10)
        assert [h.payload["user_id"] for h in hits] == [user]


def test_relevance_is_normalised_rrf(make):
    backend = make()
    match = point("green tea every morning")
    backend.upsert([match, point("the cat sleeps on the sofa"), point("trains to Kyoto are fast")])
    hits = hybrid(backend, "green tea every morning", limit=3)
    # First in the dense and in the BM25 list: the maximum, 1.0.
    assert hits[0].id == match.id
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    # The others are found by dense only: at most half.
    assert all(h.score <= 0.5 + 1e-5 for h in hits[1:])


def test_min_relevance_drops_weak_fused_matches(make):
    backend = make()
    backend.upsert([point(f"unrelated words number{i}") for i in range(4)])
    # No query word occurs in any text: BM25 finds nothing, dense ranks all four, and
    # only the first dense hit reaches relevance 0.5.
    assert len(hybrid(backend, "zebra quartz", limit=4)) == 4
    kept = hybrid(backend, "zebra quartz", limit=4, min_relevance=0.5)
    assert len(kept) == 1 and kept[0].score == pytest.approx(0.5, abs=1e-4)


def test_decay_formula_is_computed_in_the_engine(make):
    backend = make()
    old = point("green tea", importance=0.8, last_accessed=(NOW - timedelta(days=10)).isoformat())
    backend.upsert([old])
    decay = Decay(NOW, 0.95)
    hits = hybrid(backend, "green tea", decay=decay, decay_weight=0.5)
    expected = 1.0 * (0.5 + 0.5 * 0.8 * 0.95**10)
    assert hits[0].score == pytest.approx(expected, rel=1e-4)
    assert decay.effective(0.8, NOW - timedelta(days=10)) == pytest.approx(0.8 * 0.95**10)


def test_weakest_is_lowest_effective_importance(make):
    backend = make()
    fresh_low = point("fresh but unimportant", importance=0.2)
    old_high = point("important long ago", importance=0.9, last_accessed=(NOW - timedelta(days=60)).isoformat())
    fresh_high = point("fresh and important", importance=0.9)
    backend.upsert([fresh_low, old_high, fresh_high])
    weakest = backend.weakest(Where(equals={"user_id": "alice"}), Decay(NOW, 0.95), 2)
    assert [w.id for w in weakest] == [old_high.id, fresh_low.id]
    assert weakest[0].score == pytest.approx(0.9 * 0.95**60, rel=1e-4)


def test_another_layer_can_use_its_own_schema_and_time_ranges(make):
    schema = CollectionSchema(tenant_field="user_id", keyword_fields=("thread_id",), datetime_fields=("started_at", "ended_at"))
    episodes = make(schema=schema, name="episodes")
    days = [NOW - timedelta(days=d) for d in (30, 10, 1)]
    pts = [
        PointData(str(uuid.uuid4()), EMB.embed_query(f"session about tea {i}"), f"session about tea {i}",
                  {"user_id": "alice", "thread_id": f"t{i}", "started_at": d.isoformat(), "ended_at": (d + timedelta(hours=1)).isoformat()})
        for i, d in enumerate(days)
    ]
    episodes.upsert(pts)
    where = Where(equals={"user_id": "alice"}, ranges={"ended_at": Range(gte=NOW - timedelta(days=15))})
    hits = episodes.hybrid(HybridQuery(vector=EMB.embed_query("tea"), text="tea", where=where, limit=5))
    assert {h.payload["thread_id"] for h in hits} == {"t1", "t2"}
    assert episodes.count(Where(ranges={"started_at": Range(lt=NOW - timedelta(days=20))})) == 1


# --- embeddings, persistence, reindex -----------------------------------------------------


def test_points_persist_across_reopening(make):
    backend = make()
    p = point("user: I moved to Berlin")
    backend.upsert([p])
    backend = make.reopen(backend)
    assert backend.retrieve([p.id])[0].payload["content"] == "user: I moved to Berlin"
    assert hybrid(backend, "Berlin")[0].id == p.id


def test_model_change_is_a_clear_error_and_reindex_fixes_it(make):
    backend = make()
    pts = [point(f"memory {i} about things{i}") for i in range(7)]
    backend.upsert(pts)
    wide = HashingEmbeddings(48)
    backend = make.reopen(backend, dimension=48, model_id=wide.model_id)
    info = backend.info()
    assert (info.dimension, info.model_id, info.points) == (DIM, EMB.model_id, 7)
    assert "reindex" in info.mismatch
    with pytest.raises(EmbeddingMismatchError, match=r"reindex\(\)"):
        backend.hybrid(HybridQuery(vector=wide.embed_query("x"), text="x", where=Where(equals={"user_id": "alice"}), limit=3))
    with pytest.raises(EmbeddingMismatchError):
        backend.upsert([point("new", emb=wide)])
    # Payload calls keep working, so data can still be listed and forgotten.
    assert backend.count(Where(equals={"user_id": "alice"})) == 7
    seen = []
    done = reindex_backend(backend, wide.embed_documents, lambda p: p["content"], progress=lambda d, t: seen.append((d, t)), batch_size=3)
    assert done == 7 and seen[0] == (0, 7) and seen[-1] == (7, 7)
    info = backend.info()
    assert (info.dimension, info.model_id, info.mismatch) == (48, wide.model_id, None)
    hits = backend.hybrid(HybridQuery(vector=wide.embed_query("memory 3 about things3"), text="memory 3 about things3", where=Where(equals={"user_id": "alice"}), limit=1))
    assert hits[0].payload["content"] == "memory 3 about things3"
    backend = make.reopen(backend, dimension=48, model_id=wide.model_id)
    assert backend.info().mismatch is None


def test_interrupted_reindex_resumes_without_redoing_points(make):
    backend = make()
    backend.upsert([point(f"memory {i}") for i in range(10)])
    other = HashingEmbeddings(DIM)
    backend = make.reopen(backend, model_id="another-model")
    calls = []

    def failing(texts):
        calls.append(len(texts))
        if len(calls) == 2:
            raise RuntimeError("killed")
        return other.embed_documents(texts)

    with pytest.raises(RuntimeError):
        reindex_backend(backend, failing, lambda p: p["content"], batch_size=4)
    backend = make.reopen(backend, model_id="another-model")
    assert "unfinished reindex" in backend.info().mismatch
    calls.clear()
    assert reindex_backend(backend, failing.__wrapped__ if hasattr(failing, "__wrapped__") else other.embed_documents, lambda p: p["content"], batch_size=4) == 6
    assert backend.info().mismatch is None


def test_an_empty_collection_adopts_a_new_model(make):
    backend = make()
    backend = make.reopen(backend, dimension=16, model_id="hashing-16")
    assert backend.info().mismatch is None and backend.info().dimension == 16
    backend.upsert([point("works", emb=HashingEmbeddings(16))])


def test_open_backend_picks_edge_or_server(tmp_path):
    edge = open_backend(tmp_path, "memories", dimension=DIM, model_id=EMB.model_id)
    try:
        assert isinstance(edge, EdgeBackend) and edge.path == tmp_path / "qdrant" / "memories"
    finally:
        edge.close()
    client = QdrantClient(":memory:")
    server = open_backend(None, "memories", dimension=DIM, model_id=EMB.model_id, client=client)
    assert isinstance(server, QdrantServerBackend)
    server.close()
    client.close()


# --- Edge specifics -------------------------------------------------------------------------


def test_edge_creates_tenant_and_payload_indexes(tmp_path):
    from qdrant_edge import KeywordIndexParams

    with EdgeBackend(tmp_path / "m", DIM, EMB.model_id) as backend:
        schema = backend._shard.info().payload_schema
        assert {"user_id", "memory_type", "importance", "created_at", "last_accessed", MODEL_FIELD} <= set(schema)
        params = schema["user_id"].params
        assert isinstance(params, KeywordIndexParams) and params.is_tenant
        assert backend.tenant_graphs is False  # 10,000 × 32-d is far below the full-scan threshold
    assert json.loads((tmp_path / "m" / "collection.json").read_text())["model_id"] == EMB.model_id


def test_edge_shard_is_locked_against_a_second_process(tmp_path):
    path = tmp_path / "shared"
    backend = EdgeBackend(path, DIM, EMB.model_id)
    backend.upsert([point("kept safe")])
    script = textwrap.dedent(
        f"""
        import sys
        from langchain_tiered_memory.backends import EdgeBackend
        from langchain_tiered_memory.errors import ShardLockedError
        try:
            EdgeBackend({str(path)!r}, {DIM}, {EMB.model_id!r})
        except ShardLockedError as exc:
            print(exc)
            sys.exit(3)
        sys.exit(0)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3, proc.stderr
    assert str(path) in proc.stdout and str(os.getpid()) in proc.stdout and "url=" in proc.stdout
    with pytest.raises(ShardLockedError):
        EdgeBackend(path, DIM, EMB.model_id)  # a second owner in this process too
    backend.close()
    with EdgeBackend(path, DIM, EMB.model_id) as again:
        assert again.count() == 1


def test_edge_refuses_a_shard_without_its_model_record(tmp_path):
    path = tmp_path / "m"
    with EdgeBackend(path, DIM, EMB.model_id) as backend:
        backend.upsert([point("x")])
    (path / "collection.json").write_text("{not json")
    with pytest.raises(VectorStoreError, match="unreadable"):
        EdgeBackend(path, DIM, EMB.model_id)
    (path / "collection.json").unlink()
    with pytest.raises(VectorStoreError, match="missing"):
        EdgeBackend(path, DIM, EMB.model_id)
    # The lock was released by the failed opens.
    (path / "collection.json").write_text(json.dumps({"format": 1, "model_id": EMB.model_id, "dimension": DIM, "vector": "dense", "vectors": {"dense": DIM}, "target": None}))
    with EdgeBackend(path, DIM, EMB.model_id) as backend:
        assert backend.count() == 1


def test_edge_optimizes_in_the_background(tmp_path):
    with EdgeBackend(tmp_path / "m", DIM, EMB.model_id, optimize_after=40) as backend:
        backend.upsert([point(f"memory {i}") for i in range(50)])
        assert backend._optimizer is not None
        assert len(hybrid(backend, "memory 7")) > 0  # queries are served meanwhile
    assert backend._optimizer is not None and not backend._optimizer.is_alive()  # close joined it


def test_edge_has_no_vectorstore(tmp_path):
    with EdgeBackend(tmp_path / "m", DIM, EMB.model_id) as backend:
        with pytest.raises(VectorStoreError, match="url="):
            backend.as_vectorstore(EMB)


# --- server specifics -----------------------------------------------------------------------


def test_server_collection_layout_and_metadata():
    client = QdrantClient(":memory:")
    backend = QdrantServerBackend(client=client, collection="mem", dimension=DIM, model_id=EMB.model_id)
    info = client.get_collection("mem")
    assert info.config.params.vectors["dense"].size == DIM
    assert info.config.params.sparse_vectors["bm25"].modifier.value == "idf"
    assert info.config.metadata["langchain_tiered_memory"]["model_id"] == EMB.model_id
    backend.close()
    client.create_collection("foreign")
    with pytest.raises(VectorStoreError, match="not created by"):
        QdrantServerBackend(client=client, collection="foreign", dimension=DIM, model_id=EMB.model_id)
    client.close()


def test_server_as_vectorstore_is_langchain_qdrant_over_the_collection():
    from langchain_qdrant import QdrantVectorStore

    client = QdrantClient(":memory:")
    backend = QdrantServerBackend(client=client, collection="mem", dimension=DIM, model_id=EMB.model_id)
    backend.upsert([point("user: I like green tea", metadata={"source": "chat"}), point("the weather is sunny")])
    store = backend.as_vectorstore(EMB)
    assert isinstance(store, QdrantVectorStore)
    docs = store.similarity_search("green tea", k=1)
    assert docs[0].page_content == "user: I like green tea"
    assert docs[0].metadata["source"] == "chat"
    backend.close()
    client.close()

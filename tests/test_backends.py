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
    MODEL_FIELD,
    CollectionSchema,
    EdgeBackend,
    PointData,
    QdrantServerBackend,
    Range,
    Where,
    bm25_document,
    bm25_query,
    open_backend,
    open_shared,
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
SCHEMA = CollectionSchema(tenant_field="user", keyword_fields=("grain",), datetime_fields=("at",))


class Factory:
    """Opens backends of one kind over the same storage location, and closes them all."""

    def __init__(self, kind: str, tmp_path) -> None:
        self.kind = kind
        self.tmp_path = tmp_path
        self.opened: list = []
        self.clients: list = []

    def __call__(self, dimension=DIM, model_id=EMB.model_id, schema=SCHEMA, name="recall", **kw):
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
    data = {"user": user, "grain": "fact", "at": NOW.isoformat()}
    data.update(payload)
    return PointData(str(uuid.uuid4()), emb.embed_query(text), text, data)


def mine(user: str = "alice") -> Where:
    return Where(equals={"user": user})


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
    assert backend.count(mine()) == 3
    got = {r.id: r for r in backend.retrieve([pts[0].id, str(uuid.uuid4())], with_vectors=True)}
    assert list(got) == [pts[0].id]
    assert got[pts[0].id].payload[MODEL_FIELD] == EMB.model_id
    assert got[pts[0].id].vector == pytest.approx(pts[0].vector, abs=1e-5)
    records, _ = backend.scroll(mine("bob"), limit=10)
    assert {r.id for r in records} == {p.id for p in pts[::2]}
    backend.delete([pts[0].id])
    assert backend.count() == 5
    assert backend.delete_where(mine()) == 3
    assert backend.count() == 2
    with pytest.raises(VectorStoreError, match="every point"):
        backend.delete_where(Where())


def test_no_text_is_stored_in_a_point(make, tmp_path):
    backend = make()
    canary = "zanzibar-quokka-7731"
    p = point(f"user: my secret word is {canary}")
    backend.upsert([p])
    [record] = backend.retrieve([p.id])
    assert canary not in json.dumps(record.payload)
    assert backend.sparse(canary, mine(), 5)[0].id == p.id  # found by BM25 all the same
    backend.flush()
    hits = [path for path in tmp_path.rglob("*") if path.is_file() and canary.encode() in path.read_bytes()]
    assert hits == []


def test_set_payload_updates_several_points_at_once(make):
    backend = make()
    a, b = point("first"), point("second")
    backend.upsert([a, b])
    backend.set_payload({a.id: {"current": 0, "importance": 0.6}, b.id: {"current": 1}})
    got = {r.id: r.payload for r in backend.retrieve([a.id, b.id])}
    assert got[a.id]["current"] == 0 and got[a.id]["importance"] == 0.6
    assert got[b.id]["current"] == 1 and got[b.id]["grain"] == "fact"


# --- the two retrieval legs -------------------------------------------------------------------


def test_both_legs_are_filtered_by_tenant(make):
    backend = make()
    backend.upsert([point("green tea every morning", user=u) for u in ("alice", "bob", "carol")])
    for user in ("alice", "bob", "carol"):
        dense = backend.dense(EMB.embed_query("green tea"), mine(user), 10)
        sparse = backend.sparse("green tea", mine(user), 10)
        assert [h.payload["user"] for h in dense] == [user]
        assert [h.payload["user"] for h in sparse] == [user]


def test_the_legs_return_similarity_magnitudes(make):
    backend = make()
    match = point("green tea every morning")
    backend.upsert([match, point("the cat sleeps on the sofa"), point("trains to Kyoto are fast")])
    dense = backend.dense(EMB.embed_query("green tea every morning"), mine(), 3)
    assert dense[0].id == match.id and dense[0].score == pytest.approx(1.0, abs=1e-4)  # cosine
    assert all(h.score < 0.9 for h in dense[1:])
    sparse = backend.sparse("green tea", mine(), 3)
    assert [h.id for h in sparse] == [match.id] and sparse[0].score > 0  # only it shares a term
    assert backend.sparse("zebra quartz", mine(), 3) == []
    assert backend.sparse("the and of", mine(), 3) == []  # stopwords only: no terms


def test_hybrid_runs_both_legs_under_one_filter(make):
    backend = make()
    pts = [point("green tea every morning"), point("black tea at noon"), point("trains to Kyoto", user="bob")]
    backend.upsert(pts)
    vector = EMB.embed_query("green tea")
    dense, sparse, cosines = backend.hybrid(vector, "green tea", mine(), 5)
    assert [(h.id, h.score) for h in dense] == [(h.id, h.score) for h in backend.dense(vector, mine(), 5)]
    assert [(h.id, h.score) for h in sparse] == [(h.id, h.score) for h in backend.sparse("green tea", mine(), 5)]
    assert {h.id for h in dense} == {pts[0].id, pts[1].id}  # bob's point is filtered out of both
    # Each BM25 hit comes with its cosine to the vector, as the dense leg scores it.
    assert set(cosines) == {h.id for h in sparse}
    assert cosines == pytest.approx({h.id: h.score for h in dense if h.id in cosines}, abs=1e-5)
    # Only the payload fields asked for; none at all for ().
    dense, sparse, _ = backend.hybrid(vector, "green tea", mine(), 5, ("grain",))
    assert all(h.payload == {"grain": "fact"} for h in dense + sparse)
    assert all(h.payload == {} for h in backend.dense(vector, mine(), 5, ()))
    # No BM25 terms (stopwords): the dense leg alone.
    dense, sparse, cosines = backend.hybrid(vector, "the and of", mine(), 5)
    assert len(dense) == 2 and sparse == [] and cosines == {}


def test_the_cosines_of_bm25_hits_the_dense_leg_missed(make):
    # A dense leg of 1 takes the one point without "tea"; the BM25 hits it missed still get
    # their cosines, in the same batch: the exact ones (vectors chosen, so known).
    import numpy as np

    def unit(*weights: float) -> list[float]:
        v = np.zeros(DIM)
        v[: len(weights)] = weights
        return (v / np.linalg.norm(v)).tolist()

    texts = {"trains to Kyoto": unit(1.0), "green tea every morning": unit(0.6, 0.8), "a pot of tea": unit(0.0, 1.0)}
    pts = [PointData(str(uuid.uuid4()), v, t, {"user": "alice", "grain": "fact"}) for t, v in texts.items()]
    backend = make()
    backend.upsert(pts)
    query = unit(1.0)
    dense, sparse, cosines = backend.hybrid(query, "tea", mine(), 1)
    assert [h.id for h in dense] == [pts[0].id]
    assert len(sparse) == 1 and sparse[0].id in (pts[1].id, pts[2].id)
    expected = float(np.dot(query, texts[next(p.text for p in pts if p.id == sparse[0].id)]))
    assert cosines == pytest.approx({sparse[0].id: expected}, abs=1e-5)
    # Two BM25 hits, two cosines: 0.6 and 0.
    _, sparse, cosines = backend.hybrid(query, "tea", mine(), 2)
    assert cosines == pytest.approx({pts[1].id: 0.6, pts[2].id: 0.0}, abs=1e-5)


def test_the_cosines_of_points_read_by_id(make):
    # The turns beside a recall's best are read by id, not searched: each one's exact
    # cosine and the payload fields asked for; unknown ids are skipped.
    import numpy as np

    backend = make()
    pts = [point("green tea every morning", words=4), point("trains to Kyoto", grain="turn"), point("tea", user="bob")]
    backend.upsert(pts)
    query = EMB.embed_query("green tea")
    found = backend.cosines([pts[0].id, pts[1].id, str(uuid.uuid4())], query, ("grain", "words"))
    assert sorted(r.id for r in found) == sorted([pts[0].id, pts[1].id])
    vectors = {p.id: np.asarray(p.vector) / np.linalg.norm(p.vector) for p in pts}
    for r in found:
        assert r.score == pytest.approx(float(np.asarray(query) @ vectors[r.id]), abs=1e-5)
    assert {r.id: r.payload for r in found} == {pts[0].id: {"grain": "fact", "words": 4}, pts[1].id: {"grain": "turn"}}
    assert backend.cosines([], query, ("grain",)) == []


def test_several_searches_in_one_batch_answer_as_each_alone(make):
    backend = make()
    pts = [point("green tea every morning"), point("black tea at noon", grain="turn"),
           point("trains to Kyoto"), point("tea in Kyoto", user="bob")]
    backend.upsert(pts)
    tea, kyoto = EMB.embed_query("green tea"), EMB.embed_query("Kyoto")
    turns = Where(equals={"user": "alice"}, any_of={"grain": ["turn"]})
    searches = [(tea, "green tea", mine(), 5), (kyoto, "Kyoto", mine(), 5), (tea, "the of", turns, 5)]
    together = backend.hybrid_many(searches, ("grain",))
    alone = [backend.hybrid(v, t, w, n, ("grain",)) for v, t, w, n in searches]
    def as_pairs(hits):
        return [[(h.id, round(h.score, 5)) for h in leg] for leg in (hits.dense, hits.sparse)] + [
            sorted((i, round(c, 5)) for i, c in hits.cosines.items())]

    assert [as_pairs(legs) for legs in together] == [as_pairs(legs) for legs in alone]
    assert together[2][1] == [] and [h.id for h in together[2][0]] == [pts[1].id]  # no terms; the filter holds
    # The dense leg of each (vector, filter) in one batch, without payload by default.
    only = Where(ids=[pts[0].id, pts[2].id])
    scored = backend.dense_many([(tea, only, 2), (kyoto, only, 2)])
    assert [[h.id for h in hits] for hits in scored] == [[pts[0].id, pts[2].id], [pts[2].id, pts[0].id]]
    assert all(h.payload == {} for hits in scored for h in hits)


def test_a_quantized_edge_shard_scores_with_the_exact_vectors(tmp_path):
    # Enough 384-d points (11 MB) for the optimizer to build an indexed segment: a graph
    # walked over the int8 copy, whose finds are rescored with the stored vectors. alice
    # (7,128 points, past full_scan_kb) is searched through the graph, bob (72) by a scan.
    import numpy as np

    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((7_200, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    with EdgeBackend(tmp_path / "q", 384, "random", schema=SCHEMA, quantize=True, hnsw_m=16, full_scan_kb=1_000) as backend:
        for i in range(0, len(vectors), 1_200):
            backend.upsert([PointData(str(uuid.uuid4()), v.tolist(), f"note {i + j}",
                                      {"user": "bob" if (i + j) % 100 == 0 else "alice", "grain": "turn",
                                       "at": NOW.isoformat()})
                            for j, v in enumerate(vectors[i : i + 1_200])])
        backend.optimize()
        segments = list((tmp_path / "q" / "shard" / "segments").glob("*/vector_storage-dense/quantized.data"))
        assert segments, "the optimizer built no quantized segment"
        query = vectors[42] + 0.5 * vectors[43]
        query /= np.linalg.norm(query)
        hits = backend.dense(query.tolist(), mine(), 10, ())
        stored = {r.id: np.array(r.vector) for r in backend.retrieve([h.id for h in hits], with_vectors=True)}
        for h in hits:
            assert h.score == pytest.approx(float(query @ stored[h.id]), abs=1e-5)  # exact cosine
        # Points read by id are scored with their exact vectors too, every one of them.
        some = [h.id for h in hits] + [r.id for r in backend.scroll(mine("bob"), limit=30)[0]]
        read = {r.id: r.score for r in backend.cosines(some, query.tolist(), ())}
        assert set(read) == set(some)
        for r in backend.retrieve(some, with_vectors=True):
            assert read[r.id] == pytest.approx(float(query @ np.array(r.vector)), abs=1e-5)
        alice = np.array([i % 100 != 0 for i in range(len(vectors))])
        exact = np.sort(vectors[alice] @ query)[::-1][:2]
        assert [h.score for h in hits[:2]] == pytest.approx(exact.tolist(), abs=1e-5)  # the true two best
        # A tenant small enough to be scanned: the same exact scores, the true best first.
        few = backend.dense(query.tolist(), mine("bob"), 5, ())
        assert [h.score for h in few] == pytest.approx(np.sort(vectors[~alice] @ query)[::-1][:5].tolist(), abs=1e-5)


def test_a_large_user_among_others_finds_their_nearest_points(tmp_path):
    # The recall index's layout (graphs per user, int8 walk), with the scan threshold low
    # enough that each of these users is searched through a graph: every user's top 10
    # must be the exact top 10 among their own points. (One graph over all points found
    # 0.2 of them here: a user's points are islands in it.)
    import numpy as np

    from langchain_tiered_memory.index.recall_index import EDGE_TUNING

    rng = np.random.default_rng(3)
    topics = rng.standard_normal((40, 384)).astype(np.float32)  # clustered, as text is
    vectors = topics[rng.integers(0, 40, 7_200)] + 0.8 * rng.standard_normal((7_200, 384)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    users = np.arange(7_200) % 6
    ids = [str(uuid.uuid4()) for _ in range(7_200)]
    tuning = {**EDGE_TUNING, "full_scan_kb": 1_000}  # a user's 1,200 points: 1.8 MB
    with EdgeBackend(tmp_path / "q", 384, "random", schema=SCHEMA, **tuning) as backend:
        for i in range(0, 7_200, 1_800):
            backend.upsert([PointData(ids[j], vectors[j].tolist(), "x",
                                      {"user": f"u{users[j]}", "grain": "turn", "at": NOW.isoformat()})
                            for j in range(i, i + 1_800)])
        backend.optimize()
        found = []
        for q in range(24):
            user = q % 6
            query = topics[q] + 0.8 * rng.standard_normal(384).astype(np.float32)
            query /= np.linalg.norm(query)
            own = np.flatnonzero(users == user)
            exact = {ids[i] for i in own[np.argsort(-(vectors[own] @ query))[:10]]}
            hits = backend.dense(query.tolist(), mine(f"u{user}"), 10, ())
            found.append(len(exact & {h.id for h in hits}) / 10)
        assert np.mean(found) >= 0.97 and min(found) >= 0.8


def test_filters_on_keywords_and_time_ranges(make):
    backend = make()
    days = [NOW - timedelta(days=d) for d in (30, 10, 1)]
    pts = [point(f"session about tea {i}", grain="session" if i else "turn", at=d.isoformat()) for i, d in enumerate(days)]
    backend.upsert(pts)
    recent = Where(equals={"user": "alice"}, ranges={"at": Range(gte=NOW - timedelta(days=15))})
    assert {h.id for h in backend.dense(EMB.embed_query("tea"), recent, 5)} == {pts[1].id, pts[2].id}
    sessions = Where(equals={"user": "alice"}, any_of={"grain": ["session"]})
    assert {h.id for h in backend.sparse("tea", sessions, 5)} == {pts[1].id, pts[2].id}
    assert backend.count(Where(ranges={"at": Range(lt=NOW - timedelta(days=20))})) == 1


# --- embeddings, persistence, reindex -----------------------------------------------------


def test_points_persist_across_reopening(make):
    backend = make()
    p = point("user: I moved to Berlin")
    backend.upsert([p])
    backend = make.reopen(backend)
    assert backend.retrieve([p.id])[0].id == p.id
    assert backend.sparse("Berlin", mine(), 3)[0].id == p.id


def test_model_change_is_a_clear_error_and_reindex_fixes_it(make):
    backend = make()
    pts = [point(f"memory {i} about things{i}") for i in range(7)]
    texts = {p.id: p.text for p in pts}
    backend.upsert(pts)
    wide = HashingEmbeddings(48)
    backend = make.reopen(backend, dimension=48, model_id=wide.model_id)
    info = backend.info()
    assert (info.dimension, info.model_id, info.points) == (DIM, EMB.model_id, 7)
    assert "reindex" in info.mismatch
    with pytest.raises(EmbeddingMismatchError, match=r"reindex\(\)"):
        backend.dense(wide.embed_query("x"), mine(), 3)
    with pytest.raises(EmbeddingMismatchError):
        backend.upsert([point("new", emb=wide)])
    # Payload calls keep working, so records can still be forgotten.
    assert backend.count(mine()) == 7
    seen = []
    done = reindex_backend(
        backend, wide.embed_documents, lambda ids: {i: texts[i] for i in ids if i in texts},
        progress=lambda d, t: seen.append((d, t)), batch_size=3,
    )
    assert done == 7 and seen[0] == (0, 7) and seen[-1] == (7, 7)
    info = backend.info()
    assert (info.dimension, info.model_id, info.mismatch) == (48, wide.model_id, None)
    hits = backend.dense(wide.embed_query("memory 3 about things3"), mine(), 1)
    assert hits[0].id == pts[3].id
    backend = make.reopen(backend, dimension=48, model_id=wide.model_id)
    assert backend.info().mismatch is None


def test_reindex_drops_points_whose_record_is_gone(make):
    backend = make()
    pts = [point(f"memory {i}") for i in range(4)]
    backend.upsert(pts)
    backend = make.reopen(backend, model_id="another-model")
    kept = {p.id: p.text for p in pts[:2]}
    assert reindex_backend(backend, EMB.embed_documents, lambda ids: {i: kept[i] for i in ids if i in kept}) == 2
    assert {r.id for r in backend.scroll(mine(), limit=10)[0]} == set(kept)


def test_interrupted_reindex_resumes_without_redoing_points(make):
    backend = make()
    pts = [point(f"memory {i}") for i in range(10)]
    texts = {p.id: p.text for p in pts}
    backend.upsert(pts)
    backend = make.reopen(backend, model_id="another-model")
    calls = []

    def failing(batch):
        calls.append(len(batch))
        if len(calls) == 2:
            raise RuntimeError("killed")
        return EMB.embed_documents(batch)

    def lookup(ids):
        return {i: texts[i] for i in ids}

    with pytest.raises(RuntimeError):
        reindex_backend(backend, failing, lookup, batch_size=4)
    backend = make.reopen(backend, model_id="another-model")
    assert "unfinished reindex" in backend.info().mismatch
    assert reindex_backend(backend, EMB.embed_documents, lookup, batch_size=4) == 6
    assert backend.info().mismatch is None


def test_a_reindex_to_a_model_of_the_same_width_leaves_the_old_space_whole_until_it_finishes():
    """Processes still on the old model (a deployment's other servers) search during the
    reindex: they must find what they found before, never a mix of two spaces."""
    client = QdrantClient(":memory:")
    try:
        old = QdrantServerBackend(client=client, dimension=DIM, model_id=EMB.model_id, schema=SCHEMA)
        texts = [f"memory {i} about subject{i} and thing{i}" for i in range(8)]
        pts = [point(t) for t in texts]
        old.upsert(pts)

        def other_space(batch):  # the same width, another space: the old vectors reversed
            return [list(reversed(v)) for v in EMB.embed_documents(batch)]

        new = QdrantServerBackend(client=client, dimension=DIM, model_id="another-model", schema=SCHEMA)
        new.begin_reindex()
        new.update_vectors([PointData(p.id, v, p.text) for p, v in zip(pts[:4], other_space(texts[:4]))])
        # Half-way: the old model's searches, from a memory opened before and one opened now.
        late = QdrantServerBackend(client=client, dimension=DIM, model_id=EMB.model_id, schema=SCHEMA)
        for backend in (old, late):
            assert backend.info().mismatch is None
            assert [backend.dense(EMB.embed_query(t), mine(), 1)[0].id for t in texts] == [p.id for p in pts]
        assert "unfinished reindex" in new.info().mismatch  # the new model waits for the whole space
        assert reindex_backend(new, other_space, lambda ids: {p.id: p.text for p in pts if p.id in ids}) == 4
        assert new.info().mismatch is None and new.info().vector_name != old.vector_name
        assert [new.dense(other_space([t])[0], mine(), 1)[0].id for t in texts] == [p.id for p in pts]
        late.close()
        late = QdrantServerBackend(client=client, dimension=DIM, model_id=EMB.model_id, schema=SCHEMA)
        assert "reindex" in late.info().mismatch  # once switched, the old model is refused
    finally:
        client.close()


def test_an_empty_collection_adopts_a_new_model(make):
    backend = make()
    backend = make.reopen(backend, dimension=16, model_id="hashing-16")
    assert backend.info().mismatch is None and backend.info().dimension == 16
    backend.upsert([point("works", emb=HashingEmbeddings(16))])


def test_open_backend_picks_edge_or_server(tmp_path):
    edge = open_backend(tmp_path, "recall", dimension=DIM, model_id=EMB.model_id, schema=SCHEMA)
    try:
        assert isinstance(edge, EdgeBackend) and edge.path == (tmp_path / "qdrant" / "recall").resolve()
    finally:
        edge.close()
    client = QdrantClient(":memory:")
    server = open_backend(None, "recall", dimension=DIM, model_id=EMB.model_id, client=client, schema=SCHEMA)
    assert isinstance(server, QdrantServerBackend)
    server.close()
    client.close()


# --- Edge specifics -------------------------------------------------------------------------


def test_edge_creates_tenant_and_payload_indexes(tmp_path):
    from qdrant_edge import KeywordIndexParams

    with EdgeBackend(tmp_path / "m", DIM, EMB.model_id, schema=SCHEMA) as backend:
        schema = backend._shard.info().payload_schema
        assert {"user", "grain", "at", MODEL_FIELD} <= set(schema)
        params = schema["user"].params
        assert isinstance(params, KeywordIndexParams) and params.is_tenant
        assert backend.tenant_graphs is False
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
    assert str(path) in proc.stdout and str(os.getpid()) in proc.stdout and "qdrant_url=" in proc.stdout
    with pytest.raises(ShardLockedError):
        EdgeBackend(path, DIM, EMB.model_id)  # a second, unshared owner in this process too
    backend.close()
    with EdgeBackend(path, DIM, EMB.model_id) as again:
        assert again.count() == 1


def test_open_shared_hands_one_backend_to_every_opener_in_a_process(tmp_path):
    path = tmp_path / "shared"
    first = open_shared(path, DIM, EMB.model_id)
    second = open_shared(path, DIM, EMB.model_id)
    assert second is first
    first.upsert([point("still open")])
    first.close()
    assert second.count() == 1  # the shard closes with its last holder only
    with pytest.raises(VectorStoreError, match="same embeddings"):
        open_shared(path, 16, "hashing-16")
    second.close()
    with pytest.raises(VectorStoreError, match="closed"):
        second.count()
    with open_shared(path, DIM, EMB.model_id) as third:  # opened anew
        assert third is not first and third.count() == 1


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
        assert len(backend.sparse("memory", mine(), 5)) > 0  # served (once the run lets go of the GIL)
    assert backend._optimizer is not None and not backend._optimizer.is_alive()  # close joined it


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


class FlakyClient(QdrantClient):
    """A real local-mode client whose next ``failures`` calls to ``upsert`` fail as a
    dropped connection does."""

    failures = 0

    def upsert(self, *args, **kwargs):  # type: ignore[override]
        if self.failures:
            self.failures -= 1
            raise ConnectionError("connection reset by peer")
        return super().upsert(*args, **kwargs)


def test_server_retries_transient_failures_then_reports_them():
    client = FlakyClient(":memory:")
    backend = QdrantServerBackend(client=client, collection="mem", dimension=DIM, model_id=EMB.model_id, schema=SCHEMA)
    client.failures = 2
    backend.upsert([point("written on the third try")])
    assert backend.count() == 1
    client.failures = 5
    with pytest.raises(VectorStoreError, match="connection reset"):
        backend.upsert([point("never written")])
    assert backend.count() == 1
    backend.close()
    client.close()


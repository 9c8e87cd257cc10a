"""An embedder change never mixes vectors (issue 43, point 4).

The index records the embedding model's name and width, and a fingerprint: the vectors of a
few reference texts (``index/space.py``). Another model under another name is refused until
``reindex``; another model under the *same* name — which the name check cannot see — is
refused by the fingerprint. Both refusals are ``ConfigError`` s that say what to run.
"""

from __future__ import annotations

import pytest
from qdrant_client import QdrantClient

from langchain_tiered_memory import ConfigError, EmbeddingMismatchError, HashingEmbeddings, TieredMemory
from langchain_tiered_memory.backends.records import MODEL_FIELD, Where


class Impostor(HashingEmbeddings):
    """Named as ``HashingEmbeddings(384)`` is, but another space: each vector reversed."""

    def embed_documents(self, texts):
        return [list(reversed(v)) for v in super().embed_documents(texts)]

    def embed_query(self, text):
        return list(reversed(super().embed_query(text)))


@pytest.fixture(params=["edge", "qdrant-local"])
def open_memory(request, tmp_path):
    client = QdrantClient(":memory:") if request.param == "qdrant-local" else None
    opened: list[TieredMemory] = []

    def make(embeddings) -> TieredMemory:
        memory = TieredMemory(tmp_path / "memory", embeddings=embeddings, qdrant_client=client)
        opened.append(memory)
        return memory

    yield make
    for memory in opened:
        memory.close()


def test_the_same_embeddings_reopen_and_search(open_memory):
    memory = open_memory(HashingEmbeddings(384))
    mid = memory.memories.remember("alice", "user: I grow tomatoes on the balcony")
    memory.close()
    again = open_memory(HashingEmbeddings(384))
    assert again.memories.search("alice", "tomatoes balcony")[0].entry.id == mid


def test_another_model_under_the_same_name_is_refused_and_nothing_changes(open_memory):
    memory = open_memory(HashingEmbeddings(384))
    mid = memory.memories.remember("alice", "user: I grow tomatoes on the balcony")
    memory.close()
    impostor = open_memory(Impostor(384))
    with pytest.raises(EmbeddingMismatchError, match="same name") as refused:
        impostor.memories.search("alice", "tomatoes")
    assert isinstance(refused.value, ConfigError)
    assert "reindex" in str(refused.value) and "qdrant/" in str(refused.value)
    # Nothing is written in the other space either.
    with pytest.raises(EmbeddingMismatchError):
        impostor.memories.remember("alice", "user: and basil")
    impostor.close()
    original = open_memory(HashingEmbeddings(384))
    hits = original.memories.search("alice", "tomatoes balcony")
    assert [h.entry.id for h in hits] == [mid]


def test_another_model_is_refused_until_reindex_and_then_no_old_vector_is_left(open_memory, tmp_path):
    memory = open_memory(HashingEmbeddings(384))
    mids = [memory.memories.remember("alice", f"user: fact {i}: I grow tomatoes number {i}") for i in range(5)]
    memory.close()
    other = open_memory(HashingEmbeddings(256))
    with pytest.raises(EmbeddingMismatchError, match="reindex") as refused:
        other.memories.search("alice", "tomatoes")
    assert isinstance(refused.value, ConfigError)
    counts = other.admin.reindex()
    assert counts["memories"] == 5
    assert {h.entry.id for h in other.memories.search("alice", "tomatoes", k=10)} == set(mids)
    backend = other._parts.index.backend()
    assert backend.model_id == "hashing-256"
    assert backend.count(Where(none_of={MODEL_FIELD: ["hashing-256"]})) == 0  # every point re-embedded
    assert backend.info().dimension == 256 and backend.info().reindex_target is None
    assert backend.space_fingerprint() is not None  # the new space is recorded too

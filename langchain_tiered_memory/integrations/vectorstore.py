"""One user's long-term memories as a LangChain ``VectorStore`` (``MemoryVectorStore(memory, user_id)``).

For code written against the ``VectorStore`` interface (retrievers, RAG chains): texts
added are memories of that user, searches are ``memory.memories.search`` (the same ranking, the
recall counted), deletes are forgets. Works on the embedded index and on a server alike.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.documents import Document
from langchain_core.embeddings import Embeddings
from langchain_core.vectorstores import VectorStore

from ..entries import MemoryEntry, check_id
from ..errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from ..memory import TieredMemory


class MemoryVectorStore(VectorStore):
    """``user_id``'s memories in ``memory``, as a ``VectorStore``."""

    def __init__(self, memory: TieredMemory, user_id: str) -> None:
        self.memory = memory
        self.user_id = check_id("user_id", user_id)

    @property
    def embeddings(self) -> Embeddings | None:
        """The memory's embeddings."""
        return self.memory.admin.embeddings

    def add_texts(
        self, texts: Iterable[str], metadatas: list[dict[str, Any]] | None = None, *, ids: list[str] | None = None,
        **kwargs: Any,
    ) -> list[str]:
        """Remember each text (``metadata`` may carry ``memory_type`` and ``importance``)."""
        texts = list(texts)
        metadatas = metadatas or [{} for _ in texts]
        items = []
        for i, (text, metadata) in enumerate(zip(texts, metadatas)):
            meta = dict(metadata)
            item: dict[str, Any] = {"content": text, "metadata": meta}
            for key in ("memory_type", "importance"):
                if key in meta:
                    item[key] = meta.pop(key)
            if ids is not None:
                item["memory_id"] = ids[i]
            items.append(item)
        return self.memory.memories.remember_many(self.user_id, items)

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> list[tuple[Document, float]]:
        """The best memories for ``query`` with their scores."""
        hits = self.memory.memories.search(self.user_id, query, k=k, **kwargs)
        return [(_document(h.entry), h.score) for h in hits]

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        """The best memories for ``query``."""
        return [doc for doc, _ in self.similarity_search_with_score(query, k, **kwargs)]

    def _select_relevance_score_fn(self) -> Any:
        return lambda score: max(0.0, min(1.0, score))

    def delete(self, ids: list[str] | None = None, **kwargs: Any) -> bool | None:
        """Forget the memories ``ids``."""
        if not ids:
            raise InvalidInputError("delete() needs the ids of the memories to forget")
        for memory_id in ids:
            self.memory.memories.forget(user_id=self.user_id, memory_id=memory_id)
        return True

    def get_by_ids(self, ids: Sequence[str], /) -> list[Document]:
        """The memories among ``ids`` that exist."""
        out = []
        for memory_id in ids:
            try:
                out.append(_document(self.memory.memories.get(self.user_id, memory_id)))
            except NotFoundError:
                continue
        return out

    @classmethod
    def from_texts(
        cls, texts: list[str], embedding: Embeddings, metadatas: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> MemoryVectorStore:
        """Not supported: open one with ``MemoryVectorStore(memory, user_id)``."""
        raise InvalidInputError("a MemoryVectorStore belongs to a memory: use MemoryVectorStore(memory, user_id)")


def _document(entry: MemoryEntry) -> Document:
    metadata = {**entry.metadata, "memory_type": entry.memory_type, "importance": entry.importance,
                "created_at": entry.created_at.isoformat()}
    return Document(page_content=entry.content, metadata=metadata, id=entry.id)

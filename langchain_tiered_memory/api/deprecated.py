"""The old, flat names of :class:`~langchain_tiered_memory.TieredMemory`, kept for one release.

``memory.search(...)`` still works, warning "use memory.memories.search"; so does every name
the facade had before its grouped sub-APIs. At run time they are found by ``__getattr__``
(so they are not among the facade's public names, nor in ``dir()``); for type checkers the
stubs below declare each one with its signature, marked ``@deprecated``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .adapters import build
from .deprecation import warn_renamed

__all__ = ["DeprecatedNames", "RENAMED"]


def _update(memory: Any) -> Callable[..., Any]:
    def update_memory(user_id: str, memory_id: str, **changes: Any) -> Any:
        from ..errors import InvalidInputError

        unknown = set(changes) - {"content", "importance", "memory_type", "metadata"}
        if unknown:
            raise InvalidInputError(f"update_memory() cannot change {', '.join(sorted(unknown))}")
        return memory.memories.update(user_id, memory_id, **changes)

    return update_memory


def _forget(memory: Any) -> Callable[..., Any]:
    from .admin import forget

    return lambda **kwargs: forget(memory._parts, **kwargs)


def _aforget(memory: Any) -> Callable[..., Any]:
    import asyncio

    from .admin import forget

    async def aforget(**kwargs: Any) -> Any:
        return await asyncio.to_thread(lambda: forget(memory._parts, **kwargs))

    return aforget


def _group(group: str, name: str) -> Callable[[Any], Any]:
    return lambda memory: getattr(getattr(memory, group), name)


def _adapter(name: str) -> Callable[[Any], Any]:
    return lambda memory: memory._adapter(name)


def _built(name: str) -> Callable[[Any], Any]:
    # Made anew at each call, as the old methods made them.
    return lambda memory: lambda *args: build(memory, name, *args)


def _parts(name: str) -> Callable[[Any], Any]:
    return lambda memory: getattr(memory._parts, name)


#: Each old name: its new spelling (said in the warning), and what it now resolves to.
RENAMED: dict[str, tuple[str, Callable[[Any], Any]]] = {
    **{old: (f"memory.memories.{new}", _group("memories", new)) for old, new in {
        "remember": "remember", "remember_many": "remember_many", "aremember": "aremember",
        "search": "search", "asearch": "asearch", "get_memory": "get", "list_memories": "list",
    }.items()},
    "update_memory": ("memory.memories.update", _update),
    "search_episodes": ("memory.episodes.search", _group("episodes", "search")),
    "entity": ("memory.entities.get", _group("entities", "get")),
    **{old: (f"memory.threads.{new}", _group("threads", new)) for old, new in {
        "get_messages": "messages", "users": "users", "summary": "summary", "recorded_ids": "recorded_ids",
    }.items()},
    **{name: (f"memory.admin.{name}", _group("admin", name)) for name in (
        "stats", "scrub", "reindex", "optimize", "export_user", "import_user", "jobs", "extractor", "counter",
        "embeddings",
    )},
    "forget": ("memory.admin.forget (memory.memories.forget for one memory)", _forget),
    "aforget": ("memory.admin.aforget (memory.memories.aforget for one memory)", _aforget),
    "storage": ("the grouped APIs, and memory.admin.database() for a connection", _parts("storage")),
    "model": ("the chat model you passed in (memory.admin.extractor uses it)", _parts("model")),
    "async_checkpointer": (
        "AsyncTieredCheckpointSaver(memory) (AsyncPostgresTieredCheckpointSaver(memory) with database_url)",
        _adapter("async_checkpointer"),
    ),
    "pre_model_hook": ("pre_model_hook(memory) (from langchain_tiered_memory)", _adapter("pre_model_hook")),
    "post_model_hook": ("post_model_hook(memory) (from langchain_tiered_memory)", _adapter("post_model_hook")),
    "chat_history": ("TieredChatMessageHistory(memory, user_id, thread_id)", _built("chat_history")),
    "as_vectorstore": ("MemoryVectorStore(memory, user_id)", _built("vectorstore")),
}


if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping, Sequence
    from datetime import datetime

    from langchain_core.chat_history import BaseChatMessageHistory
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from typing_extensions import deprecated

    from ..entries import MemoryEntry
    from ..extraction import Extractor
    from ..jobs import JobJournal
    from ..layers.entities import Entity
    from ..layers.episodes import EpisodeHit
    from ..storage import Storage
    from ..tokens import TokenCounter
    from ..views import MemoryStats, SearchResults

    class DeprecatedNames:
        """The old names, typed (see the module docs)."""

        @deprecated("use memory.memories.remember")
        def remember(
            self, user_id: str, content: str, memory_type: str = "fact", importance: float = 0.5,
            metadata: dict[str, Any] | None = None, *, session_id: str | None = None,
            memory_id: str | None = None, merge: bool = True,
        ) -> str: ...
        @deprecated("use memory.memories.aremember")
        async def aremember(
            self, user_id: str, content: str, memory_type: str = "fact", importance: float = 0.5,
            metadata: dict[str, Any] | None = None, *, session_id: str | None = None,
            memory_id: str | None = None, merge: bool = True,
        ) -> str: ...
        @deprecated("use memory.memories.remember_many")
        def remember_many(
            self, user_id: str, items: Iterable[Mapping[str, Any]], *, merge: bool = True
        ) -> list[str]: ...
        @deprecated("use memory.memories.search")
        def search(
            self, user_id: str, query: str, k: int = 5, memory_types: Sequence[str] | None = None,
            min_importance: float | None = None, explain: bool = False, *, peek: bool = False,
        ) -> SearchResults: ...
        @deprecated("use memory.memories.asearch")
        async def asearch(
            self, user_id: str, query: str, k: int = 5, memory_types: Sequence[str] | None = None,
            min_importance: float | None = None, explain: bool = False, *, peek: bool = False,
        ) -> SearchResults: ...
        @deprecated("use memory.memories.get")
        def get_memory(self, user_id: str, memory_id: str) -> MemoryEntry: ...
        @deprecated("use memory.memories.update")
        def update_memory(self, user_id: str, memory_id: str, **changes: Any) -> MemoryEntry: ...
        @deprecated("use memory.memories.list")
        def list_memories(
            self, user_id: str, memory_types: Sequence[str] | None = None, limit: int = 100, offset: int = 0
        ) -> list[MemoryEntry]: ...
        @deprecated("use memory.episodes.search")
        def search_episodes(
            self, user_id: str, query: str | None = None, since: datetime | None = None,
            until: datetime | None = None, k: int = 5,
        ) -> list[EpisodeHit]: ...
        @deprecated("use memory.entities.get")
        def entity(self, user_id: str, name: str) -> Entity | None: ...
        @deprecated("use memory.threads.messages")
        def get_messages(self, user_id: str, thread_id: str) -> list[BaseMessage]: ...
        @deprecated("use memory.threads.users")
        def users(self) -> list[str]: ...
        @deprecated("use memory.threads.summary")
        def summary(self, user_id: str, thread_id: str) -> str | None: ...
        @deprecated("use memory.threads.recorded_ids")
        def recorded_ids(self, user_id: str, thread_id: str, message_ids: Sequence[str]) -> set[str]: ...
        @deprecated("use memory.admin.stats")
        def stats(self) -> MemoryStats: ...
        @deprecated("use memory.admin.forget, or memory.memories.forget for one memory")
        def forget(
            self, *, user_id: str | None = None, thread_id: str | None = None, entity: str | None = None,
            memory_id: str | None = None,
        ) -> dict[str, int]: ...
        @deprecated("use memory.admin.aforget, or memory.memories.aforget for one memory")
        async def aforget(
            self, *, user_id: str | None = None, thread_id: str | None = None, entity: str | None = None,
            memory_id: str | None = None,
        ) -> dict[str, int]: ...
        @deprecated("use memory.admin.scrub")
        def scrub(self, wait_seconds: float | None = None) -> bool: ...
        @deprecated("use memory.admin.reindex")
        def reindex(self, progress: Callable[[int, int], None] | None = None) -> dict[str, int]: ...
        @deprecated("use memory.admin.optimize")
        def optimize(self) -> None: ...
        @deprecated("use memory.admin.export_user")
        def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]: ...
        @deprecated("use memory.admin.import_user")
        def import_user(
            self, user_id: str, data: Mapping[str, Sequence[dict[str, Any]]], *,
            progress: Callable[[int, int], None] | None = None,
        ) -> dict[str, int]: ...
        @property
        @deprecated("use memory.admin.jobs")
        def jobs(self) -> JobJournal: ...
        @property
        @deprecated("use memory.admin.extractor")
        def extractor(self) -> Extractor: ...
        @property
        @deprecated("use memory.admin.counter")
        def counter(self) -> TokenCounter: ...
        @property
        @deprecated("use memory.admin.embeddings")
        def embeddings(self) -> Any: ...
        @property
        @deprecated("keep the chat model you passed in")
        def model(self) -> BaseChatModel | None: ...
        @property
        @deprecated("use the grouped APIs, and memory.admin.database() for a connection")
        def storage(self) -> Storage: ...
        @property
        @deprecated("build it: AsyncTieredCheckpointSaver(memory)")
        def async_checkpointer(self) -> BaseCheckpointSaver[str]: ...
        @property
        @deprecated("build it: pre_model_hook(memory)")
        def pre_model_hook(self) -> Callable[..., Any]: ...
        @property
        @deprecated("build it: post_model_hook(memory)")
        def post_model_hook(self) -> Callable[..., Any]: ...
        @deprecated("build it: TieredChatMessageHistory(memory, user_id, thread_id)")
        def chat_history(self, user_id: str, thread_id: str) -> BaseChatMessageHistory: ...
        @deprecated("build it: MemoryVectorStore(memory, user_id)")
        def as_vectorstore(self, user_id: str) -> Any: ...

else:

    class DeprecatedNames:
        """Resolves the old names of the facade, each with a ``DeprecationWarning``."""

        __slots__ = ()

        def __getattr__(self, name: str) -> Any:
            renamed = RENAMED.get(name)
            if renamed is None:
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            new, resolve = renamed
            warn_renamed(name, new)
            return resolve(self)

"""The adapters of a memory: a registry the integrations fill, and the facade's accessors.

``TieredMemory.store``, ``.checkpointer``, ``.pre_model_hook`` and the rest build on the
memory's public methods; the modules that build them (``integrations``) sit above the
facade and register a factory by name (:func:`register_adapter`) when imported, so the
facade finds them by name at call time and imports none of them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .entries import check_id
from .errors import ConfigError

if TYPE_CHECKING:
    from langchain_core.chat_history import BaseChatMessageHistory
    from langgraph.checkpoint.base import BaseCheckpointSaver
    from langgraph.store.base import BaseStore

__all__ = ["AdapterAccess", "register_adapter", "registered"]

# name -> factory(memory, *args): the adapters, registered by ``integrations``.
_ADAPTERS: dict[str, Callable[..., Any]] = {}


def register_adapter(name: str, factory: Callable[..., Any]) -> None:
    """Make ``factory(memory)`` what ``memory.<name>`` returns (``store``, ``checkpointer``, …).

    Adapters register themselves when ``langchain_tiered_memory.integrations`` is imported
    (the package does it), so the facade never imports them.
    """
    _ADAPTERS[name] = factory


def registered(name: str) -> Callable[..., Any]:
    """The adapter factory ``name``, registering the adapters first if no import did yet
    (the package root loads lazily, so ``from langchain_tiered_memory.memory import
    TieredMemory`` may come first). By name, at call time: no import edge to the adapters."""
    if name not in _ADAPTERS:
        import importlib

        importlib.import_module(f"{__package__}.integrations")
    factory = _ADAPTERS.get(name)
    if factory is None:
        raise ConfigError(f"no {name!r} adapter is registered; import langchain_tiered_memory.integrations")
    return factory


class AdapterAccess:
    """The adapter accessors of :class:`~langchain_tiered_memory.TieredMemory` (a mixin):
    each adapter is built once per memory, on first use, and closed with it."""

    _adapters: dict[str, Any]
    _adapter_lock: threading.Lock

    def _check_open(self) -> None:
        raise NotImplementedError  # the memory's own: raises once it is closed

    def _adapter(self, name: str) -> Any:
        self._check_open()
        with self._adapter_lock:
            if name not in self._adapters:
                self._adapters[name] = registered(name)(self)
            return self._adapters[name]

    @property
    def store(self) -> BaseStore:
        """This memory as a LangGraph ``BaseStore`` (``graph.compile(store=memory.store)``)."""
        return self._adapter("store")  # type: ignore[no-any-return]

    @property
    def checkpointer(self) -> BaseCheckpointSaver[str]:
        """A LangGraph checkpointer keeping thread state in this memory's database
        (``graph.compile(checkpointer=memory.checkpointer)``)."""
        return self._adapter("checkpointer")  # type: ignore[no-any-return]

    @property
    def async_checkpointer(self) -> BaseCheckpointSaver[str]:
        """The async checkpointer over the same database, for ``ainvoke``/``astream`` graphs."""
        return self._adapter("async_checkpointer")  # type: ignore[no-any-return]

    @property
    def pre_model_hook(self) -> Callable[..., Any]:
        """``create_react_agent(pre_model_hook=...)``: the budgeted context as the model's
        input, without rewriting the graph's messages. Ids from ``config["configurable"]``."""
        return self._adapter("pre_model_hook")  # type: ignore[no-any-return]

    @property
    def post_model_hook(self) -> Callable[..., Any]:
        """``create_react_agent(post_model_hook=...)``: records the turn in every layer."""
        return self._adapter("post_model_hook")  # type: ignore[no-any-return]

    def chat_history(self, user_id: str, thread_id: str) -> BaseChatMessageHistory:
        """A LangChain ``BaseChatMessageHistory`` over this thread (budgeted ``messages``)."""
        self._check_open()
        return registered("chat_history")(self, user_id, thread_id)  # type: ignore[no-any-return]

    def as_vectorstore(self, user_id: str) -> Any:
        """A LangChain ``VectorStore`` over ``user_id``'s long-term memories."""
        check_id("user_id", user_id)
        return registered("vectorstore")(self, user_id)

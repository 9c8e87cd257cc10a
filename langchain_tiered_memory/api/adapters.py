"""The slot the facade builds its adapters through (``memory.store``, ``memory.checkpointer``,
and the inspector of ``memory.admin.serve``).

The adapters live in ``integrations/`` and the inspector in ``inspector/``, above the facade,
so the facade must not import them. The package root — executed before any of its submodules — fills this slot with a
function that imports them plainly (``langchain_tiered_memory/__init__.py``); the facade
calls it. No import edge runs upward, and no module is found by name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import ConfigError

__all__ = ["build", "provide"]

#: ``factory(memory, name, *args)``: the adapter ``name`` of ``memory``.
_factory: Callable[..., Any] | None = None


def provide(factory: Callable[..., Any]) -> None:
    """Set the function that builds adapters (the package root does, once)."""
    global _factory
    _factory = factory


def build(memory: Any, name: str, *args: Any) -> Any:
    """The adapter ``name`` (``store``, ``checkpointer``, ``async_checkpointer``,
    ``pre_model_hook``, ``post_model_hook``, ``chat_history``, ``vectorstore``) of ``memory``,
    or its running ``inspector`` (``memory.admin.serve``)."""
    if _factory is None:  # pragma: no cover - the package root always runs first
        raise ConfigError("no adapter factory is set; import langchain_tiered_memory first")
    return _factory(memory, name, *args)

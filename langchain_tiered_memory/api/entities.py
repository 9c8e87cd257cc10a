"""``memory.entities``: the profiles of the people, places and things each user talks about."""

from __future__ import annotations

import builtins

from ..entries import check_id
from ..layers.entities import Entity
from .deprecation import warn_renamed
from .parts import Parts

__all__ = ["Entities"]


class Entities:
    """The entity profiles of each user: ``memory.entities``.

    An entity has a name, a type and attributes, each with its history (what it was, when
    it changed, from which message). Extraction writes them; ``memory.admin.forget(user_id=,
    entity=)`` deletes one.
    """

    def __init__(self, parts: Parts) -> None:
        self._parts = parts

    def list(self, user_id: str) -> builtins.list[Entity]:
        """The user's entity profiles, most recently updated first."""
        self._parts.check_open()
        check_id("user_id", user_id)
        return self._parts.entities.all(user_id)

    def get(self, user_id: str, name: str) -> Entity | None:
        """One entity profile with its attribute history; names match case-insensitively."""
        self._parts.check_open()
        check_id("user_id", user_id)
        return self._parts.entities.get(user_id, name)

    def __call__(self, user_id: str) -> builtins.list[Entity]:
        """Deprecated: ``memory.entities(user_id)`` was a method; use :meth:`list`."""
        warn_renamed("entities(user_id)", "memory.entities.list(user_id)")
        return self.list(user_id)

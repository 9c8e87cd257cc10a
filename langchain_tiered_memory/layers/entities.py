"""Entity memory: per-user profiles (name, type, attributes with their history).

Profiles live in SQLite with an FTS5 index over names, types and current attribute values.
A new value of an attribute supersedes the old one, which is kept with when it was learned,
from which message, and when it was superseded. Names match case- and
whitespace-insensitively: "alice  SMITH" is "Alice Smith".
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from typing import TYPE_CHECKING

from ..context import ContextSection
from .sections import SectionRequest, section_of_lines
from ..entries import check_text
from ..errors import InvalidInputError
from ..fence import quote_key
from ..storage.rows import EntityRow, EntityUpdate
from ..views import AttributeValue as AttributeValue, Entity as Entity  # re-exported: the layer's values
from ..vocabulary import RELATION_ATTRIBUTE, SELF, USER_ENTITY

if TYPE_CHECKING:
    from ..storage import Storage
    from ..tokens import TokenCounter

_WORD = re.compile(r"\w+", re.UNICODE)
# Words that match too much to say what a query is about.
_STOPWORDS = frozenset(
    "a an and are as at be but by can could did do does for from had has have he her his how i "
    "if in into is it its me my no not of on or our she so that the their them then there they "
    "this to was we were what when where which who why will with would you your".split()
)
MAX_ENTITIES_IN_CONTEXT = 10


def name_key(name: str) -> str:
    """The matching key of an entity name: NFKC, case-folded, whitespace collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def to_entity(row: EntityRow) -> Entity:
    """An :class:`Entity` from its storage row."""
    current: dict[str, str] = {}
    history: dict[str, list[AttributeValue]] = {}
    for a in row.attributes:
        history.setdefault(a.key, []).append(
            AttributeValue(a.value, a.learned_at, a.source, a.source_message, a.superseded_at)
        )
        if a.superseded_at is None:
            current[a.key] = a.value
    return Entity(row.name, row.type, current, row.created_at, row.updated_at, history)


#: The attribute and value that mark the user's own profile.
SELF_RELATION = (RELATION_ATTRIBUTE, SELF)


def updates(
    extracted: Sequence[object], source_message: str | None = None, self_name: str | None = None
) -> list[EntityUpdate]:
    """Storage updates from extracted entities (``name``, ``type``, ``attributes``), merged by name.

    An entity named ``"user"`` is the user's own profile: with ``self_name`` (the name the
    user gave earlier) it is filed under that name, so "I moved to Berlin" updates "Alice".
    """
    merged: dict[str, EntityUpdate] = {}
    for e in extracted:
        name = " ".join(str(getattr(e, "name", "")).split())
        if self_name and name_key(name) == USER_ENTITY:
            name = self_name
        if not name:
            continue
        key = name_key(name)
        attrs = {
            " ".join(str(k).split()).casefold(): " ".join(str(v).split())
            for k, v in (getattr(e, "attributes", None) or {}).items()
            if str(k).strip() and str(v).strip()
        }
        kind = str(getattr(e, "type", "") or "other").strip().casefold() or "other"
        if key in merged:
            prev = merged[key]
            attrs = {**prev.attributes, **attrs}
            kind = prev.type if kind == "other" else kind
        merged[key] = EntityUpdate(name, key, kind, attrs, source_message)
    return list(merged.values())


#: Most words of a query an entity search matches: one FTS5 term per word, and a
#: 170,000-term match took 4 s per turn when a whole book was the turn's message.
MAX_QUERY_TERMS = 64


def query_terms(query: str) -> list[str]:
    """The content words of ``query`` (what an entity search matches any of), the first
    :data:`MAX_QUERY_TERMS` distinct ones."""
    words = dict.fromkeys(w for w in _WORD.findall(query.casefold()) if len(w) > 1 and w not in _STOPWORDS)
    return list(words)[:MAX_QUERY_TERMS]


def render(entity: Entity) -> str:
    """One line of the entities section (whitespace collapsed: one entity, one line)."""
    # A key is quoted as the words it joins with "_" (fence.quote_key); the section's text is
    # quoted as a whole when the block is rendered.
    shown = dict(entity.attributes)
    head = f"{entity.name} ({entity.type})"
    if name_key(entity.name) == USER_ENTITY and shown.get(RELATION_ATTRIBUTE) == SELF:
        # The user's own profile before they gave a name: "user" is the placeholder it is
        # kept under, not a person called User (it takes their name once they say it).
        shown.pop(RELATION_ATTRIBUTE)
        head = "the user (no name given yet)"
    attrs = "; ".join(f"{quote_key(k)}: {v}" for k, v in shown.items())
    line = f"- {head}" + (f": {attrs}" if attrs else "")
    return " ".join(line.split())


class EntityLayer:
    """Reads entity profiles and contributes the ``entities`` section of the context."""

    name = "entities"

    def __init__(self, storage: Storage, counter: TokenCounter, max_tokens: int) -> None:
        self._storage = storage
        self._counter = counter
        self._max_tokens = max_tokens

    def all(self, user_id: str) -> list[Entity]:
        """The user's entities, most recently updated first."""
        return [to_entity(r) for r in self._storage.entities.of_user(user_id)]

    def get(self, user_id: str, name: str) -> Entity | None:
        """One entity by name (case- and whitespace-insensitive), with its history."""
        if not isinstance(name, str) or not check_text(name, "an entity name").strip():
            raise InvalidInputError("an entity name must be a non-empty str")
        row = self._storage.entities.get(user_id, name_key(name))
        return to_entity(row) if row else None

    def self_name(self, user_id: str) -> str | None:
        """The name of the user's own profile, once the user has said it."""
        for row in self._storage.entities.search(user_id, [SELF], 20):
            entity = to_entity(row)
            key, value = SELF_RELATION
            if entity.attributes.get(key) == value and name_key(entity.name) != USER_ENTITY:
                return entity.name
        return None

    def relevant(
        self, user_id: str, query: str | None, limit: int = MAX_ENTITIES_IN_CONTEXT, *, fill: bool = True
    ) -> list[Entity]:
        """Entities matching the query's terms (best first), then (``fill``) the most recent
        ones."""
        found: list[EntityRow] = []
        terms = query_terms(query) if query else []
        if terms:
            found = self._storage.entities.search(user_id, terms, limit)
        if fill and len(found) < limit:
            seen = {r.id for r in found}
            found += [r for r in self._storage.entities.of_user(user_id, limit) if r.id not in seen]
        return [to_entity(r) for r in found[:limit]]

    def section(self, request: SectionRequest, max_tokens: int) -> ContextSection | None:
        """The entities relevant to the query, one line each, within the token budget."""
        lines = (render(entity) for entity in self.relevant(request.user_id, request.query))
        return section_of_lines(self.name, lines, self._counter, min(max_tokens, self._max_tokens))

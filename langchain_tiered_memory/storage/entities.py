"""Entity profiles: per-user entities whose attributes keep their history.

A new value of an attribute supersedes the old one, which is kept with when it was learned,
from which message and when it was superseded. Names, types and current values are indexed
for full-text search, each database its own way (``text_search.py``: FTS5 on SQLite, a
``tsvector`` on PostgreSQL).
"""

from __future__ import annotations

from ..vocabulary import MANY_VALUED_ATTRIBUTES, RELATION_ATTRIBUTE, SELF, USER_ENTITY, VALUE_SEPARATOR
from .database import Database, Tx, chunks
from .rows import AttributeRow, EntityRow, EntityUpdate

_VAGUE_TYPES = ("", "other", "topic")


class Entities:
    """The entity profiles of every user."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def of_user(self, user_id: str, limit: int | None = None) -> list[EntityRow]:
        """The user's entities, most recently updated first, with current attributes."""
        sql = "SELECT id FROM entities WHERE user_id = ? ORDER BY updated_at DESC, id DESC"
        args: tuple[object, ...] = (user_id,)
        if limit is not None:  # no "LIMIT -1": PostgreSQL refuses a negative limit
            sql, args = sql + " LIMIT ?", (user_id, limit)
        with self.db.read() as tx:
            return entity_rows(tx, tx.column(sql, args), history=False)

    def get(self, user_id: str, name_key: str) -> EntityRow | None:
        """One entity by normalised name, with its whole attribute history."""
        with self.db.read() as tx:
            entity_id = tx.scalar(
                "SELECT id FROM entities WHERE user_id = ? AND name_key = ?", (user_id, name_key)
            )
            return entity_rows(tx, [entity_id], history=True)[0] if entity_id is not None else None

    def search(self, user_id: str, terms: list[str], limit: int) -> list[EntityRow]:
        """The user's entities matching any of ``terms`` (words), best first, then newest."""
        if not terms:
            return []
        with self.db.read() as tx:
            ids = tx.dialect.text_search.match(tx, user_id, terms, limit)
            return entity_rows(tx, ids, history=False)

    def count(self) -> int:
        """Entities of every user."""
        with self.db.read() as tx:
            return int(tx.scalar("SELECT COUNT(*) FROM entities"))


def delete_entities(tx: Tx, where: str, args: tuple[object, ...]) -> int:
    """Delete the entities matching ``where`` (over ``entities``) and their history."""
    ids = tx.column(f"SELECT id FROM entities WHERE {where}", args)
    for chunk in chunks(ids):
        tx.execute(f"DELETE FROM entity_attributes WHERE entity_id IN {tx.in_list(chunk)}", chunk)
        tx.execute(f"DELETE FROM entities WHERE id IN {tx.in_list(chunk)}", chunk)
    return len(ids)


def upsert_entity(tx: Tx, user_id: str, thread_id: str, update: EntityUpdate, now: str) -> None:
    """Merge what one turn says of an entity into its profile, keeping the history."""
    row = tx.one(
        "SELECT id, type FROM entities WHERE user_id = ? AND name_key = ?", (user_id, update.name_key)
    )
    if row is None and update.attributes.get(RELATION_ATTRIBUTE) == SELF and update.name_key != USER_ENTITY:
        # The user says their name: the profile kept under the placeholder until now becomes
        # theirs, attributes and history with it (one profile, never "user" beside "Alice").
        row = tx.one(
            "SELECT e.id, e.type FROM entities e JOIN entity_attributes a ON a.entity_id = e.id "
            "WHERE e.user_id = ? AND e.name_key = ? AND a.key = ? AND a.value = ? AND a.superseded_at IS NULL",
            (user_id, USER_ENTITY, RELATION_ATTRIBUTE, SELF),
        )
        if row is not None:
            tx.execute("UPDATE entities SET name_key = ? WHERE id = ?", (update.name_key, row[0]))
    if row is None:
        entity_id = tx.insert(
            "INSERT INTO entities (user_id, name, name_key, type, search_text, source, created_at, "
            "updated_at) VALUES (?, ?, ?, ?, '', ?, ?, ?) RETURNING id",
            (user_id, update.name, update.name_key, update.type, thread_id, now, now),
        )
    else:
        entity_id = row[0]
        # A vague type never overwrites a specific one learned before.
        kind = row[1] if update.type in _VAGUE_TYPES and row[1] not in ("", "other") else update.type
        tx.execute(
            "UPDATE entities SET name = ?, type = ?, updated_at = ? WHERE id = ?",
            (update.name, kind, now, entity_id),
        )
    current = dict(
        tx.all(
            "SELECT key, value FROM entity_attributes WHERE entity_id = ? AND superseded_at IS NULL",
            (entity_id,),
        )
    )
    for key, value in update.attributes.items():
        old = current.get(key)
        if old is not None and key.casefold() in MANY_VALUED_ATTRIBUTES:
            value = joined_values(old, value)
        if old is not None and old.casefold() == value.casefold():
            continue  # learned again, not changed: history records changes only
        if old is not None:
            tx.execute(
                "UPDATE entity_attributes SET superseded_at = ? WHERE entity_id = ? AND key = ? "
                "AND superseded_at IS NULL",
                (now, entity_id, key),
            )
        tx.execute(
            "INSERT INTO entity_attributes (entity_id, key, value, learned_at, source, "
            "source_message) VALUES (?, ?, ?, ?, ?, ?)",
            (entity_id, key, value, now, thread_id, update.source_message),
        )
    refresh_search_text(tx, entity_id)


def joined_values(old: str, new: str) -> str:
    """A many-valued attribute's items with the new ones added, each once, in the order
    learned (``"flying, crowded places"`` + ``"mushrooms"``)."""
    items = [i.strip() for i in old.split(VALUE_SEPARATOR.strip()) if i.strip()]
    seen = {i.casefold() for i in items}
    for item in (i.strip() for i in new.split(VALUE_SEPARATOR.strip())):
        if item and item.casefold() not in seen:
            seen.add(item.casefold())
            items.append(item)
    return VALUE_SEPARATOR.join(items)


def refresh_search_text(tx: Tx, entity_id: int) -> None:
    """Index an entity's type and current attributes beside its name."""
    row = tx.one("SELECT name, type FROM entities WHERE id = ?", (entity_id,))
    if row is None:
        return
    name, kind = row
    pairs = tx.all(
        "SELECT key, value FROM entity_attributes WHERE entity_id = ? AND superseded_at IS NULL "
        "ORDER BY id",
        (entity_id,),
    )
    text = " ".join([kind, *(f"{k} {v}" for k, v in pairs)])
    tx.dialect.text_search.index(tx, entity_id, name, text)


def entity_rows(tx: Tx, ids: list[int], *, history: bool) -> list[EntityRow]:
    """The entities ``ids`` in that order, with current attributes or the whole history."""
    if not ids:
        return []
    marks = tx.in_list(ids)
    entities = {
        r[0]: r
        for r in tx.all(
            f"SELECT id, user_id, name, name_key, type, created_at, updated_at FROM entities WHERE id IN {marks}",
            ids,
        )
    }
    attrs: dict[int, list[AttributeRow]] = {i: [] for i in ids}
    current = "" if history else " AND superseded_at IS NULL"
    for entity_id, *fields in tx.all(
        "SELECT entity_id, key, value, learned_at, source, source_message, superseded_at "
        f"FROM entity_attributes WHERE entity_id IN {marks}{current} ORDER BY id",
        ids,
    ):
        attrs[entity_id].append(AttributeRow(*fields))
    return [
        EntityRow(*entities[i][:7], attributes=tuple(attrs[i]))  # type: ignore[misc]
        for i in ids if i in entities
    ]

"""LangGraph store items: namespaced JSON documents, with optional TTLs and vectors.

An item in a user's memories namespace is the *address* of a long-term memory
(``memory_id``): the memory row owns its text, the item its key, value and place.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from .database import Database, Tx, chunks
from .rows import StoreRow

_COLUMNS = "id, namespace, key, value, vectors, created_at, updated_at, memory_id"


def ns_path(namespace: Sequence[str]) -> str:
    """A namespace as text whose prefixes are the namespace's prefixes (unit separators)."""
    return "".join(f"{label}\x1f" for label in namespace)


#: The first label of the store's long-term memory namespaces: ``("memories", user_id, ...)``.
MEMORY_NAMESPACE = "memories"


def names_user(namespace: str | Sequence[str], user_id: str) -> bool:
    """Whether a namespace (a sequence, or its JSON) belongs to the user: the user first, or
    second (after a kind such as ``"memories"`` or ``"profiles"``). A memory namespace
    belongs to its second label only: a user named ``"memories"`` owns no other user's."""
    labels = json.loads(namespace) if isinstance(namespace, str) else list(namespace)
    if labels[:1] == [MEMORY_NAMESPACE]:
        return labels[1:2] == [user_id]
    return user_id in labels[:2]


def store_row(r: Sequence[Any]) -> StoreRow:
    """A :class:`StoreRow` from the columns after ``id`` of :data:`_COLUMNS`."""
    return StoreRow(tuple(json.loads(r[1])), r[2], json.loads(r[3]),
                    None if r[4] is None else json.loads(r[4]), r[5], r[6], r[7])


def delete_user_items(tx: Tx, user_id: str) -> int:
    """Delete the items whose namespace belongs to the user."""
    ids = [r[0] for r in tx.all("SELECT id, namespace FROM store_items") if names_user(r[1], user_id)]
    for chunk in chunks(ids):
        tx.execute(f"DELETE FROM store_items WHERE id IN {tx.in_list(chunk)}", chunk)
    return len(ids)


def insert_items(tx: Tx, items: Sequence[Mapping[str, Any]]) -> None:
    """Insert exported items (``namespace``, ``key``, ``value``, ``vectors``, times, TTL)."""
    tx.executemany(
        "INSERT INTO store_items (ns_path, namespace, key, value, vectors, created_at, updated_at, "
        "ttl_minutes, expires_at, memory_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(ns_path(i["namespace"]), json.dumps(list(i["namespace"])), i["key"],
          json.dumps(i["value"], ensure_ascii=False),
          None if i.get("vectors") is None else json.dumps(i["vectors"]),
          i["created_at"], i["updated_at"], i.get("ttl_minutes"), i.get("expires_at"),
          i.get("memory_id"))
         for i in items],
    )


class StoreItems:
    """Every store item."""

    def __init__(self, db: Database) -> None:
        self.db = db

    def put(
        self,
        namespace: Sequence[str],
        key: str,
        value: dict[str, Any] | None,
        *,
        vectors: dict[str, list[float]] | None = None,
        ttl_minutes: float | None = None,
        memory_id: str | None = None,
        now: str,
    ) -> None:
        """Insert, replace (keeping ``created_at`` and the item's place) or, with
        ``value=None``, delete."""
        path = ns_path(namespace)
        with self.db.write() as tx:
            if value is None:
                item_id = tx.scalar("SELECT id FROM store_items WHERE ns_path = ? AND key = ?", (path, key))
                if item_id is not None:
                    tx.execute("DELETE FROM store_items WHERE id = ?", (item_id,))
                    # Items are listed namespace by namespace, in the order the namespaces
                    # got their first item (InMemoryStore's order): if this was the oldest,
                    # the next-oldest takes its id, so the namespace keeps its place.
                    tx.execute(
                        "UPDATE store_items SET id = ? WHERE id = "
                        "(SELECT MIN(id) FROM store_items WHERE ns_path = ?) AND id > ?",
                        (item_id, path, item_id),
                    )
                return
            expires = None if ttl_minutes is None else time.time() + ttl_minutes * 60
            tx.execute(
                "INSERT INTO store_items (ns_path, namespace, key, value, vectors, created_at, "
                "updated_at, ttl_minutes, expires_at, memory_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(ns_path, key) DO UPDATE SET value = excluded.value, "
                "vectors = excluded.vectors, updated_at = excluded.updated_at, "
                "ttl_minutes = excluded.ttl_minutes, expires_at = excluded.expires_at, "
                "memory_id = excluded.memory_id",
                (path, json.dumps(list(namespace)), key, json.dumps(value, ensure_ascii=False),
                 None if vectors is None else json.dumps(vectors), now, now, ttl_minutes, expires,
                 memory_id),
            )

    def items(
        self, prefix: Sequence[str], key: str | None = None, *, refresh_ttl: bool = False
    ) -> list[StoreRow]:
        """Live items under a namespace prefix (or one item), in insertion order."""
        now = time.time()
        path = ns_path(prefix)
        sql = (
            f"SELECT {_COLUMNS} FROM store_items "
            "WHERE substr(ns_path, 1, ?) = ? AND (expires_at IS NULL OR expires_at > ?)"
        )
        args: list[Any] = [len(path), path, now]
        if key is not None:
            sql, args = sql + " AND ns_path = ? AND key = ?", [*args, path, key]
        with self.db.read() as tx:
            rows = tx.all(sql + " ORDER BY id", args)
        if refresh_ttl and rows:
            with self.db.write() as tx:
                tx.executemany(
                    "UPDATE store_items SET expires_at = ? + ttl_minutes * 60 WHERE id = ? "
                    "AND ttl_minutes IS NOT NULL",
                    [(now, r[0]) for r in rows],
                )
        return [store_row(r) for r in rows]

    def refresh(self, items: Sequence[tuple[Sequence[str], str]]) -> None:
        """Restart the TTL of these ``(namespace, key)`` items (of those that have one)."""
        if not items:
            return
        now = time.time()
        with self.db.write() as tx:
            tx.executemany(
                "UPDATE store_items SET expires_at = ? + ttl_minutes * 60 "
                "WHERE ns_path = ? AND key = ? AND ttl_minutes IS NOT NULL",
                [(now, ns_path(namespace), key) for namespace, key in items],
            )

    def namespaces(self) -> list[tuple[str, ...]]:
        """Every namespace holding a live item."""
        with self.db.read() as tx:
            rows = tx.column(
                "SELECT DISTINCT namespace FROM store_items WHERE expires_at IS NULL OR expires_at > ?",
                (time.time(),),
            )
        return [tuple(json.loads(r)) for r in rows]

    def sweep(self) -> int:
        """Delete expired items; returns how many."""
        with self.db.write() as tx:
            return tx.rowcount(
                "DELETE FROM store_items WHERE expires_at IS NOT NULL AND expires_at <= ?", (time.time(),)
            )

    def by_memory(self, memory_ids: Sequence[str]) -> dict[str, StoreRow]:
        """The store addresses of memories, by memory id (memories without one left out)."""
        out: dict[str, StoreRow] = {}
        with self.db.read() as tx:
            for chunk in chunks(list(memory_ids)):
                for r in tx.all(f"SELECT {_COLUMNS} FROM store_items WHERE memory_id IN {tx.in_list(chunk)}", chunk):
                    out[r[7]] = store_row(r)
        return out

    def loose_memory_users(self) -> list[str]:
        """Users with a memory that has no store address (made by ``remember``)."""
        with self.db.read() as tx:
            return tx.column(
                "SELECT DISTINCT m.user_id FROM memories m WHERE NOT EXISTS "
                "(SELECT 1 FROM store_items s WHERE s.memory_id = m.id)"
            )

    def count(self) -> int:
        """Live items."""
        with self.db.read() as tx:
            return int(tx.scalar(
                "SELECT COUNT(*) FROM store_items WHERE expires_at IS NULL OR expires_at > ?", (time.time(),)
            ))

"""One user's rows as plain data, and back: the relational half of export and import."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidInputError, ThreadOwnershipError
from .database import Database, Tx
from .entities import entity_rows, refresh_search_text
from .episodes import EPISODE_COLUMNS, episode_row, insert_episodes
from .jobs import enqueue
from .message_format import decode
from .memories import MEMORY_COLUMNS, aliases_of, insert_memories, memory_row
from .rows import EpisodeRow, MemoryRow
from .store_items import insert_items, names_user, ns_path
from .units import add_units, speaker_of


class Portability:
    """Export and import of one user's relational rows."""

    def __init__(self, db: Database, decay: float = 0.95) -> None:
        self.db = db
        self.decay = decay

    def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]:
        """Every row of the user as plain data, read in one snapshot.

        Keys: ``threads`` (with their watermarks), ``messages`` (their serialised form),
        ``summaries``, ``entities`` (each with its whole attribute history), ``memories``,
        ``episodes`` and ``store_items`` (live items whose namespace starts with the user or
        has it second; ``indexed`` says whether the item had vectors, which are not
        exported). Jobs are not: they are work in progress, journaled again on import.
        """
        with self.db.read(snapshot=True) as tx:
            return _export(tx, user_id)

    def import_user(
        self, user_id: str, data: Mapping[str, Sequence[Mapping[str, Any]]], *, counter: str, now: str
    ) -> dict[str, int]:
        """Restore rows of the shape :meth:`export_user` returns, in one transaction.

        Messages carry ``data`` (their serialised text) and ``tokens`` counted by
        ``counter``; memories are :class:`MemoryRow` fields; store items carry ``vectors``
        (or ``None``). Refused, writing nothing, when the user already has data here or a
        thread id, memory id or store item is taken: an import restores, it never merges. A
        thread whose extraction or summary was not done at export gets its job journaled
        again; memories and episodes are indexed after.
        """
        location = self.db.location
        with self.db.write() as tx:
            tx.serialize(user_id)
            has_rows = tx.one(
                "SELECT 1 FROM threads WHERE user_id = ? UNION ALL SELECT 1 FROM entities WHERE user_id = ? "
                "UNION ALL SELECT 1 FROM episodes WHERE user_id = ? "
                "UNION ALL SELECT 1 FROM memories WHERE user_id = ? LIMIT 1",
                (user_id, user_id, user_id, user_id),
            )
            if has_rows or any(names_user(ns, user_id) for ns in tx.column("SELECT namespace FROM store_items")):
                raise InvalidInputError(
                    f"user {user_id!r} already has data in {location}; an import restores into "
                    "a memory without them: forget the user first, or import into another data dir"
                )
            for t in data.get("threads", ()):
                owner = tx.scalar("SELECT user_id FROM threads WHERE thread_id = ?", (t["thread_id"],))
                if owner is not None:
                    raise ThreadOwnershipError(
                        f"thread {t['thread_id']!r} already exists in {location} (user {owner!r}); "
                        "thread ids are global: import into another data dir"
                    )
            for m in data.get("memories", ()):
                if tx.one("SELECT 1 FROM memories WHERE id = ? UNION ALL SELECT 1 FROM memory_aliases "
                          "WHERE alias = ?", (m["id"], m["id"])):
                    raise InvalidInputError(
                        f"memory id {m['id']!r} is already used in {location}; import into another data dir"
                    )
            for e in data.get("episodes", ()):
                if tx.one("SELECT 1 FROM episodes WHERE id = ?", (e["id"],)):
                    raise InvalidInputError(
                        f"episode id {e['id']!r} is already used in {location}; import into another data dir"
                    )
            for item in data.get("store_items", ()):
                if tx.one("SELECT 1 FROM store_items WHERE ns_path = ? AND key = ?",
                          (ns_path(item["namespace"]), item["key"])):
                    raise InvalidInputError(
                        f"store item {tuple(item['namespace'])!r}/{item['key']!r} already exists in "
                        f"{location}; import into another data dir"
                    )
            return self._write(tx, user_id, data, counter=counter, now=now)

    def _write(
        self, tx: Tx, user_id: str, data: Mapping[str, Sequence[Mapping[str, Any]]], *, counter: str, now: str
    ) -> dict[str, int]:
        keys: dict[str, int] = {}
        for t in data.get("threads", ()):
            keys[t["thread_id"]] = tx.insert(
                "INSERT INTO threads (thread_id, user_id, created_at, updated_at, next_seq, generation, "
                "evicted_through, summarized_through, extracted_through) VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?) "
                "RETURNING id",
                (t["thread_id"], user_id, t["created_at"], t["updated_at"], t["next_seq"],
                 t["evicted_through"], t["summarized_through"], t["extracted_through"]),
            )
        tx.executemany(
            "INSERT INTO messages (thread_key, user_id, seq, message_id, type, tool_calls, data, tokens, "
            "counter, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(keys[m["thread_id"]], user_id, m["seq"], m["message_id"], m["type"], m["tool_calls"],
              m["data"], m["tokens"], counter, m["created_at"]) for m in data.get("messages", ())],
        )
        for key in keys.values():
            stored = tx.all("SELECT seq, type, created_at, data FROM messages WHERE thread_key = ? ORDER BY seq", (key,))
            add_units(tx, user_id, key, [(seq, kind, at, speaker_of(kind, data)) for seq, kind, at, data in stored])
        tx.executemany(
            "INSERT INTO summaries (thread_key, user_id, text, tokens, first_seq, last_seq, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(keys[s["thread_id"]], user_id, s["text"], s["tokens"], s["first_seq"], s["last_seq"],
              s["updated_at"]) for s in data.get("summaries", ())],
        )
        for e in data.get("entities", ()):
            entity_id = tx.insert(
                "INSERT INTO entities (user_id, name, name_key, type, search_text, source, created_at, "
                "updated_at) VALUES (?, ?, ?, ?, '', ?, ?, ?) RETURNING id",
                (user_id, e["name"], e["name_key"], e["type"], e.get("source"), e["created_at"], e["updated_at"]),
            )
            tx.executemany(
                "INSERT INTO entity_attributes (entity_id, key, value, learned_at, source, source_message, "
                "superseded_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(entity_id, a["key"], a["value"], a["learned_at"], a.get("source"), a.get("source_message"),
                  a.get("superseded_at")) for a in e.get("attributes", ())],
            )
            refresh_search_text(tx, entity_id)
        insert_memories(tx, [MemoryRow(**{**m, "user_id": user_id}) for m in data.get("memories", ())], self.decay)
        insert_episodes(tx, [EpisodeRow(user_id=user_id, **ep) for ep in data.get("episodes", ())])
        insert_items(tx, list(data.get("store_items", ())))
        jobs = 0
        for t in data.get("threads", ()):
            last = t["next_seq"] - 1
            if last >= 0 and (t["extracted_through"] < last or t["evicted_through"] > t["summarized_through"]):
                jobs += enqueue(tx, "extract", user_id, keys[t["thread_id"]], {"through_seq": last}, now)
        return {
            "threads": len(keys),
            **{k: len(data.get(k, ())) for k in
               ("messages", "summaries", "entities", "memories", "episodes", "store_items")},
            "jobs": jobs,
        }


def _export(tx: Tx, user_id: str) -> dict[str, list[dict[str, Any]]]:
    threads = tx.all(
        "SELECT id, thread_id, created_at, updated_at, next_seq, evicted_through, "
        "summarized_through, extracted_through FROM threads WHERE user_id = ? ORDER BY id",
        (user_id,),
    )
    names = {r[0]: r[1] for r in threads}
    out: dict[str, list[dict[str, Any]]] = {
        "threads": [
            dict(zip(("thread_id", "created_at", "updated_at", "next_seq", "evicted_through",
                      "summarized_through", "extracted_through"), r[1:]))
            for r in threads
        ]
    }
    out["messages"] = [
        {"thread_id": names[key], "seq": seq, "message_id": mid, "created_at": created,
         "message": decode(data)}
        for key, seq, mid, created, data in tx.all(
            "SELECT thread_key, seq, message_id, created_at, data FROM messages "
            "WHERE user_id = ? ORDER BY thread_key, seq",
            (user_id,),
        )
        if key in names
    ]
    out["summaries"] = [
        {"thread_id": names[key], "text": text, "tokens": tokens, "first_seq": first,
         "last_seq": last, "updated_at": updated}
        for key, text, tokens, first, last, updated in tx.all(
            "SELECT thread_key, text, tokens, first_seq, last_seq, updated_at FROM summaries "
            "WHERE user_id = ? ORDER BY thread_key",
            (user_id,),
        )
        if key in names
    ]
    sources = dict(tx.all("SELECT id, source FROM entities WHERE user_id = ? ORDER BY id", (user_id,)))
    out["entities"] = [
        {"name": e.name, "type": e.type, "source": sources.get(e.id), "created_at": e.created_at,
         "updated_at": e.updated_at, "attributes": [dataclasses.asdict(a) for a in e.attributes]}
        for e in entity_rows(tx, list(sources), history=True)
    ]
    rows = tx.all(
        f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id = ? ORDER BY created_at, id", (user_id,)
    )
    aliases = aliases_of(tx, [r[0] for r in rows])
    out["memories"] = [dataclasses.asdict(memory_row(r, aliases.get(r[0]))) for r in rows]
    out["episodes"] = [
        {k: v for k, v in dataclasses.asdict(episode_row(r)).items() if k != "user_id"}
        for r in tx.all(
            f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE user_id = ? ORDER BY started_at, id", (user_id,)
        )
    ]
    out["store_items"] = [
        {"namespace": json.loads(ns), "key": key, "value": json.loads(value),
         "indexed": vectors is not None, "created_at": created, "updated_at": updated,
         "ttl_minutes": ttl, "expires_at": expires, "memory_id": memory_id}
        for ns, key, value, vectors, created, updated, ttl, expires, memory_id in tx.all(
            "SELECT namespace, key, value, vectors, created_at, updated_at, ttl_minutes, "
            "expires_at, memory_id FROM store_items WHERE expires_at IS NULL OR expires_at > ? ORDER BY id",
            (time.time(),),
        )
        if names_user(ns, user_id)
    ]
    return out

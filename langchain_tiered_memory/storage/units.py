"""The conversation as recall units: single turns and short windows of consecutive turns.

A unit is a row that names a span of one thread's log (``first_seq``..``last_seq``); the
messages own the text, the unit only says which of them one index point stands for. Units
are written with the messages, in the append's transaction, so every stored message becomes
searchable; ``indexed`` tracks their points as for memories.

A turn unit per user or assistant message; a window unit per :data:`WINDOW` consecutive
messages, one every :data:`STRIDE` (so each message is in two windows), written when its
last message is stored.

A turn of several sentences also keeps each sentence's vector (``unit_sentences``): a long
message is about several things, and recall reads it by its best sentence as well as whole.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .database import Database, Tx, chunks
from .marks import Indexed
from .message_format import decode, speaker_name

#: Messages per window unit, and the step between windows.
WINDOW = 4
STRIDE = 2
#: Message types that become turns (tool results and system prompts do not).
SPOKEN = ("human", "ai")
_UNITS = uuid.UUID("b7c1f3a2-5d8e-4f60-9a1b-3c2d4e5f6a7b")
_COLUMNS = "id, user_id, thread_key, grain, first_seq, last_seq, at, speaker"
#: Spans read per query (three variables each: within SQLite's and psycopg's limits).
_RANGES_PER_QUERY = 150
#: A spoken message as read: ``(seq, message_id, created_at, data, tokens)``.
Spoken = tuple[int, str, str, str, int]


@dataclass(frozen=True)
class UnitRow:
    """A unit of the conversation: which thread and which messages it spans."""

    id: str
    user_id: str
    thread_key: int
    grain: str
    first_seq: int
    last_seq: int
    at: str
    #: Who said it, for a turn: the message's ``name`` if it has one, else ``user`` or
    #: ``assistant``; ``None`` for a window (several speakers).
    speaker: str | None = None


def unit_id(thread_key: int, grain: str, first_seq: int) -> str:
    """The id of a unit: the same for the same span, for the life of the database."""
    return str(uuid.uuid5(_UNITS, f"{thread_key}\x1f{grain}\x1f{first_seq}"))


def speaker_of(kind: str, data: str) -> str | None:
    """Who said a stored message: its speaker's name (``name``, or written in front of its
    text), else ``user``/``assistant``."""
    if kind not in SPOKEN:
        return None
    return speaker_name(decode(data)) or ("user" if kind == "human" else "assistant")


def add_units(tx: Tx, user_id: str, thread_key: int, stored: Sequence[tuple[int, str, str, str | None]]) -> int:
    """Write the units that messages just stored complete: ``stored`` holds their
    ``(seq, type, at, speaker)``. Returns how many units were written."""
    rows = []
    for seq, kind, at, who in stored:
        if kind in SPOKEN:
            rows.append((unit_id(thread_key, "turn", seq), user_id, thread_key, "turn", seq, seq, at, who))
        first = seq - WINDOW + 1
        if first >= 0 and first % STRIDE == 0:
            start = tx.scalar(
                "SELECT created_at FROM messages WHERE thread_key = ? AND seq = ?", (thread_key, first)
            )
            rows.append((unit_id(thread_key, "window", first), user_id, thread_key, "window", first, seq,
                         start or at, None))
    tx.executemany(
        f"INSERT INTO units ({_COLUMNS}, indexed) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0) ON CONFLICT(id) DO NOTHING",
        rows,
    )
    return len(rows)


class Units(Indexed):
    """Every user's conversation units."""

    table = "units"

    def __init__(self, db: Database) -> None:
        self.db = db

    def count(self) -> int:
        """How many units there are, of every user."""
        with self.db.read() as tx:
            return int(tx.scalar("SELECT COUNT(*) FROM units"))

    def get_many(self, ids: Sequence[str]) -> dict[str, UnitRow]:
        """The units among ``ids`` that exist, by id."""
        out: dict[str, UnitRow] = {}
        with self.db.read() as tx:
            for chunk in chunks(list(ids)):
                for r in tx.all(f"SELECT {_COLUMNS} FROM units WHERE id IN {tx.in_list(chunk)}", chunk):
                    out[r[0]] = UnitRow(*r)
        return out

    def speakers(self, user_id: str) -> set[str]:
        """The named speakers of the user's messages (not ``user``/``assistant``)."""
        with self.db.read() as tx:
            rows = tx.all(
                "SELECT DISTINCT speaker FROM units WHERE user_id = ? AND grain = 'turn' AND speaker IS NOT NULL "
                "AND speaker NOT IN ('user', 'assistant')",
                (user_id,),
            )
        return {r[0] for r in rows}

    def spans(self, units: Sequence[UnitRow]) -> dict[str, list[Spoken]]:
        """Each unit's spoken messages as ``(seq, message_id, created_at, data, tokens)``, by
        unit id (``tokens``: the message's stored count)."""
        found = self._spoken([(u.thread_key, u.first_seq, u.last_seq) for u in units])
        return {
            u.id: [found[(u.thread_key, s)] for s in range(u.first_seq, u.last_seq + 1) if (u.thread_key, s) in found]
            for u in units
        }

    def spoken_many(self, wanted: Sequence[tuple[int, Sequence[int]]]) -> dict[int, list[Spoken]]:
        """The user and assistant messages at the given seqs of each thread, as in
        :meth:`spans`, in order, by thread key; one query."""
        found = self._spoken([(key, s, s) for key, seqs in wanted for s in seqs])
        out: dict[int, list[Spoken]] = {}
        for (key, _), row in sorted(found.items()):
            out.setdefault(key, []).append(row)
        return out

    def _spoken(self, spans: Sequence[tuple[int, int, int]]) -> dict[tuple[int, int], Spoken]:
        # One query for all the spans (a search's evidence comes from many threads): each
        # thread's spans merged into ranges, each range a term the primary key answers.
        ranges: list[tuple[int, int, int]] = []
        for key, lo, hi in sorted(spans):
            if ranges and ranges[-1][0] == key and lo <= ranges[-1][2] + 1:
                ranges[-1] = (key, ranges[-1][1], max(hi, ranges[-1][2]))
            else:
                ranges.append((key, lo, hi))
        found: dict[tuple[int, int], Spoken] = {}
        with self.db.read() as tx:
            for chunk in chunks(ranges, _RANGES_PER_QUERY):
                terms = " OR ".join(["(thread_key = ? AND seq BETWEEN ? AND ?)"] * len(chunk))
                for row in tx.all(
                    f"SELECT thread_key, seq, message_id, created_at, data, tokens FROM messages "
                    f"WHERE ({terms}) AND type IN ('human', 'ai')",
                    [v for r in chunk for v in r],
                ):
                    found[(row[0], row[1])] = (row[1], row[2], row[3], row[4], row[5])
        return found

    def put_sentences(self, vectors: Mapping[str, Sequence[bytes]]) -> None:
        """Store the vectors of each turn's sentences (``unit id → [vector bytes, ...]``),
        replacing any it had: derived data, written again whenever the turn is embedded."""
        rows = [(uid, n, v) for uid, vs in vectors.items() for n, v in enumerate(vs)]
        if not rows:
            return
        with self.db.write(durable=False) as tx:
            for chunk in chunks(list(vectors)):
                tx.execute(f"DELETE FROM unit_sentences WHERE unit_id IN {tx.in_list(chunk)}", chunk)
            tx.executemany("INSERT INTO unit_sentences (unit_id, n, vector) VALUES (?, ?, ?)", rows)

    def sentences(self, ids: Sequence[str]) -> dict[str, list[bytes]]:
        """The sentence vectors of the turns among ``ids`` that have them, in order, by unit id
        (a turn of one sentence, or indexed before they were kept, has none)."""
        out: dict[str, list[bytes]] = {}
        with self.db.read() as tx:
            for chunk in chunks(list(ids)):
                for uid, _, vector in tx.all(
                    f"SELECT unit_id, n, vector FROM unit_sentences WHERE unit_id IN {tx.in_list(chunk)} "
                    "ORDER BY unit_id, n",
                    chunk,
                ):
                    out.setdefault(uid, []).append(bytes(vector))
        return out

    def thread_ids(self, keys: Sequence[int]) -> dict[int, str]:
        """The thread id of each thread key."""
        if not keys:
            return {}
        with self.db.read() as tx:
            return dict(tx.all(f"SELECT id, thread_id FROM threads WHERE id IN {tx.in_list(keys)}", list(keys)))

    # --- the index's bookkeeping -----------------------------------------------------------

    def unindexed(self, limit: int) -> list[UnitRow]:
        """Units whose point is not written yet (oldest first)."""
        with self.db.read() as tx:
            rows = tx.all(
                f"SELECT {_COLUMNS} FROM units WHERE indexed != 1 ORDER BY thread_key, last_seq, grain LIMIT ?",
                (limit,),
            )
        return [UnitRow(*r) for r in rows]

"""Entity full-text search, the one part of the entity tables that each database does its own
way: FTS5 on SQLite, a ``tsvector`` column with a GIN index on PostgreSQL.

Both index an entity's name and its ``search_text`` (type and current attributes, see
``entities.refresh_search_text``), match any of the query's words case- and
accent-insensitively ("zoe" finds "Zoë", as FTS5's ``unicode61`` tokenizer does), take
every word literally (``AND``, ``NEAR``, ``*`` and quotes are words, never operators), and
rank by relevance — more of the query's words first, a match in a short profile before the
same match in a long one — then the most recently updated first.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .database import Tx

# What FTS5's unicode61 tokenizer calls a token: a run of letters and digits.
_TOKEN = re.compile(r"[^\W_]+")
# PostgreSQL refuses lexemes over 2047 bytes; no word is that long.
_MAX_TOKEN_CHARS = 500
# tsvector positions stop at 16383 (larger ones are clamped).
_MAX_POSITION = 16383


def tokens(text: str) -> list[str]:
    """The words of ``text`` as FTS5's ``unicode61`` sees them: case-folded, without
    diacritics, split at everything that is not a letter or a digit."""
    folded = unicodedata.normalize("NFKD", text.casefold())
    folded = "".join(c for c in folded if not unicodedata.combining(c))
    return [t for t in _TOKEN.findall(folded) if len(t) <= _MAX_TOKEN_CHARS]


class Fts5Search:
    """SQLite: the FTS5 table ``entities_fts`` over ``entities(name, search_text)``, kept in
    step by triggers; ranked by FTS5's BM25."""

    def match(self, tx: Tx, user_id: str, terms: Sequence[str], limit: int) -> list[int]:
        # Quoted, so words like AND/NEAR or a stray '*' are searched for, not interpreted.
        query = " OR ".join('"' + t.replace('"', '""') + '"' for t in dict.fromkeys(terms))
        return tx.column(
            "SELECT e.id FROM entities_fts f JOIN entities e ON e.id = f.rowid "
            "WHERE entities_fts MATCH ? AND e.user_id = ? "
            "ORDER BY f.rank, e.updated_at DESC LIMIT ?",
            (query, user_id, limit),
        )

    def index(self, tx: Tx, entity_id: int, name: str, text: str) -> None:
        # The triggers index the name on every write of the row; only the text is set here.
        tx.execute(
            "UPDATE entities SET search_text = ? WHERE id = ? AND search_text != ?", (text, entity_id, text)
        )

    def optimize(self, tx: Tx) -> None:
        if "entities_fts" in tx.tables():
            tx.execute("INSERT INTO entities_fts(entities_fts) VALUES ('optimize')")


class TsvectorSearch:
    """PostgreSQL: ``entities.search_vector``, a ``tsvector`` with a GIN index.

    The words are made here (:func:`tokens`) and written as a ``tsvector`` literal — name
    words weighted A, the rest B, with their positions — rather than by ``to_tsvector``,
    whose parser and dictionaries depend on the server's configuration and locale; the query
    is a ``tsquery`` literal of the same words (a term of several words is a phrase).
    ``ts_rank`` weighs both columns alike (as FTS5 does) and divides by the log of the
    profile's length (normalisation 1), as BM25 prefers a short profile.
    """

    def match(self, tx: Tx, user_id: str, terms: Sequence[str], limit: int) -> list[int]:
        query = tsquery(terms)
        if not query:
            return []
        return tx.column(
            "SELECT id FROM entities WHERE user_id = ? AND search_vector @@ CAST(? AS tsquery) "
            "ORDER BY ts_rank('{0.1, 0.2, 1.0, 1.0}', search_vector, CAST(? AS tsquery), 1) DESC, "
            "updated_at DESC, id DESC LIMIT ?",
            (user_id, query, query, limit),
        )

    def index(self, tx: Tx, entity_id: int, name: str, text: str) -> None:
        tx.execute(
            "UPDATE entities SET search_text = ?, search_vector = CAST(? AS tsvector) WHERE id = ?",
            (text, tsvector(name, text), entity_id),
        )

    def optimize(self, tx: Tx) -> None:
        # Nothing to merge: a GIN index drops deleted entries when (auto)vacuum runs.
        return None


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(name: str, text: str) -> str:
    """A ``tsvector`` literal of the name's words (weight A) and the text's (weight B)."""
    parts: list[str] = []
    position = 0
    for weight, source in (("A", name), ("B", text)):
        for token in tokens(source):
            position = min(position + 1, _MAX_POSITION)
            parts.append(f"{_lexeme(token)}:{position}{weight}")
    return " ".join(parts)


def tsquery(terms: Sequence[str]) -> str:
    """A ``tsquery`` literal matching any of ``terms`` (each a word or a phrase of words)."""
    alternatives = []
    for term in dict.fromkeys(terms):
        words = tokens(term)
        if words:
            alternatives.append("(" + " <-> ".join(_lexeme(w) for w in words) + ")")
    return " | ".join(alternatives)


FTS5 = Fts5Search()
TSVECTOR = TsvectorSearch()

"""A user moved between two directories: ids minted in one never collide with the other's.

Extracted memories and episodes get ids derived from their job (a replayed job stores
nothing twice). Derived from a per-directory thread number alone, two directories minted the
same ids for their own "thread 1", and importing a user from one into the other failed with
"memory id … is already used".
"""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from langchain_tiered_memory import InvalidInputError, TieredMemory

# The same conversation for two users in two directories: each directory's first thread and
# first extraction job, so ids derived from thread numbers and job keys would be equal.
CHAT = [
    ("I live in Lisbon and I work at Acme.", "Noted."),
    ("My sister Lena is vegetarian.", "Good to know."),
    ("I'm saving up to buy a van so I can travel.", "That sounds exciting."),
]


def _fill(path, user: str) -> None:
    with TieredMemory(path) as memory:
        for question, answer in CHAT:
            memory.after_turn(user, f"{user}-t1", [HumanMessage(question), AIMessage(answer)])
        memory.end_session(user, f"{user}-t1")
        memory.flush()


def _counts(export: dict) -> dict[str, int]:
    return {table: len(rows) for table, rows in export.items()}


def test_a_user_exported_from_one_directory_imports_into_another_that_has_users(tmp_path):
    _fill(tmp_path / "a", "alice")
    _fill(tmp_path / "b", "bob")
    with TieredMemory(tmp_path / "a") as a:
        export = json.loads(json.dumps(a.admin.export_user("alice")))  # as a file would carry it
    assert export["memories"] and export["episodes"], "the offline rules extracted memories and an episode"
    with TieredMemory(tmp_path / "b") as b:
        bob_before = _counts(b.admin.export_user("bob"))
        bob_ids = {m["id"] for m in b.admin.export_user("bob")["memories"]}
        assert not bob_ids & {m["id"] for m in export["memories"]}, "two directories minted the same ids"
        written = b.admin.import_user("alice", export)
        assert written["memories"] == len(export["memories"])
        assert written["episodes"] == len(export["episodes"])
        b.flush()
        arrived = b.admin.export_user("alice")
        assert _counts(arrived) == _counts(export)
        assert {m["id"] for m in arrived["memories"]} == {m["id"] for m in export["memories"]}
        assert _counts(b.admin.export_user("bob")) == bob_before  # bob is untouched
        # Alice's memories are searchable in her new home, and only hers.
        hits = b.memories.search("alice", "where does the user live?", k=3)
        assert hits and all(h.entry.user_id == "alice" for h in hits)
        assert any("Lisbon" in h.entry.content for h in hits)


def test_a_conflicting_import_changes_nothing_and_says_why(tmp_path):
    _fill(tmp_path / "a", "alice")
    with TieredMemory(tmp_path / "a") as a:
        export = a.admin.export_user("alice")
        # The same export under another user: every id it carries is taken here.
        before = {user: _counts(a.admin.export_user(user)) for user in ("alice", "carol")}
        with pytest.raises(InvalidInputError, match="already"):
            a.admin.import_user("carol", {**export, "threads": [], "messages": []})
        assert {user: _counts(a.admin.export_user(user)) for user in ("alice", "carol")} == before


def test_ids_stay_the_directorys_own_across_reopening(tmp_path):
    # The namespace is made once and kept: a replay after a restart mints the same ids.
    with TieredMemory(tmp_path / "a") as memory:
        first = memory._parts.storage.id_namespace()
    with TieredMemory(tmp_path / "a") as memory:
        assert memory._parts.storage.id_namespace() == first
    with TieredMemory(tmp_path / "b") as memory:
        assert memory._parts.storage.id_namespace() != first

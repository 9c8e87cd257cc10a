"""What the job journal keeps of the model's text, and how a forget scrubs it.

A job saves the model's answer before applying it, so that a retry after a crash replays
it instead of paying for it again (``jobs/handlers.py``). That answer quotes what the
conversation said: the memories, entity names and attribute values, the summary. Once the
job has ended — done, or failed for good — nothing replays it, and a copy of the text in
the journal would outlive a ``forget`` of the records built from it. So an ended job keeps
only the record of what validation dropped (kind, position, count, reason: what
``stats()["dropped"]`` reads) and how the answer was obtained (``method``); the rest of the
answer goes in the transaction that ends the job (:func:`end_answer`).

That is chosen over scrubbing full answers at forget time because a forget cannot know
every way an answer quotes a record (a memory restated in the summary, an entity named in
another's attribute); text never kept needs no finding. What a forget still scrubs
(:func:`scrub_answers`) is the text a row may hold while its job is unfinished (the saved
answer of a job waiting for a retry: dropped, so the retry asks again), a dropped item's
reason or a failure's message naming what was forgotten (those quote a few words of the
answer: redacted), and the full answers of jobs that ended before this rule (trimmed).
A job running while the forget runs may save its answer after it; the job's end trims it,
and the next forget's or the upkeep's scrub of the write-ahead log takes its frames.

The answer itself is one typed value, :data:`JobAnswer`: an extraction job's
:class:`ExtractionAnswer` or an episode job's :class:`EpisodeAnswer`, stored as JSON
(:func:`dump_answer`, :func:`load_answer`); its *parts* (the extraction, the summary, the
episode: the dict-valued keys) are what :func:`answer_parts` reads.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any, TypedDict, Union, cast

from .database import Tx

__all__ = [
    "EpisodeAnswer",
    "ExtractionAnswer",
    "JobAnswer",
    "answer_parts",
    "dump_answer",
    "end_answer",
    "ended_answer",
    "load_answer",
    "scrub_answers",
]

#: The keys of an answer's part that outlive the job (see the module doc).
KEPT_KEYS = ("dropped", "method")
#: What replaces a dropped item's reason, or a job's error, that named something forgotten.
REDACTED = "(redacted: it named something forgotten since)"
#: Needles shorter than this are not looked for: a value of one or two characters ("5",
#: "no") would match nearly every answer, and says nothing about anyone on its own.
MIN_NEEDLE_CHARS = 3
_ENDED = ("done", "failed")


class ExtractionAnswer(TypedDict):
    """What an extraction job saves of its model call, before applying it."""

    #: The :class:`~langchain_tiered_memory.extraction.TurnExtraction`, as JSON.
    extraction: dict[str, Any]
    #: The bounded running summary (a ``SummaryUpdate``'s fields) when messages were
    #: evicted, else ``None``.
    summary: dict[str, Any] | None
    #: The last seq the extraction covered.
    through: int
    #: The message the entities' new values were learned from (the newest human one).
    source_message: str | None
    #: The messages the memories were learned from.
    source_messages: list[str]
    #: When the turn was said (its last message's time), if it has messages.
    said_at: str | None


class EpisodeAnswer(TypedDict):
    """What an episode job saves of its model call."""

    #: The :class:`~langchain_tiered_memory.extraction.EpisodeExtraction`, as JSON.
    episode: dict[str, Any]


#: A job's saved answer: the one shape the jobs write and the journal reads.
JobAnswer = Union[ExtractionAnswer, EpisodeAnswer]


def dump_answer(answer: JobAnswer) -> str:
    """The text the journal stores for an answer."""
    return json.dumps(answer, ensure_ascii=False)


def load_answer(text: str) -> JobAnswer:
    """A saved answer read back (for a replay: the job that saved it knows which kind)."""
    return cast(JobAnswer, json.loads(text))


def answer_parts(result: str | None) -> dict[str, dict[str, Any]]:
    """The parts of a saved answer by name (its dict-valued keys: ``extraction``,
    ``summary``, ``episode``); ``{}`` for no answer or an unreadable one."""
    try:
        data = json.loads(result or "null")
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    return {name: part for name, part in data.items() if isinstance(part, dict)}


def needles(texts: Iterable[str | None]) -> list[str]:
    """The forms in which stored job text may hold ``texts``: case-folded, as written and
    as JSON escapes them (quotes, backslashes, newlines), without the too-short ones."""
    out: set[str] = set()
    for text in texts:
        if not text or len(text.strip()) < MIN_NEEDLE_CHARS:
            continue
        low = text.strip().lower()
        out.add(low)
        out.add(json.dumps(low, ensure_ascii=False)[1:-1])
    return sorted(out)


def mentions(text: str | None, found: Sequence[str]) -> bool:
    """Whether ``text`` holds one of the needles (from :func:`needles`), ignoring case."""
    if not text or not found:
        return False
    low = text.lower()
    return any(n in low for n in found)


def ended_answer(result: str | None, found: Sequence[str] = ()) -> str | None:
    """What an ended job keeps of its saved answer ``result``: of each part (the extraction,
    the episode), its ``dropped`` records and ``method``; a reason naming one of ``found``
    is redacted. ``None`` when nothing is left (or the answer is unreadable)."""
    kept: dict[str, Any] = {}
    for name, part in answer_parts(result).items():
        keep = {k: part[k] for k in KEPT_KEYS if part.get(k)}
        dropped = keep.get("dropped")
        if isinstance(dropped, list):
            keep["dropped"] = [_redacted(item, found) for item in dropped]
        if keep:
            kept[name] = keep
    # The separators of json.dumps' default: Jobs.dropped_items finds answers with drops by
    # their text ('"dropped": [{'), without parsing them.
    return json.dumps(kept, ensure_ascii=False) if kept else None


def _redacted(item: Any, found: Sequence[str]) -> Any:
    if isinstance(item, dict) and mentions(str(item.get("reason", "")), found):
        return {**item, "reason": REDACTED}
    return item


def end_answer(tx: Tx, job_id: int) -> None:
    """In the transaction that ends the job: keep only :func:`ended_answer` of its answer
    (if it did end: a worker that lost its lease changed nothing)."""
    result = tx.scalar("SELECT result FROM jobs WHERE id = ? AND status IN ('done', 'failed')", (job_id,))
    if result is not None:
        kept = ended_answer(result)
        if kept != result:
            tx.execute("UPDATE jobs SET result = ? WHERE id = ?", (kept, job_id))


def scrub_answers(tx: Tx, user_id: str, texts: Iterable[str | None]) -> int:
    """In a forget's transaction: leave no copy of ``texts`` (what the forget deletes) in the
    user's job rows; how many rows it changed (see the module doc).

    An unfinished job's saved answer that mentions one is dropped (the job asks the model
    again); an ended job's answer is trimmed to :func:`ended_answer`, its reasons naming
    one redacted; a job's error naming one is redacted.
    """
    found = needles(texts)
    rows = tx.all(
        "SELECT id, status, result, last_error FROM jobs WHERE user_id = ? "
        "AND (result IS NOT NULL OR last_error IS NOT NULL)",
        (user_id,),
    )
    changed = 0
    for job_id, status, result, error in rows:
        if status in _ENDED:
            answer = ended_answer(result, found) if result is not None else None
        else:
            answer = None if mentions(result, found) else result
        message = REDACTED if mentions(error, found) else error
        if answer != result or message != error:
            tx.execute("UPDATE jobs SET result = ?, last_error = ? WHERE id = ?", (answer, message, job_id))
            changed += 1
    return changed

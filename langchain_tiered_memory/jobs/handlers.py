"""What the journaled jobs do: one extraction per turn, one episode per finished session.

Each handler is idempotent. The model's answer is saved in the journal before it is
applied, so a retry after a crash replays the same answer instead of asking again, and its
results are committed together with the job's completion (``storage/results.py``) under
ids derived from the job: applying it twice changes nothing.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, cast

from langchain_core.messages import HumanMessage

from ..layers.entities import EntityLayer, updates
from ..layers.episodes import episode_id
from ..storage.job_answers import EpisodeAnswer, ExtractionAnswer, load_answer
from ..storage.rows import EpisodeRow, JobRow, MemoryRow, SummaryUpdate, ThreadRow
from ..layers.summary import SummaryLayer

if TYPE_CHECKING:
    from ..config import MemoryConfig
    from ..extraction import Extractor
    from ..storage import Storage
    from ..turn import Turns

_JOB_NAMESPACE = uuid.UUID("0d6b2f0c-7a55-4f1e-8f0c-2b7d1e9a4c33")


class JobHandlers:
    """The handlers of the ``extract`` and ``episode`` jobs.

    Args:
        storage: the relational store.
        turns: reads the log's messages.
        summary, entities: the layers whose state an extraction updates.
        extractor: returns the extractor (LLM or offline; made when first needed).
        config: thresholds and budgets.
        clock: the current time.

    The records a job writes wait for their index points, which the runner's upkeep writes
    after the job (in the process that holds the index).
    """

    def __init__(
        self,
        storage: Storage,
        turns: Turns,
        summary: SummaryLayer,
        entities: EntityLayer,
        extractor: Callable[[], Extractor],
        config: MemoryConfig,
        clock: Callable[[], datetime],
    ) -> None:
        self._storage = storage
        self._turns = turns
        self._summary = summary
        self._entities = entities
        self._extractor = extractor
        self.config = config
        self._clock = clock

    def handlers(self) -> dict[str, Callable[[JobRow, str], None]]:
        """The handler of each job kind."""
        return {"extract": self.extract, "episode": self.episode}

    # --- extraction -----------------------------------------------------------------------

    def extract(self, job: JobRow, worker: str) -> None:
        """One extraction call for the thread's new messages, folding evicted ones into the summary."""
        thread = self._storage.threads.by_key(job.thread_key) if job.thread_key is not None else None
        if thread is None:  # forgotten since: nothing to do
            self._storage.jobs.finish(job.id, worker)
            return
        through = min(json.loads(job.payload)["through_seq"], thread.next_seq - 1)
        first = thread.extracted_through + 1
        ev_first, ev_last = thread.summarized_through + 1, thread.evicted_through
        if first > through and ev_last < ev_first:
            self._storage.jobs.finish(job.id, worker)  # a later job already covered it
            return
        if job.result:
            result = cast(ExtractionAnswer, load_answer(job.result))
        else:
            result = self._ask(thread, first, through, ev_first, ev_last)
            self._storage.jobs.save_result(job.id, worker, result)
        from ..extraction import TurnExtraction

        extraction = TurnExtraction.model_validate(result["extraction"])
        summary = result.get("summary")
        said = result.get("said_at") or self._clock().isoformat()
        sources = [m for m in result.get("source_messages", []) if isinstance(m, str)]
        memories = [
            MemoryRow(
                # Ids derived from the job: a replay after a crash stores nothing twice; in
                # the deployment's own namespace: another directory's job of the same key
                # (its own "thread 2") mints other ids.
                id=str(uuid.uuid5(self._storage.id_namespace(), f"{_JOB_NAMESPACE}\x1f{job.key}\x1f{i}")),
                user_id=thread.user_id, content=m.content, memory_type=m.memory_type,
                importance=m.importance, metadata={"about": m.about} if m.about else {},
                session_id=thread.thread_id,
                source_messages=sources, created_at=self._clock().isoformat(),
                updated_at=self._clock().isoformat(), last_accessed=self._clock().isoformat(),
                access_count=0, boost=0.0, merged_from=[], valid_from=said,
                subject=getattr(m, "subject", None) or None,
                replaces=getattr(m, "replaces", None) or None,
            )
            for i, m in enumerate(extraction.memories)
            if m.importance >= self.config.importance_threshold
        ]
        self._storage.results.complete_extraction(
            job,
            worker,
            user_id=thread.user_id,
            thread_id=thread.thread_id,
            entities=updates(
                extraction.entities, result.get("source_message"), self._entities.self_name(thread.user_id)
            ),
            memories=memories,
            summary=None if summary is None else SummaryUpdate(**summary),
            extracted_through=result["through"],
            now=self._clock().isoformat(),
        )

    def _ask(self, thread: ThreadRow, first: int, through: int, ev_first: int, ev_last: int) -> ExtractionAnswer:
        new = [m for m in self._turns.messages(thread.key, first, through) if m.type != "system"]
        evicted = [m for m in self._turns.messages(thread.key, ev_first, ev_last) if m.type != "system"]
        current = self._summary.current(thread)
        from ..extraction.offline import OfflineExtractor

        stored = self._entities.relevant(thread.user_id, None, limit=50)
        known = [e.name for e in stored]
        extractor = self._extractor()
        # The rules also take the types stored (a name listed with a known place is one); the
        # Extractor protocol has names only, which an extractor of one's own implements.
        typed = {"known_types": {e.name: e.type for e in stored}} if isinstance(extractor, OfflineExtractor) else {}
        extraction = extractor.extract_turn(
            new,
            summary=current,
            evicted=evicted,
            known_entities=known,
            summary_max_tokens=self.config.summary_max_tokens,
            **typed,
        )
        summary = None
        if evicted:
            text = extraction.summary
            if not text or not text.strip():
                # Asked for a summary and given none: fold extractively rather than leave the
                # evicted messages in neither the window nor the summary.
                from ..extraction.offline import extractive_summary

                text = extractive_summary(
                    evicted, previous=current, max_tokens=self.config.summary_max_tokens,
                    counter=self._turns.counter,
                )
            bounded = self._summary.bounded(
                text,
                first_seq=ev_first,
                last_seq=ev_last,
                compress=None if extractor.offline else extractor.compress_summary,
            )
            summary = dataclasses.asdict(bounded)
        humans = [m for m in new if isinstance(m, HumanMessage)]
        span = self._storage.threads.span(thread.key, first, through) if through >= first else None
        return ExtractionAnswer(
            extraction=extraction.model_dump(mode="json"),
            summary=summary,
            through=through,
            source_message=(humans[-1].id if humans else (new[-1].id if new else None)),
            source_messages=[m.id for m in (humans or new) if m.id],
            said_at=span[1] if span else None,
        )

    # --- episodes -------------------------------------------------------------------------

    def episode(self, job: JobRow, worker: str) -> None:
        """One episode of the session that ends at the job's last message."""
        thread = self._storage.threads.by_key(job.thread_key) if job.thread_key is not None else None
        if thread is None:
            self._storage.jobs.finish(job.id, worker)
            return
        last = json.loads(job.payload)["last_seq"]
        first = self._storage.episodes.last_seq(thread.thread_id) + 1
        if first > last:
            self._storage.jobs.finish(job.id, worker)
            return
        answer: EpisodeAnswer
        if job.result:
            answer = cast(EpisodeAnswer, load_answer(job.result))
        else:
            messages = [m for m in self._turns.messages(thread.key, first, last) if m.type != "system"]
            extraction = self._extractor().extract_episode(messages)
            answer = EpisodeAnswer(episode=extraction.model_dump(mode="json"))
            self._storage.jobs.save_result(job.id, worker, answer)
        span = self._storage.threads.span(thread.key, first, last)
        started, ended = span if span else (self._clock().isoformat(),) * 2
        data = answer["episode"]
        row = EpisodeRow(
            episode_id(thread.thread_id, last, self._storage.id_namespace()), thread.user_id, thread.thread_id, started, ended,
            data["summary"], list(data.get("decisions", [])), data.get("outcome", ""),
            list(data.get("topics", [])), first, last, self._clock().isoformat(),
        )
        self._storage.episodes.insert(row, job, worker)

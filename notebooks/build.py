"""Writes the example notebooks from the cells below, runs them, and saves them with outputs.

    python notebooks/build.py        # every notebook
    python notebooks/build.py 03     # those whose name starts with 03

The cells live here, as Python, so that a change to a notebook is a reviewable diff; edit
this file rather than the ``.ipynb`` and run it again. The notebooks are committed with their
outputs so that they read on GitHub. Each runs offline (no API key: the chat model is a
scripted fake, the embeddings are the package's local model) in well under a minute;
``tests/test_notebooks.py`` executes the committed notebooks again.
"""

from __future__ import annotations

import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent
#: Seconds one cell may take; a notebook takes about 10 s in all.
CELL_TIMEOUT = 180

Cell = tuple[str, str]


def md(text: str) -> Cell:
    return ("markdown", textwrap.dedent(text).strip())


def code(text: str) -> Cell:
    return ("code", textwrap.dedent(text).strip())


def notebook(cells: list[Cell]) -> nbformat.NotebookNode:
    nb = new_notebook(
        cells=[new_markdown_cell(src) if kind == "markdown" else new_code_cell(src) for kind, src in cells]
    )
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def execute(nb: nbformat.NotebookNode, timeout: int = CELL_TIMEOUT) -> nbformat.NotebookNode:
    """Run every cell in a fresh ``python3`` kernel (the one of this interpreter), from
    ``notebooks/``; raises ``CellExecutionError`` on the first failing cell."""
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        # Timestamps in the metadata would make every rebuild a diff.
        record_timing=False,
        resources={"metadata": {"path": str(HERE)}},
    )
    client.execute()
    return nb


# --- 01: replacing ConversationBufferMemory -------------------------------------------------

SETUP = code(
    """
    import os
    import tempfile
    import warnings

    # Everything runs offline: the embedding model is a local package, nothing is downloaded.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    %matplotlib inline
    %config InlineBackend.figure_formats = ["png"]
    import matplotlib.pyplot as plt
    """
)


def nb01() -> list[Cell]:
    return [
        md(
            """
            # Replacing `ConversationBufferMemory`

            `ConversationBufferMemory` keeps every message of a conversation in RAM and sends all
            of them with each request: the prompt grows with every turn until it no longer fits
            the model's context window, and the conversation is gone when the process exits.

            `TieredMemory` keeps every message in a SQLite file and sends the model a **budgeted**
            view: the newest messages that fit, plus a fenced memory block with a summary of what
            left the window, the entities it learned and the long-term memories relevant to the
            question. This notebook runs the same 40-turn conversation through both, and counts
            the tokens each one sends, turn by turn, with the real tiktoken `cl100k_base`
            counter (`memory.admin.counter`, the one `TieredMemory` budgets with).

            It runs offline: the chat model is LangChain's `GenericFakeChatModel` replaying
            scripted answers, and the embeddings are the package's local MiniLM model.
            """
        ),
        SETUP,
        code(
            """
            from langchain_core._api import LangChainDeprecationWarning
            from langchain_core.callbacks import BaseCallbackHandler
            from langchain_core.chat_history import InMemoryChatMessageHistory
            from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
            from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
            from langchain_core.runnables.history import RunnableWithMessageHistory

            from langchain_tiered_memory import MemoryConfig, TieredChatMessageHistory, TieredMemory

            try:  # the real ConversationBufferMemory, when langchain-classic is installed
                from langchain_classic.memory import ConversationBufferMemory
            except ImportError:
                ConversationBufferMemory = None

            # LangChain marks the legacy chat-history API deprecated (removal in langchain-core
            # 2.0); this notebook is about the code that still uses it, so those warnings, and
            # only those, are muted. After importing langchain-classic: its import turns
            # LangChain's deprecation warnings back on, ahead of any filter set before it.
            warnings.filterwarnings(
                "ignore", category=LangChainDeprecationWarning,
                message=r".*\\b(ConversationBufferMemory|InMemoryChatMessageHistory|RunnableWithMessageHistory)\\b",
            )
            """
        ),
        md(
            """
            ## The conversation

            Alice plans a rail trip. She says who she is in the first turn, pastes a long list of
            notes in turn 13, and in the last turn asks what her name is.
            """
        ),
        code(
            """
            CITIES = ["Lisbon", "Porto", "Madrid", "Seville", "Barcelona",
                      "Lyon", "Paris", "Brussels", "Amsterdam", "Berlin"]

            turns = [(
                "Hi! My name is Alice, I live in Paris and I prefer green tea. "
                "I'm planning a rail trip around Europe in May.",
                "Nice to meet you, Alice! A spring rail trip sounds lovely. Which cities are you thinking of?",
            )]
            for day in range(1, 40):
                city = CITIES[day % len(CITIES)]
                if day == 12:
                    question = "Here are my notes so far, can you check them? " + " ".join(
                        f"Day {d}: {CITIES[d % 10]}, museum in the morning, market at noon, train at 17:{d:02d}."
                        for d in range(1, 13)
                    )
                elif day == 39:
                    question = "Before I go: what is my name, and which tea should you pack for me?"
                else:
                    question = f"What should I do on day {day} in {city}? I'd like something outdoors and a good place for lunch."
                answer = (
                    f"For day {day} in {city}: start early with a walk through the old town, then take the "
                    "tram to the main park for a picnic. For lunch, try a small family restaurant near the "
                    "central market; book ahead on weekends. In the evening the riverside is quiet and the "
                    f"trains back run every {10 + day % 5} minutes."
                )
                turns.append((question, answer))

            print(len(turns), "turns; the first:", turns[0][0])
            """
        ),
        md(
            """
            ## Before and after

            Both sides use the same chain — a prompt with a `history` placeholder, the model, and
            `RunnableWithMessageHistory` — and differ only in the history behind it.

            **Before**: `ConversationBufferMemory(return_messages=True)` lives in the
            `langchain-classic` package. Its `chat_memory` is an `InMemoryChatMessageHistory`, and
            what it puts in the prompt is all of `chat_memory.messages`. The cell below uses the
            real class when `langchain-classic` is installed; when it is not, it uses the same
            `InMemoryChatMessageHistory` directly, which sends exactly the same messages.

            **After**: `TieredChatMessageHistory(memory, user_id, session_id, with_memory=True)`, a
            `BaseChatMessageHistory` whose `messages` is the budgeted view with the memory block. The model here has a 2,000-token window;
            300 tokens are kept for its answer, so the context budget is 1,700 tokens.
            """
        ),
        code(
            """
            if ConversationBufferMemory is not None:
                buffer = ConversationBufferMemory(return_messages=True).chat_memory
                print("before: langchain_classic.memory.ConversationBufferMemory")
            else:
                buffer = InMemoryChatMessageHistory()
                print("before: langchain-classic is not installed; InMemoryChatMessageHistory, "
                      "which is what ConversationBufferMemory sends")

            data = tempfile.TemporaryDirectory()
            config = MemoryConfig(
                max_tokens=2_000, system_reserve=100, output_reserve=300,
                summary_max_tokens=300, entities_max_tokens=150, memories_max_tokens=150,
                job_mode="inline",  # extraction runs inside the turn, so each turn sees the last one's
            )
            memory = TieredMemory(data.name, config)
            print("after: TieredMemory, context budget", config.context_budget, "tokens")

            prompt = ChatPromptTemplate.from_messages([
                ("system", "You are a helpful travel assistant."),
                MessagesPlaceholder("history"),
                ("human", "{question}"),
            ])


            def chain(get_history):
                model = GenericFakeChatModel(messages=iter([answer for _, answer in turns]))
                return RunnableWithMessageHistory(
                    prompt | model, get_history,
                    input_messages_key="question", history_messages_key="history",
                )


            before = chain(lambda session_id: buffer)
            after = chain(lambda session_id: TieredChatMessageHistory(memory, "alice", session_id, with_memory=True))
            """
        ),
        md(
            """
            A callback sees the exact messages each model call receives and counts them with the
            memory's counter: the system prompt, the history (or memory block and window) and the
            question, plus the request's overhead.
            """
        ),
        code(
            """
            class TokensSent(BaseCallbackHandler):
                def __init__(self, counter):
                    self.counter, self.per_turn = counter, []

                def on_chat_model_start(self, serialized, messages, **kwargs):
                    self.per_turn.append(self.counter.count_messages(messages[0]))


            sent_before, sent_after = TokensSent(memory.admin.counter), TokensSent(memory.admin.counter)
            for question, _ in turns:
                session = {"configurable": {"session_id": "trip"}}
                before.invoke({"question": question}, config={**session, "callbacks": [sent_before]})
                after.invoke({"question": question}, config={**session, "callbacks": [sent_after]})

            print("turn  buffer  tiered")
            for n in (1, 2, 10, 13, 20, 30, 40):
                print(f"{n:>4}  {sent_before.per_turn[n - 1]:>6,}  {sent_after.per_turn[n - 1]:>6,}")
            print(f"whole conversation: {sum(sent_before.per_turn):,} tokens sent with the buffer, "
                  f"{sum(sent_after.per_turn):,} with TieredMemory")
            """
        ),
        code(
            """
            x = range(1, len(turns) + 1)
            fig, ax = plt.subplots(figsize=(8, 4))
            ax.plot(x, sent_before.per_turn, marker=".", label="ConversationBufferMemory (whole history)")
            ax.plot(x, sent_after.per_turn, marker=".", label="TieredMemory (budgeted)")
            ax.axhline(config.max_tokens, color="crimson", linestyle="--", linewidth=1,
                       label=f"model window ({config.max_tokens:,})")
            ax.axhline(config.context_budget, color="gray", linestyle=":", linewidth=1,
                       label=f"context budget ({config.context_budget:,})")
            overflow = next((n for n, t in zip(x, sent_before.per_turn) if t > config.max_tokens), None)
            if overflow:
                ax.annotate(f"turn {overflow}: the buffer no longer fits",
                            (overflow, sent_before.per_turn[overflow - 1]),
                            xytext=(overflow + 2, config.max_tokens * 0.45),
                            arrowprops={"arrowstyle": "->"})
            ax.set_xlabel("turn")
            ax.set_ylabel("tokens sent to the model")
            ax.set_title("Tokens per turn, same 40-turn conversation")
            ax.legend(loc="upper left")
            ax.grid(alpha=0.3)
            plt.show()
            """
        ),
        md(
            """
            With the buffer, a real model with this window would have rejected every request from
            the turn marked above on. With `TieredMemory` the request levels off below the
            budget. Early on it costs a little *more* than the buffer: the memory block (entities,
            recalled memories) is counted like any message.

            The budget is not bought by forgetting: every message is still in the log, and the
            first turn's facts reach the model through the memory block.
            """
        ),
        code(
            """
            log = memory.threads.messages("alice", "trip")
            context = memory.before_turn("alice", "trip", query=turns[-1][0])
            print(f"{len(log)} messages in the log, {len(context.window)} in the window, "
                  f"{context.evicted} left it")
            print("the first message is in the window:", log[0].id in {m.id for m in context.window})
            print("'Alice' is in the memory block:", "Alice" in context.memory_block)
            print(context.token_usage)
            """
        ),
        md(
            """
            ## What the model is sent

            A `MemoryContext` renders in Jupyter: tokens per section against the budget, the text
            of each memory section (click to open it), and the window's messages with their
            tokens.
            """
        ),
        code("context"),
        md(
            """
            The entity profile and the long-term memories the offline extractor took from the
            first turn; `stats()` counts what is stored and the extraction jobs (one per turn).
            """
        ),
        code('memory.entities.get("alice", "alice")'),
        code('memory.memories.search("alice", "What is my name?", explain=True)'),
        code("memory.admin.stats()"),
        md(
            """
            The conversation outlives the process: reopening the directory finds the thread as it
            was. (`ConversationBufferMemory` would start empty.)
            """
        ),
        code(
            """
            memory.close()
            with TieredMemory(data.name, config) as reopened:
                print(len(reopened.threads.messages("alice", "trip")), "messages after reopening")
                print(reopened.before_turn("alice", "trip").token_usage)
            data.cleanup()
            """
        ),
    ]


# --- 03: forgetting and decay ---------------------------------------------------------------


def nb03() -> list[Cell]:
    return [
        md(
            """
            # Forgetting and decay

            Long-term memories fade unless they are used. `TieredMemory` has five ways of
            forgetting, all set in `MemoryConfig`:

            | strategy | mechanism | parameter (default) |
            |---|---|---|
            | time decay | effective importance = min(1, importance + boost) × decay^days since last recalled | `decay` (0.95 a day) |
            | access boost | each recall adds to a memory's boost (importance + boost ≤ 1.0) and resets the clock | `access_boost` (+0.1) |
            | capacity | past the per-user cap, the memories of lowest effective importance go | `max_memories_per_user` (10,000) |
            | merge | a new memory with cosine > threshold to an old one merges into it | `merge_threshold` (0.95) |
            | explicit | `forget(user_id=...)` removes everything of a user, in every layer | — |

            Recall ranks by relevance, from similarity (`scoring.py`): importance, age and
            recalls only break near-ties, as `score = relevance + 0.05 × (effective importance −
            0.5)`. They reorder matches whose relevance is within 0.05 of each other, and never
            lift a clearly worse match over a better one, or hide one that matches.

            The notebook freezes the memory's clock (`memory._parts.clock`, the hook the tests use) and
            moves it by hand, so months pass in seconds. It runs offline, on the real local
            embedding model and an embedded Qdrant Edge shard in a temporary directory.
            """
        ),
        SETUP,
        code(
            """
            from datetime import datetime, timedelta, timezone

            from langchain_core.messages import AIMessage, HumanMessage

            from langchain_tiered_memory import MemoryConfig, TieredMemory

            START = datetime(2025, 1, 1, 9, 0, tzinfo=timezone.utc)
            now = START


            def clock():
                return now


            data = tempfile.TemporaryDirectory()
            memory = TieredMemory(data.name, MemoryConfig(job_mode="inline"))
            memory._parts.clock = clock
            cfg = memory.config
            print(f"decay {cfg.decay}/day, access boost +{cfg.access_boost}, "
                  f"merge above cosine {cfg.merge_threshold}, cap {cfg.max_memories_per_user:,} per user")
            """
        ),
        md(
            """
            ## Time decay

            The same memory, *"The user prefers green tea."*, is stored for 16 users at two
            importances (0.9 and 0.5) and eight ages, from today to 90 days ago. One search per
            user, `explain=True`, reports what recall computed: the days since last access,
            the decay factor, the effective importance, the relevance and the score.
            """
        ),
        code(
            """
            AGES = [0, 3, 7, 14, 30, 45, 60, 90]
            IMPORTANCES = [0.9, 0.5]
            for importance in IMPORTANCES:
                for age in AGES:
                    now = START - timedelta(days=age)
                    memory.memories.remember(f"decay-{importance}-{age}", "The user prefers green tea.", "preference", importance)

            now = START
            measured = {}
            for importance in IMPORTANCES:
                measured[importance] = [
                    memory.memories.search(f"decay-{importance}-{age}", "Which tea does the user prefer?", k=1, explain=True)[0]
                    for age in AGES
                ]
            print("days  importance  decay   effective  relevance  score")
            for hit in measured[0.9]:
                p = hit.parts
                print(f"{p.days_since_access:>4.0f}  {p.importance:>10.2f}  {p.decay:.3f}  {p.effective_importance:>9.3f}"
                      f"  {p.relevance:>9.3f}  {hit.score:.3f}")
            """
        ),
        code(
            """
            import numpy as np

            from langchain_tiered_memory.scoring import TIE_BREAK

            days = np.linspace(0, 90, 181)
            fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
            for importance, colour in zip(IMPORTANCES, ["tab:blue", "tab:orange"]):
                hits = measured[importance]
                left.plot(days, importance * cfg.decay ** days, color=colour, alpha=0.6,
                          label=f"importance × {cfg.decay}^days, importance {importance}")
                left.plot([h.parts.days_since_access for h in hits], [h.parts.effective_importance for h in hits],
                          "o", color=colour, label=f"measured, importance {importance}")
                right.plot(days, TIE_BREAK * (importance * cfg.decay ** days - 0.5), color=colour, alpha=0.6,
                           label=f"importance {importance}")
                right.plot([h.parts.days_since_access for h in hits], [h.score - h.parts.relevance for h in hits],
                           "o", color=colour)
            left.set(title="Effective importance", xlabel="days since last recalled", ylabel="effective importance")
            right.set(title="What importance and age add to a score", xlabel="days since last recalled",
                      ylabel="score − relevance", ylim=(-0.04, 0.04))
            for bound in (-TIE_BREAK / 2, TIE_BREAK / 2):
                right.axhline(bound, color="gray", linestyle=":", linewidth=1)
            right.annotate(f"bounded by ±{TIE_BREAK / 2}: they break ties, they do not decide", (20, 0.03), fontsize=8)
            for ax in (left, right):
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
            plt.tight_layout()
            plt.show()
            """
        ),
        md(
            """
            Age reorders results. Dana said she preferred green tea 60 days ago (importance 0.9)
            and jasmine tea today (importance 0.6): the recent memory ranks first. The search
            results render with the parts of each score.
            """
        ),
        code(
            """
            now = START - timedelta(days=60)
            memory.memories.remember("dana", "The user prefers green tea.", "preference", 0.9)
            now = START
            memory.memories.remember("dana", "The user now prefers jasmine tea.", "preference", 0.6)
            memory.memories.search("dana", "Which tea does the user prefer?", explain=True)
            """
        ),
        md(
            """
            ## Access boost

            Two memories of one user start at importance 0.5 on day 0. The first is recalled by a
            search on days 1 to 5; the second never. Each recall adds 0.1 to its boost (so that
            importance + boost stays within 1.0) and restarts its decay; `get_memory` reads a
            memory without counting as a recall.
            """
        ),
        code(
            """
            now = START
            tea = memory.memories.remember("erin", "The user prefers green tea.", "preference", 0.5)
            bike = memory.memories.remember("erin", "The user's bicycle is red.", "fact", 0.5)
            curve = {tea: [], bike: []}
            for day in range(31):
                now = START + timedelta(days=day)
                if 1 <= day <= 5:
                    [hit] = memory.memories.search("erin", "green tea", k=1)
                    assert hit.entry.id == tea
                for memory_id in curve:
                    curve[memory_id].append(memory.memories.get("erin", memory_id).effective_importance(now, cfg.decay))

            entry = memory.memories.get("erin", tea)
            print(f"after 5 recalls: importance {entry.importance:.1f}, boost {entry.boost:.1f}, "
                  f"recalled {entry.access_count} times, last on {entry.last_accessed:%Y-%m-%d}")

            fig, ax = plt.subplots(figsize=(8, 3.5))
            ax.plot(range(31), curve[tea], marker=".", label="recalled on days 1-5")
            ax.plot(range(31), curve[bike], marker=".", label="never recalled")
            ax.axvspan(1, 5, color="tab:blue", alpha=0.08)
            ax.set(xlabel="day", ylabel="effective importance", ylim=(0, 1.05),
                   title=f"Access boost (+{cfg.access_boost} per recall, importance + boost ≤ 1) against decay")
            ax.grid(alpha=0.3)
            ax.legend()
            plt.show()
            """
        ),
        md(
            """
            ## Capacity eviction

            A second memory with `max_memories_per_user=5`. Carol stores five memories on day 0
            with different importances, and three more, of importance 0.6, on day 30. The cap
            then deletes the three of lowest *effective* importance: by day 30 the old memories
            have decayed to a fifth of their importance, so an old 0.7 goes before a new 0.6.
            The memories a call stores are never its own victims (unless that call alone exceeds
            the cap).
            """
        ),
        code(
            """
            capped = TieredMemory(os.path.join(data.name, "capped"), MemoryConfig(job_mode="inline", max_memories_per_user=5))
            capped._parts.clock = clock

            now = START
            for content, importance in [
                ("The user is allergic to peanuts.", 0.9),
                ("The user watched a film on Tuesday.", 0.3),
                ("The user's sister is called Emma.", 0.7),
                ("The user had pasta for lunch.", 0.5),
                ("The user works as a nurse.", 0.8),
            ]:
                capped.memories.remember("carol", content, "fact", importance)
            now = START + timedelta(days=30)
            before = {e.id: e for e in capped.memories.list("carol")}
            for content in ["The user is learning Portuguese.", "The user booked a trip to Lisbon.",
                            "The user's flight leaves at 7am."]:
                capped.memories.remember("carol", content, "fact", 0.6)
                before.update({e.id: e for e in capped.memories.list("carol")})
            kept = {e.id for e in capped.memories.list("carol")}

            rows = sorted(before.values(), key=lambda e: e.effective_importance(now, cfg.decay))
            for e in rows:
                status = "kept   " if e.id in kept else "EVICTED"
                print(f"{status} importance {e.importance:.1f}  effective {e.effective_importance(now, cfg.decay):.3f}  "
                      f"stored {e.created_at:%b %d}  {e.content}")
            print(len(kept), "memories left for carol")
            """
        ),
        code(
            """
            fig, ax = plt.subplots(figsize=(9, 3.5))
            labels = [e.content.removeprefix("The user").removeprefix("'s").strip(" .") for e in rows]
            values = [e.effective_importance(now, cfg.decay) for e in rows]
            colours = ["tab:green" if e.id in kept else "tab:red" for e in rows]
            ax.barh(labels, values, color=colours)
            for i, e in enumerate(rows):
                ax.text(values[i] + 0.01, i, f"importance {e.importance:.1f}, stored {e.created_at:%b %d}", va="center", fontsize=8)
            ax.set(xlabel="effective importance on day 30", xlim=(0, 1),
                   title="Cap of 5: the lowest effective importance is evicted (red)")
            plt.tight_layout()
            plt.show()
            capped.close()
            """
        ),
        md(
            """
            ## Merge of near-duplicates

            Storing a memory whose cosine similarity to one of the user's memories is above
            `merge_threshold` (0.95) updates that memory instead of adding a duplicate: the new
            wording, the higher importance, the new id listed in `merged_from`. No LLM call is
            made. Each candidate below is stored for its own user, who already has
            *"The user prefers green tea."* (importance 0.6); the similarities are the real
            embedding model's.
            """
        ),
        code(
            """
            import math

            original = "The user prefers green tea."
            candidates = ["User prefers green tea.", "The user likes green tea.", "The user prefers black coffee."]
            vectors = memory.admin.embeddings.embed_documents([original, *candidates])


            def cosine(u, v):
                return sum(a * b for a, b in zip(u, v)) / math.sqrt(sum(a * a for a in u) * sum(b * b for b in v))


            similarity = {c: cosine(vectors[0], v) for c, v in zip(candidates, vectors[1:])}
            merged = {}
            for n, candidate in enumerate(candidates):
                user = f"frank-{n}"
                first = memory.memories.remember(user, original, "preference", 0.6)
                merged[candidate] = memory.memories.remember(user, candidate, "preference", 0.8) == first
                count = len(memory.memories.list(user))
                print(f"cosine {similarity[candidate]:.3f}  {'merged' if merged[candidate] else 'stored apart':<12}  "
                      f"{candidate!r}: {user} has {count} {'memory' if count == 1 else 'memories'}")

            fig, ax = plt.subplots(figsize=(7, 2.5))
            ax.barh(candidates, [similarity[c] for c in candidates],
                    color=["tab:purple" if merged[c] else "tab:gray" for c in candidates])
            ax.axvline(cfg.merge_threshold, color="crimson", linestyle="--", label=f"merge_threshold {cfg.merge_threshold}")
            ax.set(xlim=(0.5, 1.0), xlabel=f"cosine similarity to '{original}'")
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
            plt.tight_layout()
            plt.show()
            """
        ),
        code(
            """
            # The merged memory: the new wording and importance, the same id, the merged id kept.
            [entry] = memory.memories.list("frank-0")
            print(f"{entry.content!r}, importance {entry.importance}, merged_from {entry.merged_from}")
            """
        ),
        md(
            """
            ## Forgetting a user

            Alice and Bob each have a conversation, from which the (offline) extractor files an
            entity profile and memories, and a finished session with its episode.
            `forget(user_id="alice")` removes everything of Alice's in every layer — messages,
            summaries, entities, memories, episodes, jobs, store items and LangGraph
            checkpoints — and returns what it deleted. Bob keeps all of his. (The database file
            does not shrink at once: SQLite reuses the freed pages, and its write-ahead log holds
            the deletion until the next checkpoint.)
            """
        ),
        code(
            """
            for user, name, city in (("alice", "Alice", "Paris"), ("bob", "Bob", "Rome")):
                memory.after_turn(user, f"{user}-1", [
                    HumanMessage(f"My name is {name}, I live in {city} and I prefer green tea."),
                    AIMessage(f"Nice to meet you, {name}!"),
                ])
                memory.end_session(user, f"{user}-1")


            def holdings(user):
                return {
                    "threads": len(memory.threads.list(user)),
                    "messages": sum(t.messages for t in memory.threads.list(user)),
                    "entities": len(memory.entities.list(user)),
                    "memories": len(memory.memories.list(user)),
                    "episodes": len(memory.episodes.search(user)),
                }


            before_forget = {u: holdings(u) for u in ("alice", "bob")}
            print(before_forget)
            memory.admin.stats()
            """
        ),
        code(
            """
            deleted = memory.admin.forget(user_id="alice")
            print("deleted:", deleted)
            after_forget = {u: holdings(u) for u in ("alice", "bob")}
            print("user    " + "  ".join(f"{k:>8}" for k in after_forget["bob"]))
            for when, table in (("before", before_forget), ("after", after_forget)):
                for user, counts in table.items():
                    print(f"{user:<5} {when:<6} " + "  ".join(f"{v:>8}" for v in counts.values()))
            assert after_forget["alice"] == dict.fromkeys(after_forget["alice"], 0)
            assert after_forget["bob"] == before_forget["bob"]
            memory.admin.stats()
            """
        ),
        code(
            """
            memory.close()
            data.cleanup()
            """
        ),
    ]

# --- 02: a LangGraph agent --------------------------------------------------------------------


def nb02() -> list[Cell]:
    return [
        md(
            """
            # A LangGraph agent with tiered memory

            LangGraph's `create_react_agent` takes everything memory needs as arguments:

            ```python
            agent = create_react_agent(
                model, tools,
                pre_model_hook=pre_model_hook(memory),    # the budgeted context goes to the model
                post_model_hook=post_model_hook(memory),  # the turn is recorded in every layer
                checkpointer=memory.checkpointer,        # thread state in the same SQLite file
                store=memory.store,                      # long-term memories as a BaseStore
            )
            ```

            The graph's state keeps the whole thread (that is the checkpointer's job), but the
            model is sent only what fits the budget: the memory block and the newest messages.
            What the user says in one thread is recalled in another, and all of it lives in one
            directory that can be reopened — or forgotten, user by user.

            `create_react_agent` is deprecated in LangGraph 1.0 (removal in 2.0) in favour of
            LangChain's `create_agent`, which takes `TieredMemoryMiddleware(memory)` instead of
            the two hooks; it is still widely used, so this notebook shows it.

            It runs offline: the "model" is a small rule-based chat model defined below, which
            calls tools and answers from the messages it is sent, so what it says shows what
            reached it. The embeddings are the package's local model.
            """
        ),
        SETUP,
        code(
            """
            import re
            import uuid

            from langchain_core.language_models import BaseChatModel
            from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
            from langchain_core.outputs import ChatGeneration, ChatResult
            from langchain_core.runnables import RunnableConfig
            from langchain_core.tools import tool
            from langgraph.config import get_store
            from langgraph.prebuilt import create_react_agent
            from langgraph.warnings import LangGraphDeprecatedSinceV10
            from pydantic import Field

            from langchain_tiered_memory import MemoryConfig, TieredMemory, post_model_hook, pre_model_hook

            warnings.filterwarnings("ignore", category=LangGraphDeprecatedSinceV10)  # see above
            """
        ),
        md(
            """
            ## The model and the tools

            `RuleModel` is a real LangChain `BaseChatModel`. It asks for the weather tool when
            asked about the weather, for the `save_memory` tool when asked to remember something,
            and when asked what it knows about the user it quotes the lines of the memory block
            it was sent. It keeps every input, so the notebook can count what it received.

            `save_memory` is an ordinary store-based tool: it writes with LangGraph's
            `get_store()` into the `("memories", user_id)` namespace, which *is* the user's
            long-term memory.
            """
        ),
        code(
            """
            class RuleModel(BaseChatModel):
                \"\"\"A stand-in for a chat model: it answers by rules over the messages it is sent.\"\"\"

                inputs: list = Field(default_factory=list)

                @property
                def _llm_type(self) -> str:
                    return "rule-based"

                def bind_tools(self, tools, **kwargs):
                    return self  # it knows its tools by name

                def _generate(self, messages, stop=None, run_manager=None, **kwargs):
                    self.inputs.append(list(messages))
                    return ChatResult(generations=[ChatGeneration(message=self.answer(messages))])

                def answer(self, messages):
                    last = messages[-1]
                    if isinstance(last, ToolMessage):
                        return AIMessage(f"Done: {last.content}")
                    text = last.text
                    if found := re.search(r"weather in (\\w+)", text):
                        return self.call("weather", city=found.group(1))
                    if text.lower().startswith("please remember that "):
                        fact = text[len("please remember that "):].replace("I am ", "the user is ").replace("my ", "the user's ")
                        return self.call("save_memory", content=fact[0].upper() + fact[1:])
                    if "about me" in text:
                        block = next((m.text for m in messages if isinstance(m, SystemMessage) and "<memory>" in m.text), "")
                        lines = [line[2:] for line in block.splitlines() if line.startswith("- ")]
                        return AIMessage("From memory: " + " | ".join(lines) if lines else "I know nothing about you yet.")
                    return AIMessage(f"Noted. (I was sent {len(messages)} message{'s' if len(messages) > 1 else ''}.)")

                @staticmethod
                def call(name, **args):
                    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call_{uuid.uuid4().hex[:8]}", "type": "tool_call"}])


            @tool
            def weather(city: str) -> str:
                \"\"\"Today's weather in a city.\"\"\"
                return f"Sunny and 24 °C in {city}."


            @tool
            def save_memory(content: str, config: RunnableConfig) -> str:
                \"\"\"Keep a fact about the user for future conversations.\"\"\"
                key = str(uuid.uuid4())
                get_store().put(("memories", config["configurable"]["user_id"]), key,
                                {"content": content, "memory_type": "fact", "importance": 0.8})
                return f"saved as memory {key[:8]}"
            """
        ),
        md(
            """
            ## The agent

            A small window (700 tokens, 100 kept for the answer, at most 120 for the running
            summary) so that a short conversation overflows it. `user_id` and `thread_id` come from the run's
            `config["configurable"]`; `thread_id` is also LangGraph's checkpoint thread.
            """
        ),
        code(
            """
            data = tempfile.TemporaryDirectory()
            config = MemoryConfig(max_tokens=700, system_reserve=60, output_reserve=100, summary_max_tokens=120, job_mode="inline")
            memory = TieredMemory(data.name, config)
            model = RuleModel()


            def make_agent(memory):
                return create_react_agent(
                    model, [weather, save_memory],
                    pre_model_hook=pre_model_hook(memory),
                    post_model_hook=post_model_hook(memory),
                    checkpointer=memory.checkpointer,
                    store=memory.store,
                )


            agent = make_agent(memory)
            state_tokens, sent_tokens, turn_threads = [], [], []


            def ask(thread_id, text, agent=None):
                run = {"configurable": {"user_id": "alice", "thread_id": thread_id}}
                out = (agent or globals()["agent"]).invoke({"messages": [HumanMessage(text)]}, run)
                state_tokens.append(memory.admin.counter.count_messages(out["messages"]))
                sent_tokens.append(memory.admin.counter.count_messages(model.inputs[-1]))
                turn_threads.append(thread_id)
                print(f"[{thread_id}] alice: {text}\\n[{thread_id}] agent: {out['messages'][-1].text}")
                return out
            """
        ),
        md("## Thread 1: Alice introduces herself, uses two tools, and talks at length"),
        code(
            """
            ask("t1", "Hi! My name is Alice, I live in Lisbon and I prefer green tea.")
            ask("t1", "What's the weather in Lisbon today?")
            ask("t1", "Please remember that I am allergic to peanuts.")
            for n in range(1, 11):
                ask("t1", f"Notes from project meeting {n}: we reviewed the roadmap for the next two quarters, "
                          "went through the budget line by line, discussed the hiring plan for the platform "
                          "team, agreed on owners for the three open risks, and will meet again next week.")
            """
        ),
        md(
            """
            ## Thread 2: a new conversation, the same user

            The new thread has no messages yet, but the pre-model hook puts the memory block in
            front of the question: entities and memories learned in thread 1, by the offline
            extractor and by the `save_memory` tool.
            """
        ),
        code('out = ask("t2", "What do you know about me?")'),
        md(
            """
            What the hook sent the model for that answer, rendered (`before_turn` builds the same
            context the hook does):
            """
        ),
        code('memory.before_turn("alice", "t2", query="What do you know about me?")'),
        md(
            """
            ## State versus model input

            The checkpointer keeps every message of the thread in the graph state; the model gets
            the budgeted view. Without the pre-model hook, `create_react_agent` would send the
            whole state.
            """
        ),
        code(
            """
            fig, ax = plt.subplots(figsize=(8, 3.5))
            for thread_id, style in (("t1", "-"), ("t2", "none")):
                turns = [n for n, t in enumerate(turn_threads, 1) if t == thread_id]
                for series, colour, label in ((state_tokens, "tab:blue", "graph state (what would be sent without the hook)"),
                                              (sent_tokens, "tab:orange", "model input from pre_model_hook")):
                    ax.plot(turns, [series[n - 1] for n in turns], marker="o" if thread_id == "t2" else ".",
                            linestyle=style, color=colour, label=label if thread_id == "t1" else None)
            first_t2 = turn_threads.index("t2") + 1
            ax.axvline(first_t2 - 0.5, color="tab:green", alpha=0.4)
            ax.annotate("thread 2", (first_t2 - 0.4, max(state_tokens) * 0.9), color="tab:green")
            ax.axhline(config.context_budget, color="gray", linestyle=":", label=f"context budget ({config.context_budget})")
            ax.set(xlabel="turn", ylabel="tokens", title="Tokens per turn: thread state vs model input")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=8)
            plt.show()
            """
        ),
        code(
            """
            t1 = {"configurable": {"user_id": "alice", "thread_id": "t1"}}
            state = agent.get_state(t1)
            print(len(state.values["messages"]), "messages in thread 1's graph state")
            print(len(memory.threads.messages("alice", "t1")), "messages in thread 1's memory log")
            print(len(list(memory.checkpointer.list(t1))), "checkpoints of thread 1, in", memory.data_dir / "memory.db")
            """
        ),
        md(
            """
            ## Inspecting the store

            `memory.store` is a LangGraph `BaseStore`: the `("memories", user_id)` namespace holds
            the user's long-term memories — the tool's and the extractor's alike — searched with
            the same hybrid recall as `memory.search`.
            """
        ),
        code(
            """
            print(memory.store.list_namespaces(prefix=("memories",)))
            for item in memory.store.search(("memories", "alice"), query="food allergy", limit=3):
                print(f"{item.score:.3f}  {item.key[:8]}  {item.value}")
            """
        ),
        code('memory.memories.search("alice", "food allergy", k=3, explain=True)'),
        code('memory.entities.get("alice", "Alice")'),
        code("memory.admin.stats()"),
        md(
            """
            ## Reopening

            A new process opens the same directory: the checkpointer restores thread 1's state and
            the conversation goes on where it stopped.
            """
        ),
        code(
            """
            memory.close()
            memory = TieredMemory(data.name, config)
            agent = make_agent(memory)
            print(len(agent.get_state(t1).values["messages"]), "messages in thread 1's state after reopening")
            out = ask("t1", "What's the weather in Porto?")
            out = ask("t1", "What do you know about me?")
            """
        ),
        md(
            """
            ## Forgetting the user

            `forget(user_id=...)` deletes the user's messages, entities, memories, episodes, jobs
            and store items, and the LangGraph checkpoints of their threads.
            """
        ),
        code(
            """
            print(memory.admin.forget(user_id="alice"))
            print(len(agent.get_state(t1).values.get("messages", [])), "messages left in thread 1's state")
            print(memory.store.search(("memories", "alice"), query="allergy"))
            memory.admin.stats()
            """
        ),
        code(
            """
            memory.close()
            data.cleanup()
            """
        ),
    ]


NOTEBOOKS: dict[str, Callable[[], list[Cell]]] = {
    "01_replace_conversation_buffer_memory.ipynb": nb01,
    "02_langgraph_agent.ipynb": nb02,
    "03_forgetting_and_decay.ipynb": nb03,
}


def main(argv: list[str]) -> int:
    prefixes = argv or [""]
    for name, cells in NOTEBOOKS.items():
        if not any(name.startswith(p) for p in prefixes):
            continue
        started = time.monotonic()
        nb = execute(notebook(cells()))
        nbformat.validate(nb)
        nbformat.write(nb, HERE / name)
        print(f"{name}: executed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

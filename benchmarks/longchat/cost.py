"""Prompt tokens and LLM calls per turn over one long conversation, memory by memory.

Every memory gets the same turns in the same order, as one continuous conversation (one
thread), and before each user turn we record what the model would be sent: the memory's
context plus the new user message, counted with tiktoken ``cl100k_base`` in OpenAI's chat
format (``TiktokenCounter``) for everyone.

* ``ours``: ``TieredMemory`` at an 8k context budget (``max_tokens`` 9,216 with 1,024 kept
  for the answer), ``before_turn`` → ``after_turn`` per exchange, with a scripted chat model
  as ``model=`` answering the extraction call (so its calls are counted), background jobs
  flushed between turns as a user's think time would let them finish;
* ``ours @1.5k``: the same at a 1,536-token context budget (``SMALL_CONFIG``): the window
  keeps the last few turns and recall brings back the rest;
* ``ConversationBufferMemory`` (langchain-classic): every message, every time;
* ``ConversationSummaryBufferMemory`` (langchain-classic), ``max_token_limit`` 8,192: a
  scripted summariser returns a fixed 300-token summary; its token counting uses tiktoken
  (the default GPT-2 tokenizer needs a model-hub download);
* ``SummarizationMiddleware`` (LangChain v1, ``create_agent`` with a checkpointer): summary
  triggered at 8,192 tokens, keeping the last 20 messages, the same scripted summariser.
"""

from __future__ import annotations

import sys
import tempfile
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.messages.utils import convert_to_messages
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from langchain_tiered_memory.tokens import TiktokenCounter

from .generator import Conversation, Turn
from .ours import SMALL_CONFIG, Ours

BUDGET = 8192
SUMMARY_TOKENS = 300
KEEP_MESSAGES = 20
SYSTEMS = ("ours", "ours @1.5k", "ConversationBufferMemory", "ConversationSummaryBufferMemory", "SummarizationMiddleware")

_COUNTER: TiktokenCounter | None = None


def counter() -> TiktokenCounter:
    global _COUNTER
    if _COUNTER is None:
        _COUNTER = TiktokenCounter()
    return _COUNTER


def count_messages(messages: Sequence[Any]) -> int:
    return counter().count_messages(convert_to_messages(list(messages)))


def fixed_summary(tokens: int = SUMMARY_TOKENS) -> str:
    """A summary of exactly ``tokens`` tiktoken tokens (give or take the last word)."""
    words = ("The user and the assistant discussed plans, preferences, family news and "
             "practical questions; earlier details are condensed here. ").split()
    out: list[str] = []
    while counter().count_text(" ".join(out)) < tokens:
        out.append(words[len(out) % len(words)])
    return " ".join(out)


class ScriptedChat(BaseChatModel):
    """A chat model that answers ``reply`` (a string, or a callable of the prompt), counts
    its calls, keeps the last prompt, and counts tokens with tiktoken."""

    reply: Any = ""
    calls: int = 0
    last_input: list[BaseMessage] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "scripted-bench"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **kwargs: Any) -> ChatResult:
        self.calls += 1
        self.last_input = list(messages)
        answer = self.reply(messages) if callable(self.reply) else self.reply
        message = answer if isinstance(answer, AIMessage) else AIMessage(str(answer))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def get_num_tokens_from_messages(self, messages: list[BaseMessage], tools: Any = None) -> int:
        return count_messages(messages)

    def get_num_tokens(self, text: str) -> int:
        return counter().count_text(text)


@dataclass
class Series:
    system: str
    tokens: dict[int, int] = field(default_factory=dict)  # user turn index -> prompt tokens
    llm_calls: int = 0
    exchanges: int = 0
    jobs: int | None = None
    note: str = ""

    @property
    def calls_per_turn(self) -> float:
        return self.llm_calls / self.exchanges if self.exchanges else 0.0


def _exchanges(conversation: Conversation, max_turns: int) -> list[tuple[int, Turn, Turn]]:
    turns = [t for t in conversation.turns][:max_turns]
    return [(i, turns[i], turns[i + 1]) for i in range(0, len(turns) - 1, 2)]


def _ours(conversation: Conversation, exchanges: list[tuple[int, Turn, Turn]], *, name: str = "ours",
          note: str = "one thread, 8k budget", **config: Any) -> Series:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
    from scripted_model import ScriptedChatModel, entity, memory, turn_tool_call

    summary = fixed_summary()

    def answer(_messages: Any) -> Any:
        return turn_tool_call(
            entities=[entity("Sam", "person", relation_to_user="friend")],
            memories=[memory("The user mentioned a plan for the weekend.", "fact", 0.7)],
            summary=summary,
        )

    model = ScriptedChatModel(script=[], default=answer)
    out = Series(name, note=f"{note}; a scripted extraction model counts calls")
    user = conversation.user_id
    thread = f"{user}-cost"
    with tempfile.TemporaryDirectory() as tmp:
        ours = Ours(tmp, model=model, **config)
        try:
            for i, u, a in exchanges:
                ctx = ours.before_turn(user, thread, u.text, u.at)
                out.tokens[i] = ctx.token_usage.total + counter().count_message(HumanMessage(u.text))
                ours.add_exchange(user, thread, u, a)
                ours.memory.flush()
            out.exchanges = len(exchanges)
            out.llm_calls = model.calls
            out.jobs = ours.memory.admin.stats()["jobs"]["done"]
        finally:
            ours.close()
    return out


def _buffer(exchanges: list[tuple[int, Turn, Turn]]) -> Series:
    from langchain_classic.memory import ConversationBufferMemory

    mem = ConversationBufferMemory(return_messages=True)
    out = Series("ConversationBufferMemory", note="every message of the conversation")
    for i, u, a in exchanges:
        history = mem.load_memory_variables({})["history"]
        out.tokens[i] = count_messages([*history, HumanMessage(u.text)])
        mem.save_context({"input": u.text}, {"output": a.text})
    out.exchanges = len(exchanges)
    return out


def _summary_buffer(exchanges: list[tuple[int, Turn, Turn]]) -> Series:
    from langchain_classic.memory import ConversationSummaryBufferMemory

    llm = ScriptedChat(reply=fixed_summary())
    mem = ConversationSummaryBufferMemory(llm=llm, max_token_limit=BUDGET, return_messages=True)
    out = Series("ConversationSummaryBufferMemory",
                 note=f"max_token_limit {BUDGET}; scripted {SUMMARY_TOKENS}-token summary")
    for i, u, a in exchanges:
        history = mem.load_memory_variables({})["history"]
        out.tokens[i] = count_messages([*history, HumanMessage(u.text)])
        mem.save_context({"input": u.text}, {"output": a.text})
    out.exchanges = len(exchanges)
    out.llm_calls = llm.calls
    return out


def _middleware(exchanges: list[tuple[int, Turn, Turn]]) -> Series:
    from langchain.agents import create_agent
    from langchain.agents.middleware import SummarizationMiddleware
    from langgraph.checkpoint.memory import InMemorySaver

    agent_model = ScriptedChat()
    summariser = ScriptedChat(reply=fixed_summary())
    middleware = SummarizationMiddleware(
        summariser, trigger=("tokens", BUDGET), keep=("messages", KEEP_MESSAGES), token_counter=count_messages,
    )
    agent = create_agent(agent_model, [], middleware=[middleware], checkpointer=InMemorySaver())
    config = {"configurable": {"thread_id": "cost"}}
    out = Series("SummarizationMiddleware",
                 note=f"trigger {BUDGET} tokens, keep {KEEP_MESSAGES} messages; scripted summariser")
    for i, u, a in exchanges:
        agent_model.reply = a.text
        agent.invoke({"messages": [HumanMessage(u.text)]}, config)
        out.tokens[i] = count_messages(agent_model.last_input)
    out.exchanges = len(exchanges)
    out.llm_calls = summariser.calls
    return out


def run(conversation: Conversation, checkpoints: Sequence[int] = (50, 150, 300),
        systems: Sequence[str] = SYSTEMS) -> tuple[list[int], list[Series]]:
    """Prompt tokens before every user turn up to the last of ``checkpoints`` that the
    conversation reaches (turn N, 0-based: the prompt that answers turn N, with N earlier
    turns stored), and those checkpoints."""
    n = len(conversation.turns)
    points = sorted({c - c % 2 for c in checkpoints if c - c % 2 < n - 1})
    exchanges = _exchanges(conversation, max(points) + 2 if points else 0)
    runners = {
        "ours": lambda: _ours(conversation, exchanges),
        "ours @1.5k": lambda: _ours(conversation, exchanges, name="ours @1.5k",
                                    note="one thread, 1,536-token budget", **SMALL_CONFIG),
        "ConversationBufferMemory": lambda: _buffer(exchanges),
        "ConversationSummaryBufferMemory": lambda: _summary_buffer(exchanges),
        "SummarizationMiddleware": lambda: _middleware(exchanges),
    }
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for name in systems:
            out.append(runners[name]())
    return points, out

"""``tiered-memory chat``: a conversation in the terminal, with the memory's status after each reply.

The model is ``ChatOpenAI`` on the server the environment names (``OPENAI_BASE_URL``,
``OPENAI_API_KEY``; the model from ``--model`` or ``TIERED_MEMORY_MODEL``: see
:mod:`langchain_tiered_memory.llm_config`), else an offline echo. Each request carries one
system message (the thread's system prompt and the memory block, merged), since many chat
templates of local models refuse a second one. A server that cannot be reached ends the
chat at once with one line; the message typed is kept. The offline echo's replies are
shown, never stored: the thread keeps the user's messages alone (docs/cli.md).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from ..errors import ModelUnavailableError
from . import common

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ..context import MemoryContext
    from ..llm.settings import ModelSettings


def add_commands(command: common.AddCommand) -> None:
    """Register ``chat``."""
    p = command("chat", run, "chat in the terminal: a model on OPENAI_BASE_URL / OPENAI_API_KEY, else an offline echo")
    p.add_argument("--user", default="me", help="the user id (default: me)")
    p.add_argument("--thread", default="chat", help="the thread id (default: chat)")
    p.add_argument("--system", default="You are a helpful assistant.", help="system prompt of a new thread")
    p.add_argument("--model", metavar="NAME",
                   help="the model name on the server (default: $TIERED_MEMORY_MODEL, else gpt-4o-mini)")
    p.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                   help="seconds one model request may take (default: 60)")
    p.add_argument("--max-retries", type=common.whole, default=1, metavar="N",
                   help="retries of a failed request by the client (default: 1)")
    common.add_budget(p)


def _model(args: argparse.Namespace) -> tuple[BaseChatModel | None, ModelSettings | None]:
    from ..llm.settings import ModelSettings

    settings = ModelSettings.from_env(model=args.model, timeout=args.timeout, max_retries=args.max_retries)
    if settings is None:
        return None, None
    settings.check_reachable()  # before anything is written: fail fast, with one line
    return settings.chat_model(), settings


def run(args: argparse.Namespace) -> int:
    from langchain_core.messages import HumanMessage, SystemMessage, merge_message_runs

    from ..llm.settings import is_connection_error
    from ..llm.spending import ENV_MODEL_BUDGET

    model, settings = _model(args)
    if model is None:
        from .echo import OfflineEchoModel

        chat_model: BaseChatModel = OfflineEchoModel()
    else:
        chat_model = model
    # Inline jobs: what a turn taught the memory shows in the next turn's status.
    fields: dict[str, Any] = {"job_mode": "inline"}
    if settings is not None and settings.api_key is not None:
        # The model is the environment's, with a key: paid calls, so bounded as a memory
        # bounds them when it picks that model itself (spending.ENV_MODEL_BUDGET).
        fields["budget"] = ENV_MODEL_BUDGET
    with common.open_memory(args, create=True, config=common.config(args, **fields), model=model) as memory:
        user, thread = args.user, args.thread
        if not memory.threads.messages(user, thread):
            memory.after_turn(user, thread, [SystemMessage(args.system)])
        name = "offline echo (no OPENAI_BASE_URL or OPENAI_API_KEY)" if settings is None else settings.describe()
        print(f"chatting as {user!r} in thread {thread!r}; model: {name}; memory in {memory.data_dir}")
        print("type 'exit' or press Ctrl-D to leave", flush=True)
        for line in _lines():
            text = line.strip()
            if not text:
                continue
            if text.lower() in ("exit", "quit", "/exit", "/quit"):
                break
            question = HumanMessage(text)
            context = memory.before_turn(user, thread, query=text)
            try:
                # One system message: the pinned prompt and the memory block, merged.
                if model is None:
                    # The echo's replies are not stored, so the window's user messages run on
                    # into the question: kept apart from them, it is echoed alone.
                    reply = chat_model.invoke([*merge_message_runs(context.messages), question])
                else:
                    reply = chat_model.invoke(merge_message_runs([*context.messages, question]))
            except Exception as exc:  # the model's failure, not ours: keep the message
                memory.after_turn(user, thread, [question])
                if settings is not None and is_connection_error(exc):
                    raise ModelUnavailableError(
                        settings.unreachable(f"{type(exc).__name__}: {exc}") + "; your message is kept"
                    ) from None
                common.error(f"the model call failed: {exc}; your message is kept")
                continue
            print(f"assistant> {reply.text}")
            # The echo is no answer: stored, it would come back as what the assistant said
            # (recalled in other threads, summarised, extracted). Only the user's words are kept.
            memory.after_turn(user, thread, [question] if model is None else [question, reply])
            print(_status(context, memory.admin.counter.count_message(question)), flush=True)
    return 0


def _lines() -> Iterator[str]:
    interactive = sys.stdin.isatty()
    while True:
        if interactive:
            print("you> ", end="", flush=True)
        line = sys.stdin.readline()
        if not line:
            return
        yield line


def _status(context: MemoryContext, question_tokens: int) -> str:
    usage = context.token_usage
    parts = [f"{name} {tokens}" for name, tokens in usage.items() if tokens and name not in ("window", "overhead")]
    parts.append(f"window {len(context.window)} msgs {usage['window']}")
    if context.evicted:
        parts.append(f"{context.evicted} evicted")
    return f"[memory] {usage.total + question_tokens}/{usage.budget} tokens: " + " · ".join(parts)

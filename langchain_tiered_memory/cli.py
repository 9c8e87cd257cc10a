"""``tiered-memory``: the command line over one memory directory (``--data-dir``, default ``./memory``).

Commands: ``demo``, ``chat``, ``inspect``, ``search``, ``entities``, ``episodes``, ``threads``,
``forget``, ``export``, ``import``, ``stats``, ``reindex`` and ``migrate`` (to PostgreSQL and a
Qdrant server). Each is a thin adapter over one :class:`~langchain_tiered_memory.TieredMemory`
call (``migrate``: over :func:`langchain_tiered_memory.migrate.migrate`). Errors are one readable line on
stderr and exit code 1 (2 for bad arguments, 130 for Ctrl-C), never a traceback; ``--json``
prints machine-readable output where a command has results.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from .context import MEMORY_BLOCK_OPEN
from .errors import DataDirError, InvalidInputError, NotFoundError, TieredMemoryError

if TYPE_CHECKING:
    from .context import MemoryContext
    from .memory import TieredMemory

DEFAULT_DATA_DIR = "./memory"
PROG = "tiered-memory"
#: The demo's small window, so that its short conversation evicts.
DEMO_BUDGET = {"max_tokens": 600, "system_reserve": 60, "output_reserve": 100}

# A scripted conversation long enough to leave a small window: the user plans a trip.
DEMO_TURNS: list[tuple[str, str]] = [
    ("Hi! My name is Alice and I'm planning a two-week trip to Japan next April.",
     "Nice to meet you, Alice! April is cherry-blossom season, a lovely time to go. Which cities are you thinking of?"),
    ("Tokyo and Kyoto for sure, maybe Osaka. I prefer quiet neighbourhoods over nightlife.",
     "Then stay in Yanaka or Kagurazaka in Tokyo, and Higashiyama in Kyoto: old streets, small shrines, early nights."),
    ("My budget is about 3,000 euros, flights excluded. Is that enough?",
     "Yes. Mid-range hotels run 100-150 euros a night, a 14-day rail pass about 450 euros, and food 40 euros a day."),
    ("I'm vegetarian, by the way. Will that be hard?",
     "A little: dashi (fish stock) hides in many dishes. Look for shojin ryori, Buddhist temple cuisine, especially in Kyoto."),
    ("Remember that I can't stand crowded trains in the morning.",
     "Noted: I'll plan transfers after 10 am, when the commuter rush is over."),
    ("What should I pack for April weather?",
     "Layers: 10-20 °C days, cool evenings, some rain. A light waterproof jacket and comfortable walking shoes."),
    ("Can you suggest a day trip from Kyoto?",
     "Nara: the deer park and Todai-ji, 45 minutes by train. Or Uji for green tea and the Byodo-in temple."),
    ("I love green tea, so Uji it is! How do I get there?",
     "Take the JR Nara line from Kyoto Station to Uji, about 20 minutes, covered by the rail pass."),
    ("Should I book the ryokan in Hakone now?",
     "Yes, for April weekends book two to three months ahead. Ask for a room with a private onsen if you prefer quiet."),
    ("What's the best way to get from Tokyo to Hakone?",
     "The Odakyu Romancecar from Shinjuku, 85 minutes, then the Hakone loop: railway, cable car, ropeway and boat."),
    ("How much cash should I carry?",
     "Carry 20,000-30,000 yen: many temples, small restaurants and rural buses still take cash only."),
    ("Last question: any etiquette tips?",
     "Shoes off indoors, no tipping, quiet on trains, and bow slightly when thanking someone. Enjoy the trip, Alice!"),
]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tiered-memory`` command; returns the exit code."""
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    _quiet_logs(args.verbose)
    try:
        return int(args.run(args) or 0)
    except TieredMemoryError as exc:
        _error(str(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # Output piped into `head` and the like: stop quietly, as Unix tools do.
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - flushed at exit, never read
        return 0
    except Exception as exc:  # a bug of ours: still one line, the traceback on request
        if os.environ.get("TIERED_MEMORY_DEBUG"):
            raise
        _error(f"unexpected {type(exc).__name__}: {exc} (set TIERED_MEMORY_DEBUG=1 for the traceback)")
        return 1


def _error(message: str) -> None:
    print(f"{PROG}: error: {' '.join(message.split())}", file=sys.stderr)


class _OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = " ".join(record.getMessage().split())
        return f"{PROG}: {record.levelname.lower()}: {text}"


def _quiet_logs(verbose: bool) -> None:
    """The package's log as one line per record on stderr; notes (offline mode, job retries)
    only with ``--verbose``, since the commands say what matters themselves."""
    logger = logging.getLogger("langchain_tiered_memory")
    if not any(isinstance(h.formatter, _OneLine) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_OneLine())
        logger.addHandler(handler)
    logger.propagate = False
    logger.setLevel(logging.INFO if verbose else logging.ERROR)


# --- arguments --------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Layered memory for LangChain and LangGraph agents.")
    parser.add_argument(
        "--data-dir", default=DEFAULT_DATA_DIR, metavar="DIR",
        help=f"the memory directory (default: {DEFAULT_DATA_DIR})",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="show the package's log notes")
    # Also accepted after the command; SUPPRESS keeps a value given before it.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="DIR", help="the memory directory")
    common.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(name: str, run: Any, help: str, *, json_output: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, parents=[common], help=help, description=help)
        p.set_defaults(run=run, parser=p)
        if json_output:
            p.add_argument("--json", action="store_true", help="machine-readable JSON output")
        return p

    def user(p: argparse.ArgumentParser) -> None:
        p.add_argument("--user", required=True, metavar="USER", help="the user id")

    def budget(p: argparse.ArgumentParser, defaults: Mapping[str, int] | None = None) -> None:
        from .config import MemoryConfig

        shown = {name: f.default for name, f in MemoryConfig.model_fields.items()} | dict(defaults or {})
        for name, help in (("max_tokens", "the model's context window"),
                           ("output_reserve", "tokens kept for the answer"),
                           ("system_reserve", "tokens kept for the system prompt")):
            p.add_argument(f"--{name.replace('_', '-')}", dest=name, type=_whole, default=None, metavar="N",
                           help=f"{help} (default: {shown[name]})")

    p = command("demo", _demo, "run a scripted conversation offline and show what the model is sent")
    budget(p, DEMO_BUDGET)
    p = command("chat", _chat, "chat in the terminal; a real model with OPENAI_API_KEY, else an offline echo")
    p.add_argument("--user", default="me", help="the user id (default: me)")
    p.add_argument("--thread", default="chat", help="the thread id (default: chat)")
    p.add_argument("--system", default="You are a helpful assistant.", help="system prompt of a new thread")
    budget(p)
    p = command("inspect", _inspect, "show exactly what the model would be sent now, with token counts", json_output=True)
    user(p)
    p.add_argument("--thread", required=True, help="the thread id")
    p.add_argument("--query", help="what the memory sections search for (default: the last user message)")
    budget(p)
    p = command("search", _search, "search a user's long-term memories", json_output=True)
    p.add_argument("query", help="what to search for")
    user(p)
    p.add_argument("-k", type=_positive, default=5, help="how many memories (default: 5)")
    p.add_argument("--type", action="append", choices=("fact", "preference", "experience", "instruction"),
                   help="only memories of this type (repeatable)")
    p.add_argument("--explain", action="store_true", help="show how each score was made")
    p = command("entities", _entities, "list a user's entity profiles", json_output=True)
    user(p)
    p.add_argument("--name", help="one entity, with the history of its attributes")
    p = command("episodes", _episodes, "list a user's past sessions (episodes)", json_output=True)
    user(p)
    p.add_argument("--query", help="most relevant to this first (default: newest first)")
    p.add_argument("--since", type=_datetime, help="ended at or after this ISO date/time")
    p.add_argument("--until", type=_datetime, help="started at or before this ISO date/time")
    p.add_argument("-k", type=_positive, default=10, help="how many episodes (default: 10)")
    p = command("threads", _threads, "list a user's threads", json_output=True)
    user(p)
    p = command("forget", _forget, "delete a user, a thread, a memory or an entity, in every layer", json_output=True)
    p.add_argument("--user", help="the user (alone: everything of the user)")
    p.add_argument("--thread", help="a thread, and what was learned in it")
    p.add_argument("--memory", metavar="ID", help="one long-term memory (with --user)")
    p.add_argument("--entity", metavar="NAME", help="one entity profile (with --user)")
    p.add_argument("--yes", "-y", action="store_true", help="do not ask for confirmation")
    p = command("export", _export, "write everything of a user as JSON Lines")
    user(p)
    p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")
    p = command("import", _import, "restore a file written by export into the memory", json_output=True)
    p.add_argument("file", metavar="FILE", help="the export file ('-' for stdin)")
    command("stats", _stats, "counts, disk size, the job queue and failed jobs", json_output=True)
    command("reindex", _reindex, "rebuild every vector from its text (after changing the embedding model)", json_output=True)
    p = command("migrate", _migrate, "copy the memory directory to PostgreSQL and a Qdrant server (resumable)",
                json_output=True)
    p.add_argument("--to", required=True, metavar="URL",
                   help="the PostgreSQL database: postgresql://user:password@host:5432/dbname")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--qdrant-url", metavar="URL", help="the Qdrant server, e.g. http://localhost:6333")
    where.add_argument("--qdrant-path", metavar="DIR",
                       help="qdrant-client's local mode in DIR instead of a server (trials and tests)")
    p.add_argument("--qdrant-api-key", metavar="KEY", default=os.environ.get("QDRANT_API_KEY"),
                   help="the Qdrant server's API key (default: $QDRANT_API_KEY)")
    return parser


def _int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse type: a whole number, at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is not a whole number of at least {minimum}")
        return value

    return parse


_whole = _int_at_least(0)
_positive = _int_at_least(1)


def _datetime(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO date or time (e.g. 2026-04-01 or 2026-04-01T09:30)") from None
    # A time without zone is the user's local time.
    return value if value.tzinfo else value.astimezone()


# --- shared -----------------------------------------------------------------------------


def _open(args: argparse.Namespace, *, create: bool = False, look: bool = False, **kwargs: Any) -> TieredMemory:
    """The memory of ``--data-dir``; a command that only reads never creates one.

    ``look``: open it to look (``job_mode="manual"``): no job runs, nothing is written, so
    ``stats`` or ``search`` never does a pending job's work — least of all with another
    extractor than the one it was journaled for.
    """
    from .config import MemoryConfig
    from .memory import TieredMemory
    from .storage import DB_FILENAME

    if not create and not (Path(args.data_dir) / DB_FILENAME).is_file():
        raise DataDirError(f"no memory at {args.data_dir}; run `{PROG} demo` or pass --data-dir")
    if look:
        config = kwargs.pop("config", None) or MemoryConfig()
        kwargs["config"] = config.model_copy(update={"job_mode": "manual"})
    return TieredMemory(args.data_dir, **kwargs)


def _config(args: argparse.Namespace, **fields: Any) -> Any:
    """A config of ``fields``, with the budget options given on the command line."""
    from .config import MemoryConfig

    for name in ("max_tokens", "output_reserve", "system_reserve"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    return MemoryConfig(**fields)


def _print_json(value: Any) -> None:
    print(json.dumps(value, ensure_ascii=False, indent=2, default=_jsonable))


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, Mapping):
        return dict(value)
    return str(value)


def _indent(text: str, prefix: str = "    ") -> str:
    return textwrap.indent(text.rstrip("\n") or "(empty)", prefix, lambda line: True)


def _when(text: str | datetime) -> str:
    value = datetime.fromisoformat(text) if isinstance(text, str) else text
    return value.astimezone().strftime("%Y-%m-%d %H:%M")


def _counts(counts: Mapping[str, int]) -> str:
    shown = [f"{n} {k.replace('_', ' ')}" for k, n in counts.items() if n]
    return ", ".join(shown) or "nothing"


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


def _dir_size(path: Path) -> int:
    """Bytes the directory takes on disk. Qdrant's files are sparse (32 MB apparent, a few
    KB used), so their allocated blocks count, not their length."""
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:  # a file removed while we walk
                continue
            blocks = getattr(st, "st_blocks", None)
            total += st.st_size if blocks is None else min(st.st_size, blocks * 512)
    return total


# --- demo -------------------------------------------------------------------------------


def _demo(args: argparse.Namespace) -> int:
    from langchain_core.messages import HumanMessage, SystemMessage

    # Inline jobs: the summary and entities of each turn exist before the next one starts.
    config = _config(args, **DEMO_BUDGET, summary_max_tokens=120, job_mode="inline")
    with _open(args, create=True, config=config) as memory:
        user, thread = "alice", f"demo-{len(memory.threads('alice')) + 1}"
        print(f"memory in {memory.data_dir}  (thread {thread!r})")
        print(
            f"budget: {config.max_tokens} tokens - {config.output_reserve} output reserve = "
            f"{config.context_budget}; system reserve {config.system_reserve}\n"
        )
        memory.after_turn(user, thread, [SystemMessage("You are a concise travel assistant.")])
        print(f"{'turn':>4}  {'log':>4}  {'sent':>4}  {'evicted':>7}  {'tokens':>13}")
        for n, (question, answer) in enumerate(DEMO_TURNS, 1):
            context = memory.before_turn(user, thread)
            # The model would be called here with context.messages + [the question].
            memory.after_turn(user, thread, [HumanMessage(question), AIMessage(answer)])
            usage = context.token_usage
            print(
                f"{n:>4}  {len(memory.get_messages(user, thread)):>4}  "
                f"{len(context.window):>4}  {context.evicted:>7}  "
                f"{usage.total:>6}/{usage.budget:<6}"
            )
        context = memory.before_turn(user, thread)
        print("\nwhat the model would be sent now:")
        for message in context.messages:
            if message is not context.system_message and message.type == "system":
                print("  [memory] " + message.text.replace("\n", "\n           "))
                continue
            text = textwrap.shorten(message.text, 90, placeholder=" …")
            print(f"  [{message.type:>6}] {text}")
        print("\ntoken accounting:")
        for section, tokens in context.token_usage.items():
            print(f"  {section:<10} {tokens:>6}")
        usage = context.token_usage
        print(f"  {'total':<10} {usage.total:>6} of {usage.budget} ({usage.remaining} free)")
        print(
            f"\n{context.evicted} older messages left the window (folded into the summary); "
            f"all {len(memory.get_messages(user, thread))} stay in the log (memory.get_messages)."
        )
        print("\nentities remembered (memory.entities):")
        for entity in memory.entities(user):
            attrs = ", ".join(f"{k}={v}" for k, v in entity.attributes.items())
            print(f"  {entity.name} ({entity.type}) {attrs}")
        print(f"\nextractor: {memory.stats()['extractor']} (pass model= to use an LLM)")
        where = "" if args.data_dir == DEFAULT_DATA_DIR else f" --data-dir {args.data_dir}"
        print(
            f"look closer: {PROG}{where} inspect --user {user} --thread {thread} --max-tokens "
            f"{config.max_tokens} --output-reserve {config.output_reserve} --system-reserve {config.system_reserve}"
        )
    return 0


# --- chat -------------------------------------------------------------------------------


class OfflineEchoModel(BaseChatModel):
    """The model of ``tiered-memory chat`` without ``OPENAI_API_KEY``: it echoes the user
    and quotes the first line of each memory section it was sent, so what the memory
    recalls stays visible offline."""

    @property
    def _llm_type(self) -> str:
        return "offline-echo"

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any) -> ChatResult:
        said = next((m.text for m in reversed(messages) if m.type == "human"), "")
        recalled = []
        for m in messages:
            if m.type == "system" and m.text.startswith(MEMORY_BLOCK_OPEN):
                for part in m.text.split("\n## ")[1:]:
                    name, _, body = part.partition("\n")
                    first = body.strip().splitlines()[0] if body.strip() else ""
                    if first and first != "</memory>":
                        recalled.append(f"{name}: {first}")
        text = f"(offline echo; set OPENAI_API_KEY for a real model) You said: {said}"
        if recalled:
            text += "\nI was sent from memory: " + " | ".join(recalled)
        return ChatResult(generations=[ChatGeneration(message=AIMessage(text))])


def _chat(args: argparse.Namespace) -> int:
    from langchain_core.messages import HumanMessage, SystemMessage

    from .extraction import default_model

    model = default_model()
    chat_model: BaseChatModel = model if model is not None else OfflineEchoModel()
    # Inline jobs: what a turn taught the memory shows in the next turn's status.
    with _open(args, create=True, config=_config(args, job_mode="inline"), model=model) as memory:
        user, thread = args.user, args.thread
        if not memory.get_messages(user, thread):
            memory.after_turn(user, thread, [SystemMessage(args.system)])
        name = "offline echo (no OPENAI_API_KEY)" if model is None else type(model).__name__
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
                reply = chat_model.invoke(context.messages + [question])
            except Exception as exc:  # the model's failure, not ours: keep the message, go on
                memory.after_turn(user, thread, [question])
                _error(f"the model call failed: {exc}; your message is kept")
                continue
            print(f"assistant> {reply.text}")
            memory.after_turn(user, thread, [question, reply])
            print(_status(context, memory.counter.count_message(question)), flush=True)
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


# --- inspect ----------------------------------------------------------------------------


def _inspect(args: argparse.Namespace) -> int:
    from langchain_core.messages import message_to_dict

    with _open(args, look=True, config=_config(args)) as memory:
        context = memory.before_turn(args.user, args.thread, query=args.query, peek=True)
        if not any(t.thread_id == args.thread for t in memory.threads(args.user)):
            print(
                f"note: user {args.user!r} has no thread {args.thread!r} yet; showing what a new "
                f"thread would be sent ({PROG} threads --user {args.user} lists theirs)",
                file=sys.stderr,
            )
        counter = memory.counter
        usage = context.token_usage
        system = context.system_message
        window = [(m, counter.count_message(m)) for m in context.window]
        if args.json:
            _print_json({
                "user_id": context.user_id, "thread_id": context.thread_id, "query": context.query,
                "budget": usage.budget, "total": usage.total, "remaining": usage.remaining,
                "evicted": context.evicted, "truncated": context.truncated,
                "token_usage": dict(usage),
                "system": None if system is None else {"tokens": usage["system"], "text": system.text},
                "sections": [{"name": s.name, "tokens": s.tokens, "text": s.text} for s in context.sections],
                "window": [{"type": m.type, "id": m.id, "tokens": n, "text": m.text} for m, n in window],
                "messages": [message_to_dict(m) for m in context.messages],
            })
            return 0
        config = memory.config
        print(f"what the model would be sent now: user {args.user!r}, thread {args.thread!r}")
        if context.query:
            print(f"memory searched for: {textwrap.shorten(context.query, 100, placeholder=' …')!r}")
        print(f"budget {usage.budget} tokens = max_tokens {config.max_tokens} - output reserve {config.output_reserve}")
        print(f"\n[system] {usage['system']} tokens")
        print(_indent(system.text) if system is not None else "    (no system message in the thread)")
        if context.sections:
            frame = usage.get("memory_frame", 0)
            print(f"\n[memory] {sum(s.tokens for s in context.sections) + frame} tokens "
                  f"({frame} for the fence and headings)")
            for section in context.sections:
                print(f"  {section.name}: {section.tokens} tokens")
                print(_indent(section.text, "      "))
        else:
            print("\n[memory] nothing recalled for this turn")
        evicted = f"; {context.evicted} older messages left it" if context.evicted else ""
        cut = "; one message is truncated to fit" if context.truncated else ""
        print(f"\n[window] {len(window)} messages, {usage['window']} tokens{evicted}{cut}")
        for message, tokens in window:
            print(f"  {message.type:<6} {tokens:>6}  " + _indent(message.text, " " * 16).lstrip())
        print("\ntokens: " + " · ".join(f"{k} {v}" for k, v in usage.items()))
        print(f"total {usage.total} of {usage.budget} ({usage.remaining} free)")
    return 0


# --- reading the layers -----------------------------------------------------------------


def _search(args: argparse.Namespace) -> int:
    from .scoring import TIE_BREAK

    with _open(args, look=True) as memory:
        # A look: the recall is not counted (no access boost from the command line).
        hits = memory.search(args.user, args.query, k=args.k, memory_types=args.type, explain=args.explain, peek=True)
    if args.json:
        _print_json([h.model_dump(mode="json") for h in hits])
        return 0
    if not hits:
        print(f"no memory of user {args.user!r} matches {args.query!r}")
    for rank, hit in enumerate(hits, 1):
        e = hit.entry
        print(f"{rank}. {hit.score:.3f}  [{e.memory_type}, importance {e.importance:.2f}, boost {e.boost:.2f}] "
              f"{' '.join(e.content.split())}")
        print(f"   id {e.id} · created {_when(e.created_at)} · recalled {e.access_count}×"
              + (f" · thread {e.session_id}" if e.session_id else ""))
        if hit.parts is not None:
            p = hit.parts
            dense = "–" if p.dense is None else f"{p.dense:.3f}"
            sparse = "–" if p.sparse is None else f"{p.sparse:.2f}"
            print(f"   relevance {p.relevance:.3f} (cosine {dense}, BM25 {sparse}); prior "
                  f"{p.effective_importance:.3f} = min(1, importance {p.importance:.2f} + boost {p.boost:.2f}) × "
                  f"decay {p.decay:.3f} after {p.days_since_access:.1f} days; score = relevance + "
                  f"{TIE_BREAK:g} × (prior − 0.5) = {p.score:.3f}")
    return 0


def _entities(args: argparse.Namespace) -> int:
    with _open(args, look=True) as memory:
        if args.name is not None:
            entity = memory.entity(args.user, args.name)
            if entity is None:
                raise NotFoundError(f"user {args.user!r} has no entity named {args.name!r} ({PROG} entities --user {args.user} lists them)")
            entities = [entity]
        else:
            entities = memory.entities(args.user)
    if args.json:
        _print_json([dataclasses.asdict(e) for e in entities] if args.name is None else dataclasses.asdict(entities[0]))
        return 0
    if not entities:
        print(f"user {args.user!r} has no entity profiles")
    for e in entities:
        print(f"{e.name} ({e.type})  updated {_when(e.updated_at)}")
        for key, value in e.attributes.items():
            print(f"    {key}: {value}")
        if args.name is not None:
            print("  history:")
            for key, values in e.history.items():
                for v in values:
                    until = f" until {_when(v.superseded_at)}" if v.superseded_at else " (current)"
                    source = f" in thread {v.source_thread}" if v.source_thread else ""
                    print(f"    {key}: {v.value}  learned {_when(v.learned_at)}{source}{until}")
    return 0


def _episodes(args: argparse.Namespace) -> int:
    with _open(args, look=True) as memory:
        hits = memory.search_episodes(args.user, query=args.query, since=args.since, until=args.until, k=args.k)
    if args.json:
        _print_json([{"score": h.score, **dataclasses.asdict(h.episode)} for h in hits])
        return 0
    if not hits:
        print(f"user {args.user!r} has no episodes" + (" in that time range" if args.since or args.until else ""))
    for hit in hits:
        ep = hit.episode
        score = f"  score {hit.score:.3f}" if hit.score is not None else ""
        print(f"[{_when(ep.started_at)} → {_when(ep.ended_at)}] thread {ep.thread_id}{score}")
        print(_indent(ep.summary))
        if ep.decisions:
            print("    decisions: " + "; ".join(ep.decisions))
        if ep.outcome:
            print("    outcome: " + ep.outcome)
        if ep.topics:
            print("    topics: " + ", ".join(ep.topics))
    return 0


def _threads(args: argparse.Namespace) -> int:
    with _open(args, look=True) as memory:
        threads = memory.threads(args.user)
    if args.json:
        _print_json([dataclasses.asdict(t) for t in threads])
        return 0
    if not threads:
        print(f"user {args.user!r} has no threads")
    for t in threads:
        print(f"{t.thread_id}  {t.messages} messages  updated {_when(t.updated_at)}")
    return 0


# --- forgetting -------------------------------------------------------------------------


def _forget(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.parser
    if (args.memory is not None or args.entity is not None) and (args.user is None or args.thread is not None):
        parser.error("--memory and --entity take --user (what they name belongs to a user) and no --thread")
    if args.user is None and args.thread is None:
        parser.error("say what to forget: --user U, --thread T, or --user U with --memory ID or --entity NAME")
    if args.memory is not None and args.entity is not None:
        parser.error("forget one thing at a time: --memory or --entity")
    if args.memory is not None:
        what = f"memory {args.memory} of user {args.user!r}"
    elif args.entity is not None:
        what = f"the entity {args.entity!r} of user {args.user!r}"
    elif args.thread is not None:
        what = f"thread {args.thread!r} and everything learned in it"
    else:
        what = f"everything of user {args.user!r} (messages, summaries, entities, memories, episodes, store items)"
    with _open(args) as memory:
        if not args.yes:
            if not sys.stdin.isatty():
                raise InvalidInputError(f"forget asks for confirmation, but stdin is not a terminal; pass --yes to forget {what}")
            sys.stderr.write(f"Forget {what}? This cannot be undone. [y/N] ")
            sys.stderr.flush()
            if sys.stdin.readline().strip().lower() not in ("y", "yes"):
                print("nothing was forgotten", file=sys.stderr)
                return 1
        counts = memory.forget(user_id=args.user, thread_id=args.thread, entity=args.entity, memory_id=args.memory)
    if args.json:
        _print_json(counts)
    elif any(counts.values()):
        print(f"forgot {_counts(counts)}")
    else:
        print(f"nothing matched {what}; nothing was forgotten")
    return 0


# --- export and import ------------------------------------------------------------------


def _export(args: argparse.Namespace) -> int:
    from .portability import export_jsonl

    with _open(args, look=True) as memory:
        if args.output is None:
            counts = export_jsonl(memory, args.user, sys.stdout)
            sys.stdout.flush()
            where = "stdout"
        else:
            path = Path(args.output)
            # Written aside and renamed: a failed export never leaves a file that looks whole.
            part = path.with_name(path.name + ".part")
            try:
                with open(part, "w", encoding="utf-8") as f:
                    counts = export_jsonl(memory, args.user, f)
                os.replace(part, path)
            except OSError as exc:
                part.unlink(missing_ok=True)
                raise DataDirError(f"cannot write {path}: {exc.strerror or exc}") from None
            except BaseException:
                part.unlink(missing_ok=True)
                raise
            where = str(path)
    print(f"exported user {args.user!r} to {where}: {_counts(counts)}", file=sys.stderr)
    return 0


def _import(args: argparse.Namespace) -> int:
    from .portability import load_jsonl

    # The whole file is checked before the memory is opened, let alone created.
    user_id, data = load_jsonl(sys.stdin if args.file == "-" else args.file)
    with _open(args, create=True) as memory:
        counts = memory.import_user(user_id, data)
        where = memory.data_dir
    if args.json:
        _print_json({"user_id": user_id, "counts": counts})
    else:
        print(f"imported user {user_id!r} into {where}: {_counts(counts)}")
    return 0


# --- maintenance ------------------------------------------------------------------------


def _stats(args: argparse.Namespace) -> int:
    with _open(args, look=True) as memory:
        stats = dict(memory.stats())
        stats.setdefault("disk_bytes", _dir_size(memory.data_dir))
    if args.json:
        _print_json(stats)
        return 0
    print(f"memory at {stats.pop('data_dir', args.data_dir)}")
    sizes = {k: stats.pop(k) for k in list(stats) if k.endswith("_bytes") and isinstance(stats[k], int)}
    total = sizes.pop("disk_bytes")
    parts = "".join(f", {'memory.db' if k == 'db_bytes' else k.removesuffix('_bytes')} {_size(v)}" for k, v in sizes.items())
    print(f"disk: {_size(total)} in all{parts}")
    jobs = stats.pop("jobs", {})
    failed = stats.pop("failed_jobs", [])
    counts = {k: v for k, v in stats.items() if isinstance(v, int) and not isinstance(v, bool)}
    print(" · ".join(f"{v} {k}" for k, v in counts.items()))
    for key, value in stats.items():
        if key not in counts:
            print(f"{key}: {value if not isinstance(value, Mapping) else ' · '.join(f'{k} {v}' for k, v in value.items())}")
    if jobs:
        print("jobs: " + " · ".join(f"{v} {k}" for k, v in jobs.items()))
    if jobs.get("waiting"):
        print(f"  {jobs['waiting']} waiting: journaled by a memory with a chat model, they run only where one is "
              "configured (set OPENAI_API_KEY, or open the directory with model=)")
    if jobs.get("stale"):
        print(f"  {jobs['stale']} stale: leased by a process that no longer runs; the next memory that runs jobs "
              "takes them over")
    if failed:
        print(f"failed jobs ({len(failed)}, newest first):")
        for job in failed:
            print(f"  {job.get('key')}  {job.get('attempts')} attempts, last {job.get('at')}")
            print(f"      {' '.join(str(job.get('reason')).split())}")
    return 0


def _reindex(args: argparse.Namespace) -> int:
    state = {"total": -1, "done": -1}

    def bar(done: int, total: int) -> None:
        if total != state["total"] or done < state["done"]:
            if state["total"] >= 0:
                sys.stderr.write("\n")
            state["total"] = total
        state["done"] = done
        width = 30
        filled = width if total == 0 else width * done // total
        sys.stderr.write(f"\r  [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        sys.stderr.flush()

    with _open(args) as memory:
        counts = memory.reindex(progress=bar)
    if state["total"] >= 0:
        sys.stderr.write("\n")
    if args.json:
        _print_json(counts)
    else:
        print("reindexed " + " and ".join(f"{n} {kind}" for kind, n in counts.items()) + " from memory.db")
    return 0


def _migrate(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from .migrate import migrate

    bars: dict[str, Any] = {}

    def progress(step: str, total: int, done: int) -> None:
        if step not in bars:
            for bar in bars.values():  # one step at a time: the last one is over
                bar.close()
            bars[step] = tqdm(total=total, desc=f"{step:<11}", unit=" rows" if step == "records" else "", file=sys.stderr)
        bars[step].update(done)

    client = None
    if args.qdrant_path is not None:
        from qdrant_client import QdrantClient

        client = QdrantClient(path=args.qdrant_path)
    try:
        report = migrate(args.data_dir, args.to, qdrant_url=args.qdrant_url, qdrant_api_key=args.qdrant_api_key,
                         qdrant_client=client, progress=progress)
    finally:
        for bar in bars.values():
            bar.close()
        if client is not None:
            client.close()
    if args.json:
        _print_json({"ok": report.ok, "counts": {k: {"source": s, "target": t} for k, (s, t) in report.counts.items()}})
    else:
        width = max(len(k) for k in report.counts)
        print(f"{'':<{width}}  {'source':>9}  {'target':>9}")
        for name, (source, target) in report.counts.items():
            print(f"{name:<{width}}  {source:>9}  {target:>9}  {'ok' if source == target else 'MISMATCH'}")
    if not report.ok:
        _error(f"the copy does not match the directory in: {', '.join(report.mismatches)}; run the same "
               "command again to continue it (it never copies a row twice)")
        return 1
    if not args.json:
        print(f"migrated {args.data_dir}: every count matches")
    return 0


if __name__ == "__main__":
    sys.exit(main())

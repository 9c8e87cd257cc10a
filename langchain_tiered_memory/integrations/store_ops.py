"""What the LangGraph store adapter checks and compares, as ``InMemoryStore`` does: the
validation of operations and values, filters, namespace matching, and item conversions."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import numpy as np
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from ..entries import check_query, check_text
from ..errors import InvalidInputError

MEMORIES = "memories"
_OPERATORS = ("$eq", "$ne", "$gt", "$gte", "$lt", "$lte")


# --- validation ---------------------------------------------------------------------------


def check_op(op: Any) -> None:
    """Refuse a malformed op before anything of its batch runs."""
    if not isinstance(op, (GetOp, PutOp, SearchOp, ListNamespacesOp)):
        raise InvalidInputError(
            f"unknown store operation {type(op).__name__}; use GetOp, PutOp, SearchOp or ListNamespacesOp"
        )
    if isinstance(op, ListNamespacesOp):
        for condition in op.match_conditions or ():
            if condition.match_type not in ("prefix", "suffix"):
                raise InvalidInputError(
                    f"match_type must be 'prefix' or 'suffix', got {condition.match_type!r}"
                )
            _check_namespace(condition.path, "a match condition's path")
        if op.max_depth is not None:
            _check_count("max_depth", op.max_depth)
        _check_count("limit", op.limit)
        _check_count("offset", op.offset)
        return
    if isinstance(op, SearchOp):
        _check_namespace(op.namespace_prefix, "namespace_prefix")
        if op.query is not None:
            check_query(op.query)
        if op.filter is not None:
            if not isinstance(op.filter, Mapping):
                raise InvalidInputError(f"filter must be a dict or None, got {type(op.filter).__name__}")
            _check_filter(op.filter)
        _check_count("limit", op.limit)
        _check_count("offset", op.offset)
        return
    _check_namespace(op.namespace, "namespace")
    if not isinstance(op.key, str):
        raise InvalidInputError(f"key must be a str, got {type(op.key).__name__}")
    check_text(op.key, "key")
    if isinstance(op, GetOp) or op.value is None:
        return
    namespace = tuple(op.namespace)
    if not namespace:
        raise InvalidNamespaceError("Namespace cannot be empty.")
    if namespace[0] == "langgraph":
        raise InvalidNamespaceError(f'Root label for namespace cannot be "langgraph". Got: {namespace}')
    if namespace == (MEMORIES,):
        raise InvalidInputError(
            "('memories',) holds no items: put a memory under ('memories', user_id, ...), or "
            "use another namespace for generic items"
        )
    _check_value(op.value)
    if not (op.index is None or op.index is False) and (
        not isinstance(op.index, list) or not all(isinstance(f, str) for f in op.index)
    ):
        raise InvalidInputError(f"index must be None, False or a list of field paths, got {op.index!r}")
    if not (not_provided(op.ttl) or op.ttl is None):
        if isinstance(op.ttl, bool) or not isinstance(op.ttl, (int, float)) or not op.ttl > 0:
            raise InvalidInputError(
                f"ttl is in minutes and must be a positive number or None, got {op.ttl!r}"
            )


def _check_namespace(namespace: Any, what: str) -> None:
    if not isinstance(namespace, (tuple, list)):
        raise InvalidNamespaceError(
            f"{what} must be a tuple of str labels, got {type(namespace).__name__} {namespace!r}; "
            f"write e.g. ({namespace!r},)"
        )
    for label in namespace:
        if isinstance(label, str):
            check_text(label, f"a label of {what}")
        if isinstance(label, str) and "\x1f" in label:
            raise InvalidNamespaceError(
                f"Invalid namespace label {label!r} found in {tuple(namespace)}. Namespace labels "
                "cannot contain the unit separator ('\\x1f')."
            )
    validate_op_namespace(GetOp(tuple(namespace), ""))


def _check_count(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be a non-negative int, got {value!r}")


def _check_filter(flt: Mapping[str, Any]) -> None:
    for value in flt.values():
        if isinstance(value, Mapping):
            if any(isinstance(k, str) and k.startswith("$") for k in value):
                unknown = [k for k in value if k not in _OPERATORS]
                if unknown:
                    raise InvalidInputError(
                        f"unsupported filter operator {unknown[0]!r}; use {', '.join(_OPERATORS)}, "
                        "or a plain value for equality"
                    )
            else:
                _check_filter(value)
        elif isinstance(value, (list, tuple)):
            for element in value:
                if isinstance(element, Mapping):
                    _check_filter({"": element})


def _check_value(value: Any) -> None:
    if not isinstance(value, Mapping):
        raise InvalidInputError(
            f"a store value must be a dict, got {type(value).__name__}; wrap it, e.g. {{'value': ...}}"
        )
    try:
        bad_key = _non_str_key(value)
    except RecursionError:
        raise InvalidInputError("a store value is nested too deeply (hundreds of levels); flatten it") from None
    if bad_key is not None:
        raise InvalidInputError(f"store values are JSON: keys must be str, got {bad_key!r}")
    try:
        text = json.dumps(value, allow_nan=False, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"a store value must be JSON-serialisable (str, numbers, bools, None, lists, dicts): {exc}"
        ) from None
    # A lone surrogate ('\ud800', from text decoded with errors='surrogateescape') would
    # reach the embedding model (a TypeError deep in its tokenizer) or SQLite: refuse it now,
    # before anything of the batch is written, as a message or a memory holding one is.
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            "a store value holds a lone surrogate (e.g. '\\ud800') in a key or a string, which no "
            "UTF-8 text can hold; decode the text properly (errors='replace' keeps the rest)"
        ) from None


def _non_str_key(value: Any) -> Any:
    if isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                return k
            found = _non_str_key(v)
            if found is not None:
                return found
    elif isinstance(value, (list, tuple)):
        for v in value:
            found = _non_str_key(v)
            if found is not None:
                return found
    return None


# --- generic items ------------------------------------------------------------------------


def not_provided(value: Any) -> bool:
    return type(value).__name__ == "NotProvided"


def by_namespace(rows: list[Any]) -> list[Any]:
    """Rows (in insertion order) regrouped namespace by namespace, as InMemoryStore lists them."""
    first: dict[tuple[str, ...], int] = {}
    for i, r in enumerate(rows):
        first.setdefault(r.namespace, i)
    return sorted(rows, key=lambda r: first[r.namespace])


def item_of(row: Any) -> Item:
    return Item(
        value=row.value, key=row.key, namespace=row.namespace,
        created_at=datetime.fromisoformat(row.created_at), updated_at=datetime.fromisoformat(row.updated_at),
    )


def search_item(row: Any, score: float | None = None) -> SearchItem:
    return SearchItem(row.namespace, row.key, row.value, datetime.fromisoformat(row.created_at),
                      datetime.fromisoformat(row.updated_at), score)


def cosine(query: np.ndarray, vectors: list[list[float]]) -> list[float]:
    # InMemoryStore's arithmetic, so equal inputs give equal scores (and the same order).
    matrix = np.asarray(vectors, dtype=float)
    norms = np.linalg.norm(matrix, axis=1)
    scores = np.zeros_like(norms)
    mask = norms != 0
    scores[mask] = np.dot(matrix[mask], query) / (norms[mask] * np.linalg.norm(query))
    return [float(s) for s in scores]


def matches(value: dict[str, Any], flt: Mapping[str, Any] | None) -> bool:
    return not flt or all(_compare(value.get(k), v) for k, v in flt.items())


def _compare(item_value: Any, filter_value: Any) -> bool:
    """InMemoryStore's JSON-like comparison: nested dicts, lists, and $eq/$ne/$gt/… operators."""
    if isinstance(filter_value, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in filter_value):
            return all(_operator(item_value, k, v) for k, v in filter_value.items())
        return isinstance(item_value, dict) and all(
            _compare(item_value.get(k), v) for k, v in filter_value.items()
        )
    if isinstance(filter_value, (list, tuple)):
        return (
            isinstance(item_value, (list, tuple))
            and len(item_value) == len(filter_value)
            and all(_compare(a, b) for a, b in zip(item_value, filter_value))
        )
    same: bool = item_value == filter_value
    return same


def _operator(value: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        equal: bool = value == operand
        return equal
    if op == "$ne":
        unequal: bool = value != operand
        return unequal
    try:
        a, b = float(value), float(operand)
    except (TypeError, ValueError):
        return False
    return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]


def does_match(condition: MatchCondition, ns: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(ns) < len(path):
        return False
    pairs = zip(ns, path) if condition.match_type == "prefix" else zip(reversed(ns), reversed(path))
    return all(p == "*" or k == p for k, p in pairs)

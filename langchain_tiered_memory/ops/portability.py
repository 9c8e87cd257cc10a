"""Export and import of one user's memory (``memory.admin.export_user`` / ``import_user``,
and as JSON Lines, ``tiered-memory export`` / ``import``): their one home.

:func:`export_user` and :func:`import_user` move a user's rows out of and into the database
(earlier formats through ``legacy.py``); the rest writes and reads them as a file.

One JSON object a line, each with a ``type``: first a ``header`` (format name and version,
the user, when it was written), then ``thread``, ``message``, ``summary``, ``entity``,
``memory``, ``episode`` and ``store_item`` lines. Vectors are not written: an import embeds
memories and episodes again with the target's embeddings, so a file also moves a user
between embedding models. An import reads and checks the whole file before it writes
anything, and the relational part is written in one transaction.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, Protocol, TextIO

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from ..entries import check_id
from ..errors import InvalidInputError, NotFoundError
from ..layers.entities import name_key
from ..storage.message_format import read_message
from ..storage.rows import MemoryRow
from ..storage.store_items import names_user
from .legacy import memory_record, prepare_import

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ..index.recall_index import RecallIndex
    from ..storage import Storage
    from ..storage.rows import NewMessage

__all__ = [
    "FORMAT", "FORMAT_VERSION", "export_jsonl", "export_user", "import_jsonl", "import_user", "load_jsonl",
    "read_jsonl",
]

#: The ``format`` of the header line, and the version this package writes.
FORMAT = "langchain-tiered-memory-export"
FORMAT_VERSION = 2
#: Versions this package reads: 1 (0.1, store addresses in memory metadata) and 2.
READ_VERSIONS = (1, 2)
#: Fields of a memory line besides :class:`MemoryEntry`'s (format 2).
_MEMORY_EXTRA = ("subject", "mergeable")

#: Record type of each line, and the key of ``memory.admin.export_user``'s data it holds.
_KINDS: dict[str, str] = {
    "thread": "threads",
    "message": "messages",
    "summary": "summaries",
    "entity": "entities",
    "memory": "memories",
    "episode": "episodes",
    "store_item": "store_items",
}


def _iso(value: str) -> str:
    datetime.fromisoformat(value)  # raises ValueError, which pydantic reports with the field
    return value


IsoTime = Annotated[str, AfterValidator(_iso)]
Id = Annotated[str, Field(min_length=1, max_length=512)]


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class _Header(_Record):
    type: Literal["header"]
    format: str
    version: int
    user_id: Id
    exported_at: IsoTime
    package_version: str | None = None
    counts: dict[str, int] = Field(default_factory=dict)


class _Thread(_Record):
    type: Literal["thread"]
    thread_id: Id
    created_at: IsoTime
    updated_at: IsoTime
    next_seq: int = Field(ge=0)
    evicted_through: int = Field(ge=-1)
    summarized_through: int = Field(ge=-1)
    extracted_through: int = Field(ge=-1)


class _Message(_Record):
    type: Literal["message"]
    thread_id: Id
    seq: int = Field(ge=0)
    message_id: Id
    created_at: IsoTime
    message: dict[str, Any]


class _Summary(_Record):
    type: Literal["summary"]
    thread_id: Id
    text: str
    tokens: int = Field(ge=0)
    first_seq: int = Field(ge=0)
    last_seq: int = Field(ge=-1)
    updated_at: IsoTime


class _Attribute(_Record):
    key: str = Field(min_length=1)
    value: str
    learned_at: IsoTime
    source: str | None = None
    source_message: str | None = None
    superseded_at: IsoTime | None = None


class _Entity(_Record):
    type: Literal["entity"]
    name: str = Field(min_length=1)
    # The entity's own type ("person", "place", …): ``type`` names the record.
    entity_type: str
    source: str | None = None
    created_at: IsoTime
    updated_at: IsoTime
    attributes: list[_Attribute] = Field(default_factory=list)


class _Episode(_Record):
    type: Literal["episode"]
    id: Id
    thread_id: Id
    started_at: IsoTime
    ended_at: IsoTime
    summary: str
    decisions: list[str]
    outcome: str
    topics: list[str]
    first_seq: int = Field(ge=0)
    last_seq: int = Field(ge=0)
    created_at: IsoTime


class _StoreItem(_Record):
    type: Literal["store_item"]
    namespace: list[str] = Field(min_length=1)
    key: str
    value: dict[str, Any]
    indexed: bool
    created_at: IsoTime
    updated_at: IsoTime
    ttl_minutes: float | None = None
    expires_at: float | None = None
    #: The memory this item is the store address of (format 2).
    memory_id: str | None = None


_MODELS: dict[str, type[_Record]] = {
    "thread": _Thread,
    "message": _Message,
    "summary": _Summary,
    "entity": _Entity,
    "episode": _Episode,
    "store_item": _StoreItem,
}


#: Records indexed per progress step of an import (four embedding batches).
_IMPORT_PASS = 256


class Exports(Protocol):
    """What :func:`export_jsonl` reads from: ``memory.admin``."""

    def export_user(self, user_id: str) -> dict[str, list[dict[str, Any]]]: ...


class Imports(Protocol):
    """What :func:`import_jsonl` writes to: ``memory.admin``."""

    def import_user(self, user_id: str, data: Mapping[str, Sequence[dict[str, Any]]]) -> dict[str, int]: ...


# --- the rows of a user -------------------------------------------------------------------


def export_user(storage: Storage, user_id: str) -> dict[str, list[dict[str, Any]]]:
    """Everything stored of the user as JSON-ready data (what ``memory.admin.export_user``
    returns): the database's rows, memories as :class:`MemoryEntry` fields."""
    check_id("user_id", user_id)
    data = storage.portability.export_user(user_id)
    data["memories"] = [memory_record(MemoryRow(**row)) for row in data["memories"]]
    return data


def import_user(
    storage: Storage,
    index: RecallIndex,
    user_id: str,
    data: Mapping[str, Sequence[dict[str, Any]]],
    *,
    serialise: Callable[[BaseMessage], NewMessage],
    embed_value: Callable[[Mapping[str, Any]], dict[str, list[float]] | None],
    counter: str,
    now: datetime,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, int]:
    """Restore what :func:`export_user` returned (either format), then index it; returns
    counts of what was written (see ``memory.admin.import_user``)."""
    check_id("user_id", user_id)
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"data must be what export_user returned (a dict), got {type(data).__name__}")
    rows = prepare_import(user_id, data, serialise, embed_value)
    counts = storage.portability.import_user(user_id, rows, counter=counter, now=now.isoformat())
    if index.available():
        total = storage.unindexed_count()
        # Bounded passes (a few embedding batches each) rather than one, to report
        # progress; counted by what is left, since a background worker may index too.
        while index.sync(limit=_IMPORT_PASS):
            if progress is not None:
                left = storage.unindexed_count()
                total = max(total, left)
                progress(total - left, total)
    return counts


# --- export -----------------------------------------------------------------------------


def export_jsonl(memory: Exports, user_id: str, out: TextIO) -> dict[str, int]:
    """Write everything stored of ``user_id`` in ``memory`` (``memory.admin``) to ``out``
    as JSON Lines; returns counts per kind.

    Raises :class:`NotFoundError` when the memory holds nothing of the user (a typo in
    the id should not produce an empty file that looks like a backup).
    """
    data = memory.export_user(user_id)
    counts = {key: len(data.get(key, ())) for key in _KINDS.values()}
    if not any(counts.values()):
        raise NotFoundError(
            f"user {user_id!r} has nothing stored in this memory; check the user id "
            "(tiered-memory stats lists how many users there are)"
        )
    header = {
        "type": "header", "format": FORMAT, "version": FORMAT_VERSION, "user_id": user_id,
        "exported_at": datetime.now(timezone.utc).isoformat(), "package_version": _package_version(),
        "counts": counts,
    }
    out.write(_line(header))
    for kind, key in _KINDS.items():
        for row in data.get(key, ()):
            if kind == "entity":
                row = {"name": row["name"], "entity_type": row["type"],
                       **{k: v for k, v in row.items() if k not in ("name", "type")}}
            out.write(_line({"type": kind, **row}))
    return counts


def _package_version() -> str | None:
    # From the installed distribution: the package root (which holds ``__version__``) is
    # above this module, and a header without it still reads.
    try:
        return metadata.version("langchain-tiered-memory")
    except metadata.PackageNotFoundError:
        return None


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False) + "\n"


# --- import -----------------------------------------------------------------------------


def import_jsonl(memory: Imports, source: str | Path | TextIO) -> tuple[str, dict[str, int]]:
    """Restore a file written by :func:`export_jsonl` into ``memory`` (``memory.admin``).

    ``source`` is a path or an open text stream. Returns the user id and counts of what was
    written. Every line is checked first; a problem raises :class:`InvalidInputError`
    naming the line, and nothing is written.
    """
    user_id, data = load_jsonl(source)
    return user_id, memory.import_user(user_id, data)


def load_jsonl(source: str | Path | TextIO) -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """Read and check an export from a path or a text stream (see :func:`read_jsonl`)."""
    if not isinstance(source, (str, Path)):
        return read_jsonl(source, getattr(source, "name", "<input>"))
    path = Path(source)
    try:
        with open(path, encoding="utf-8") as f:
            return read_jsonl(f, str(path))
    except OSError as exc:
        raise InvalidInputError(f"cannot read {path}: {exc.strerror or exc}") from None


def read_jsonl(lines: Iterable[str], source: str = "<input>") -> tuple[str, dict[str, list[dict[str, Any]]]]:
    """Parse and check an export: the user id and the data ``memory.admin.import_user`` takes."""
    header: _Header | None = None
    data: dict[str, list[dict[str, Any]]] = {key: [] for key in _KINDS.values()}
    where: dict[str, list[int]] = {key: [] for key in _KINDS.values()}
    for number, text in _numbered(lines, source):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _error(source, number, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise _error(source, number, 'not a record: each line is a JSON object with a "type"')
        kind = obj["type"]
        if header is None:
            header = _read_header(obj, source, number)
            continue
        if kind == "header":
            raise _error(source, number, "a second header; concatenated exports are not supported")
        if kind not in _KINDS:
            raise _error(source, number, f"unknown record type {kind!r} (expected one of {', '.join(_KINDS)})")
        record = _validate(kind, obj, header.user_id, source, number)
        data[_KINDS[kind]].append(record)
        where[_KINDS[kind]].append(number)
    if header is None:
        raise InvalidInputError(f"{source} is empty: it holds no export header")
    _check_consistency(header.user_id, data, where, source)
    return header.user_id, data


def _numbered(lines: Iterable[str], source: str) -> Iterator[tuple[int, str]]:
    iterator = iter(lines)
    number = 0
    while True:
        number += 1
        try:
            text = next(iterator)
        except StopIteration:
            return
        except UnicodeDecodeError:
            raise _error(source, number, "not UTF-8 text; is this an export file?") from None
        yield number, text


def _read_header(obj: dict[str, Any], source: str, number: int) -> _Header:
    if obj.get("type") != "header" or obj.get("format") != FORMAT:
        raise _error(
            source, number,
            f"not a langchain-tiered-memory export (the first line must be its header, with format {FORMAT!r})",
        )
    version = obj.get("version")
    if version not in READ_VERSIONS:
        raise _error(
            source, number,
            f"export format version {version!r}; this langchain-tiered-memory reads versions "
            f"{', '.join(map(str, READ_VERSIONS))}" + (" (upgrade the package to read it)" if isinstance(version, int)
                                   and version > FORMAT_VERSION else ""),
        )
    try:
        return _Header.model_validate(obj)
    except ValidationError as exc:
        raise _error(source, number, _describe(exc)) from None


def _validate(kind: str, obj: dict[str, Any], user_id: str, source: str, number: int) -> dict[str, Any]:
    try:
        if kind == "memory":
            from ..entries import MemoryEntry

            fields = {k: v for k, v in obj.items() if k != "type"}
            if "user_id" in fields:
                raise _error(source, number, "a memory line has no user_id: it belongs to the header's user")
            extra = {k: fields.pop(k) for k in _MEMORY_EXTRA if k in fields}
            entry = MemoryEntry.model_validate({**fields, "user_id": user_id})
            return {**entry.model_dump(mode="json", exclude={"user_id"}), **extra}
        record = _MODELS[kind].model_validate(obj).model_dump(exclude={"type"})
    except ValidationError as exc:
        raise _error(source, number, f"bad {kind} record: {_describe(exc)}") from None
    if kind == "message":
        _check_message(record, source, number)
    elif kind == "entity":
        record["type"] = record.pop("entity_type")
    return record


def _check_message(record: dict[str, Any], source: str, number: int) -> None:
    try:
        message = read_message(record["message"])
    except Exception as exc:  # langchain raises KeyError/ValueError/ValidationError alike
        raise _error(source, number, f"bad message: not a LangChain message dict ({exc})") from None
    if message.id != record["message_id"]:
        raise _error(source, number, f"message_id {record['message_id']!r} differs from the message's id {message.id!r}")


def _check_consistency(
    user_id: str, data: dict[str, list[dict[str, Any]]], where: dict[str, list[int]], source: str
) -> None:
    """What no single line shows: references, uniqueness, and each thread's log complete."""
    threads: dict[str, dict[str, Any]] = {}
    for t, n in zip(data["threads"], where["threads"]):
        if t["thread_id"] in threads:
            raise _error(source, n, f"thread {t['thread_id']!r} appears twice")
        last = t["next_seq"] - 1
        for mark in ("evicted_through", "summarized_through", "extracted_through"):
            if t[mark] > last:
                raise _error(source, n, f"{mark} is {t[mark]}, past the thread's last message ({last})")
        threads[t["thread_id"]] = t
    seqs: dict[str, set[int]] = {tid: set() for tid in threads}
    ids: dict[str, set[str]] = {tid: set() for tid in threads}
    for m, n in zip(data["messages"], where["messages"]):
        tid = m["thread_id"]
        if tid not in threads:
            raise _error(source, n, f"message of thread {tid!r}, which has no thread line")
        if m["seq"] >= threads[tid]["next_seq"] or m["seq"] in seqs[tid]:
            raise _error(source, n, f"message seq {m['seq']} is a duplicate or past the thread's next_seq")
        if m["message_id"] in ids[tid]:
            raise _error(source, n, f"message id {m['message_id']!r} appears twice in thread {tid!r}")
        seqs[tid].add(m["seq"])
        ids[tid].add(m["message_id"])
    for tid, t in threads.items():
        if len(seqs[tid]) != t["next_seq"]:
            n = where["threads"][list(threads).index(tid)]
            raise _error(
                source, n,
                f"thread {tid!r} has next_seq {t['next_seq']} but {len(seqs[tid])} messages: the file is incomplete",
            )
    summarized: set[str] = set()
    for s, n in zip(data["summaries"], where["summaries"]):
        if s["thread_id"] not in threads or s["thread_id"] in summarized:
            raise _error(source, n, f"summary of thread {s['thread_id']!r}: no such thread, or a second summary")
        summarized.add(s["thread_id"])
    _unique(data["entities"], where["entities"], lambda e: name_key(e["name"]), "entity", source)
    _unique(data["memories"], where["memories"], lambda m: m["id"], "memory id", source)
    _unique(data["episodes"], where["episodes"], lambda e: e["id"], "episode id", source)
    _unique(data["episodes"], where["episodes"], lambda e: (e["thread_id"], e["last_seq"]), "episode end", source)
    _unique(data["store_items"], where["store_items"], lambda i: (tuple(i["namespace"]), i["key"]), "store item", source)
    for item, n in zip(data["store_items"], where["store_items"]):
        if not names_user(item["namespace"], user_id):
            raise _error(source, n, f"store item namespace {item['namespace']!r} does not belong to user {user_id!r}")


def _unique(rows: list[dict[str, Any]], numbers: list[int], key: Any, what: str, source: str) -> None:
    seen: set[Any] = set()
    for row, n in zip(rows, numbers):
        k = key(row)
        if k in seen:
            raise _error(source, n, f"{what} {k!r} appears twice")
        seen.add(k)


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    field = ".".join(str(p) for p in err["loc"])
    more = f" (and {exc.error_count() - 1} more problems)" if exc.error_count() > 1 else ""
    return (f"{field}: " if field else "") + err["msg"] + more


def _error(source: str, number: int, message: str) -> InvalidInputError:
    return InvalidInputError(f"{source} line {number}: {message}; nothing was imported")

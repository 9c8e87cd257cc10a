"""Jupyter display: HTML for a turn's context, search results, entity profiles and stats.

Each ``*_html`` function returns one self-contained HTML fragment: inline CSS, no script,
and every stored or user-given string escaped (stored text is untrusted: a user can make
the memory hold ``<script>``). Notebooks call them through ``_repr_html_`` on
:class:`~langchain_tiered_memory.MemoryContext`, ``MemoryHit``, ``Entity``, and the values
:meth:`TieredMemory.search` (``SearchResults``) and :meth:`TieredMemory.stats`
(``MemoryStats``) return. Rendering only reads: nothing here writes to the memory.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from .tokens import TokenCounter

__all__ = [
    "context_html",
    "entity_html",
    "hits_html",
    "stats_html",
]

#: Characters of a window message shown before it is cut (its head and its tail are kept).
MESSAGE_CHARS = 300
#: Characters of a memory section's text shown in the context view.
SECTION_CHARS = 2_000

_FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif;font-size:13px;line-height:1.4"
_TABLE = "border-collapse:collapse;margin:4px 0 8px 0"
_CELL = "border:1px solid #d0d7de;padding:2px 8px;text-align:left;vertical-align:top"
_NUM = _CELL.replace("text-align:left", "text-align:right") + ";font-variant-numeric:tabular-nums"
_HEAD = _CELL + ";background:#f6f8fa;font-weight:600"
_MUTED = "color:#57606a"
# One colour per section of the budget bar; memory layers not listed get the last one.
_COLOURS = {
    "system": "#8250df",
    "summary": "#bf8700",
    "entities": "#1a7f37",
    "memories": "#0969da",
    "episodes": "#cf222e",
    "memory_frame": "#8c959f",
    "window": "#54aeff",
    "overhead": "#d0d7de",
}
_OTHER_COLOUR = "#6e7781"



# --- what is drawn --------------------------------------------------------------------------
# The values that render (MemoryContext, MemoryHit, Entity, …) call the functions here from
# their ``_repr_html_``, so this module names them only by what it reads: importing them back
# would make each value and its drawing import each other.


class _Section(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def tokens(self) -> int: ...


class _Usage(Protocol):
    @property
    def budget(self) -> int: ...
    @property
    def sections(self) -> Mapping[str, int]: ...
    @property
    def total(self) -> int: ...
    @property
    def remaining(self) -> int: ...


class _Context(Protocol):
    @property
    def user_id(self) -> str: ...
    @property
    def thread_id(self) -> str: ...
    @property
    def query(self) -> str | None: ...
    @property
    def messages(self) -> Sequence[BaseMessage]: ...
    @property
    def window(self) -> Sequence[BaseMessage]: ...
    @property
    def sections(self) -> Sequence[_Section]: ...
    @property
    def token_usage(self) -> _Usage: ...
    @property
    def evicted(self) -> int: ...
    @property
    def truncated(self) -> bool: ...


class _Entry(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def memory_type(self) -> str: ...
    @property
    def importance(self) -> float: ...
    @property
    def access_count(self) -> int: ...


class _Hit(Protocol):
    @property
    def entry(self) -> _Entry: ...
    @property
    def score(self) -> float: ...
    @property
    def parts(self) -> object | None: ...


class _Value(Protocol):
    @property
    def value(self) -> str: ...
    @property
    def learned_at(self) -> str: ...
    @property
    def superseded_at(self) -> str | None: ...
    @property
    def source_thread(self) -> str | None: ...


class _Entity(Protocol):
    @property
    def name(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def updated_at(self) -> str: ...
    @property
    def attributes(self) -> Mapping[str, str]: ...
    @property
    def history(self) -> Mapping[str, Sequence[_Value]]: ...


# --- the context of a turn ------------------------------------------------------------------


def context_html(context: _Context, counter: TokenCounter | None = None) -> str:
    """A turn's context: the token budget bar, tokens per section, the memory sections'
    text and the window's messages.

    Per-message tokens come from ``counter`` (pass ``memory.counter`` when the memory
    counts with another counter than the default tiktoken ``cl100k_base``).
    """
    usage = context.token_usage
    budget, total = usage.budget, usage.total
    title = (
        f"<b>MemoryContext</b> user <code>{_e(context.user_id)}</code> · "
        f"thread <code>{_e(context.thread_id)}</code>"
    )
    if context.query:
        title += f" · query <i>{_e(_cut(context.query, 120))}</i>"
    flags = [f"{_plural(len(context.messages), 'message')} to send"]
    if context.evicted:
        flags.append(f"{_int(context.evicted)} earlier messages outside the window")
    if context.truncated:
        flags.append("<b>a message was truncated to fit</b>")
    parts = [
        f'<div class="ltm-context" style="{_FONT}">',
        f"<div>{title}</div>",
        _budget_bar(usage.sections, budget),
        f'<div style="{_MUTED}" class="ltm-budget">{_int(total)} / {_int(budget)} tokens '
        f"({_pct(total, budget)}) · {_int(usage.remaining)} left · {' · '.join(flags)}</div>",
        _sections_table(usage.sections, total, budget),
    ]
    for section in context.sections:
        parts.append(
            f'<details class="ltm-section" data-section="{_e(section.name)}">'
            f"<summary><b>{_e(section.name)}</b> · {_int(section.tokens)} tokens</summary>"
            f'<pre style="white-space:pre-wrap;margin:4px 0 4px 12px">'
            f"{_e(_cut(section.text, SECTION_CHARS))}</pre></details>"
        )
    parts.append(_window_table(context.window, counter))
    parts.append("</div>")
    return "".join(parts)


def _budget_bar(sections: Mapping[str, int], budget: int) -> str:
    """A bar as wide as the budget, one coloured segment per section."""
    segments = []
    for name, tokens in sections.items():
        if tokens <= 0 or budget <= 0:
            continue
        width = min(100.0, 100.0 * tokens / budget)
        colour = _COLOURS.get(name, _OTHER_COLOUR)
        segments.append(
            f'<div title="{_e(name)}: {_int(tokens)} tokens" '
            f'style="width:{width:.3f}%;background:{colour};height:100%"></div>'
        )
    return (
        '<div class="ltm-budget-bar" style="display:flex;width:100%;max-width:640px;height:12px;'
        f'background:#eaeef2;border-radius:3px;overflow:hidden;margin:4px 0">{"".join(segments)}</div>'
    )


def _sections_table(sections: Mapping[str, int], total: int, budget: int) -> str:
    rows = [
        f'<tr><td style="{_CELL}"><span style="color:{_COLOURS.get(name, _OTHER_COLOUR)}">■</span> '
        f'{_e(name)}</td><td style="{_NUM}">{_int(tokens)}</td>'
        f'<td style="{_NUM}">{_pct(tokens, budget)}</td></tr>'
        for name, tokens in sections.items()
    ]
    rows.append(
        f'<tr><td style="{_HEAD}">total</td><td style="{_NUM};font-weight:600">{_int(total)}</td>'
        f'<td style="{_NUM};font-weight:600">{_pct(total, budget)}</td></tr>'
        f'<tr><td style="{_CELL}">budget</td><td style="{_NUM}">{_int(budget)}</td>'
        f'<td style="{_NUM}">100%</td></tr>'
    )
    return (
        f'<table class="ltm-sections" style="{_TABLE}"><thead><tr><th style="{_HEAD}">section</th>'
        f'<th style="{_HEAD}">tokens</th><th style="{_HEAD}">of budget</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _window_table(window: Sequence[BaseMessage], counter: TokenCounter | None) -> str:
    if not window:
        return f'<div class="ltm-window" style="{_MUTED}">The window is empty.</div>'
    if counter is None:
        from .tokens import TiktokenCounter

        counter = TiktokenCounter()
    rows = []
    for i, message in enumerate(window, 1):
        rows.append(
            f'<tr><td style="{_NUM}">{i}</td><td style="{_CELL}">{_e(_role(message))}</td>'
            f'<td style="{_NUM}">{_int(counter.count_message(message))}</td>'
            f'<td style="{_CELL};white-space:pre-wrap">{_e(_message_text(message))}</td></tr>'
        )
    return (
        f'<div style="margin-top:6px"><b>window</b> · {_plural(len(window), "message")}</div>'
        f'<table class="ltm-window" style="{_TABLE}"><thead><tr><th style="{_HEAD}">#</th>'
        f'<th style="{_HEAD}">role</th><th style="{_HEAD}">tokens</th>'
        f'<th style="{_HEAD}">text</th></tr></thead><tbody>{"".join(rows)}</tbody></table>'
    )


def _role(message: BaseMessage) -> str:
    name = getattr(message, "name", None)
    return f"{message.type} ({name})" if name else message.type


def _message_text(message: BaseMessage) -> str:
    text: str = message.text
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        text += "".join(f"\n→ {c.get('name')}({_cut(str(c.get('args')), 120)})" for c in calls)
    return _cut(text, MESSAGE_CHARS)


# --- search results -------------------------------------------------------------------------

_PART_FIELDS = (
    ("relevance", "relevance"),
    ("dense", "cosine"),
    ("sparse", "BM25"),
    ("importance", "importance"),
    ("boost", "boost"),
    ("days_since_access", "days since access"),
    ("decay", "decay"),
    ("effective_importance", "prior"),
)


def hits_html(hits: Sequence[_Hit], query: str | None = None) -> str:
    """Recalled memories, best first: content, type, importance, score, recalls, and with
    ``search(..., explain=True)`` the parts of each score."""
    heading = f"<b>{_int(len(hits))} {'memory' if len(hits) == 1 else 'memories'}</b>"
    if query is not None:
        heading += f" for <i>{_e(_cut(query, 120))}</i>"
    if not hits:
        return (
            f'<div class="ltm-search" style="{_FONT}">{heading}'
            f'<div style="{_MUTED}">Nothing matched.</div></div>'
        )
    explained = any(h.parts is not None for h in hits)
    head = ["#", "content", "type", "importance", "score"]
    if explained:
        head += [label for _, label in _PART_FIELDS]
    head += ["recalls", "id"]
    head_cells = "".join(f'<th style="{_HEAD}">{_e(h)}</th>' for h in head)
    rows = []
    for i, hit in enumerate(hits, 1):
        entry = hit.entry
        cells = [
            f'<td style="{_NUM}">{i}</td>',
            f'<td style="{_CELL};white-space:pre-wrap">{_e(_cut(entry.content, MESSAGE_CHARS))}</td>',
            f'<td style="{_CELL}">{_e(entry.memory_type)}</td>',
            f'<td style="{_NUM}">{_num(entry.importance)}</td>',
            f'<td style="{_NUM};font-weight:600">{_num(hit.score)}</td>',
        ]
        if explained:
            cells += [
                f'<td style="{_NUM}">{_maybe(getattr(hit.parts, field)) if hit.parts else ""}</td>'
                for field, _ in _PART_FIELDS
            ]
        cells += [
            f'<td style="{_NUM}">{_int(entry.access_count)}</td>',
            f'<td style="{_CELL}"><code title="{_e(entry.id)}">{_e(entry.id[:8])}</code></td>',
        ]
        rows.append(f"<tr>{''.join(cells)}</tr>")
    from .scoring import FORMULA

    note = f'<div style="{_MUTED}">{_e(FORMULA)}.</div>' if explained else ""
    return (
        f'<div class="ltm-search" style="{_FONT}">{heading}'
        f'<table style="{_TABLE}"><thead><tr>{head_cells}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>{note}</div>"
    )


# --- entities -------------------------------------------------------------------------------


def entity_html(entity: _Entity) -> str:
    """An entity profile: name, type, and each attribute with the values it had."""
    keys = list(dict.fromkeys([*entity.attributes, *entity.history]))
    rows = []
    for key in keys:
        values = entity.history.get(key) or []
        if not values and key in entity.attributes:
            rows.append(
                f'<tr><td style="{_CELL}">{_e(key)}</td><td style="{_CELL}"><b>'
                f'{_e(entity.attributes[key])}</b></td><td style="{_CELL}"></td>'
                f'<td style="{_CELL}"></td><td style="{_CELL}"></td></tr>'
            )
        # Newest first: the current value, then what it replaced.
        for value in sorted(values, key=lambda v: v.learned_at, reverse=True):
            current = value.superseded_at is None
            shown = f"<b>{_e(value.value)}</b>" if current else f'<s style="{_MUTED}">{_e(value.value)}</s>'
            rows.append(
                f'<tr><td style="{_CELL}">{_e(key)}</td><td style="{_CELL}">{shown}</td>'
                f'<td style="{_CELL}">{_e(_when(value.learned_at))}</td>'
                f'<td style="{_CELL}">{_e(_when(value.superseded_at)) if value.superseded_at else "current"}</td>'
                f'<td style="{_CELL}">{_e(value.source_thread or "")}</td></tr>'
            )
    table = (
        f'<table style="{_TABLE}"><thead><tr><th style="{_HEAD}">attribute</th>'
        f'<th style="{_HEAD}">value</th><th style="{_HEAD}">learned</th>'
        f'<th style="{_HEAD}">superseded</th><th style="{_HEAD}">thread</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else f'<div style="{_MUTED}">No attributes yet.</div>'
    )
    return (
        f'<div class="ltm-entity" style="{_FONT}"><b>{_e(entity.name)}</b> '
        f'<span style="{_MUTED}">({_e(entity.type)}) · updated {_e(_when(entity.updated_at))}</span>'
        f"{table}</div>"
    )


# --- stats ----------------------------------------------------------------------------------


def stats_html(stats: Mapping[str, Any]) -> str:
    """:meth:`TieredMemory.stats`: counts, sizes, the job journal and the failed jobs with
    their reasons. Keys it does not know are shown too."""
    rows = []
    lists = []
    for key, value in stats.items():
        if isinstance(value, Mapping):
            shown = " · ".join(f"{_e(k)} {_value(k, v)}" for k, v in value.items())
        elif isinstance(value, list):
            lists.append((key, value))
            continue
        else:
            shown = _value(key, value)
        rows.append(f'<tr><td style="{_CELL}">{_e(key)}</td><td style="{_CELL}">{shown}</td></tr>')
    parts = [
        f'<div class="ltm-stats" style="{_FONT}"><b>TieredMemory stats</b>',
        f'<table style="{_TABLE}"><tbody>{"".join(rows)}</tbody></table>',
    ]
    for key, items in lists:
        parts.append(_list_table(key, items))
    parts.append("</div>")
    return "".join(parts)


def _list_table(name: str, items: list[Any]) -> str:
    if not items:
        return f'<div style="{_MUTED}" data-list="{_e(name)}">{_e(name)}: none</div>'
    if not all(isinstance(i, Mapping) for i in items):
        cells = "".join(f'<li>{_e(str(i))}</li>' for i in items)
        return f'<div data-list="{_e(name)}"><b>{_e(name)}</b><ul>{cells}</ul></div>'
    columns = list(dict.fromkeys(k for item in items for k in item))
    head = "".join(f'<th style="{_HEAD}">{_e(c)}</th>' for c in columns)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td style="{_CELL};white-space:pre-wrap">{_e(_cut(str(item.get(c, "")), 500))}</td>'
            for c in columns
        )
        + "</tr>"
        for item in items
    )
    return (
        f'<div data-list="{_e(name)}"><b>{_e(name)}</b> ({_int(len(items))})</div>'
        f'<table style="{_TABLE}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def _value(key: str, value: Any) -> str:
    if key.endswith("_bytes") and isinstance(value, int) and not isinstance(value, bool):
        return f"{_size(value)} ({_int(value)} bytes)"
    if isinstance(value, int) and not isinstance(value, bool):
        return _int(value)
    if isinstance(value, float):
        return _num(value)
    return _e(str(value))


# --- small helpers --------------------------------------------------------------------------


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _int(value: int) -> str:
    return f"{value:,}"


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def _maybe(value: float | None) -> str:
    return "–" if value is None else _num(value)


def _num(value: float) -> str:
    if not math.isfinite(value):
        return str(value)
    return f"{value:.3f}"


def _pct(part: int, whole: int) -> str:
    if whole <= 0:
        return "–"
    share = 100.0 * part / whole
    return f"{share:.1f}%" if share >= 0.1 or part == 0 else "&lt;0.1%"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    size = n / 1024
    for unit in ("KiB", "MiB"):
        if size < 1024:
            return f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


def _cut(text: str, limit: int) -> str:
    """``text`` with its head and tail kept when longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    head = text[: limit * 2 // 3].rstrip()
    tail = text[len(text) - limit // 3 :].lstrip()
    return f"{head} […{len(text) - len(head) - len(tail):,} characters…] {tail}"


def _when(stamp: str | datetime | None) -> str:
    """An ISO timestamp to the minute, in its own timezone."""
    if stamp is None:
        return ""
    try:
        moment = stamp if isinstance(stamp, datetime) else datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)
    return moment.strftime("%Y-%m-%d %H:%M")

"""The inspector's pages: each a read through :mod:`.source`, rendered by one template.

Nothing here writes: the replay and the searches are looks (``peek``), and the write
operations live in :mod:`.operations`, behind ``allow_writes``.
"""

from __future__ import annotations

from typing import Any


from ..errors import InvalidInputError, NotFoundError, ThreadOwnershipError, TieredMemoryError
from . import charts, replay as replaying
from .source import Source
from .web import HTTPException, JSONResponse, PlainTextResponse, RedirectResponse, Request, Response

__all__ = ["ERROR_HANDLERS", "render"]

#: Memories per page of the memories list.
PAGE_SIZE = 50
#: Users the replay's picker lists, at most.
USERS_PICKED = 1_000
#: Threads a search by id lists, at most.
THREADS_FOUND = 50
#: The newest jobs the journal page lists.
JOBS_SHOWN = 200


def source_of(request: Request) -> Source:
    """The memory the app reads."""
    source: Source = request.app.state.source
    return source


def render(request: Request, template: str, status_code: int = 200, **values: Any) -> Response:
    """``template`` with ``values`` and what every page shows (where, whether writes are on)."""
    templates = request.app.state.templates
    values.setdefault("where", source_of(request).where())
    values["allow_writes"] = request.app.state.allow_writes
    response: Response = templates.TemplateResponse(request, template, values, status_code=status_code)
    return response


def home(request: Request) -> Response:
    return RedirectResponse(request.url_for("users"), status_code=307)


def users(request: Request) -> Response:
    """Every user, with counts per layer and last activity; ``?q=`` searches user ids."""
    source = source_of(request)
    search = request.query_params.get("q", "").strip()
    ids = source.users(search or None)
    summaries = [source.user_summary(u) for u in ids[:200]]
    found = source.find_threads(search)[:THREADS_FOUND] if search else []
    stats = source.stats()
    return render(request, "users.html", users=summaries, total=len(ids), q=search, stats=stats, found=found)


def user(request: Request) -> Response:
    """One user: their threads and their counts, with links to each layer."""
    source = source_of(request)
    user_id = request.path_params["user_id"]
    return render(request, "user.html", user=source.user_summary(user_id), user_id=user_id,
                  threads=source.threads(user_id))


def thread(request: Request) -> Response:
    """A thread's whole log (each message anchored by its id) and its summary."""
    source = source_of(request)
    user_id, thread_id = request.path_params["user_id"], request.path_params["thread_id"]
    messages = source.messages(user_id, thread_id)
    if not messages and not any(t.thread_id == thread_id for t in source.threads(user_id)):
        raise NotFoundError(f"user {user_id!r} has no thread {thread_id!r}")
    return render(request, "thread.html", user_id=user_id, thread_id=thread_id, messages=messages,
                  summary=source.summary(user_id, thread_id))


def memories(request: Request) -> Response:
    """The user's memories a page at a time (``?offset=``), or those matching ``?q=``."""
    source = source_of(request)
    user_id = request.path_params["user_id"]
    search = request.query_params.get("q", "").strip()
    if search:
        entries = source.search(user_id, search)
        return render(request, "memories.html", user_id=user_id, entries=entries, q=search, page=None)
    offset = _whole(request.query_params.get("offset", "0"), "offset")
    page = source.memories(user_id, offset, PAGE_SIZE)
    return render(request, "memories.html", user_id=user_id, entries=page.entries, q="", page=page)


def entities(request: Request) -> Response:
    """The user's entities with the history of each attribute."""
    user_id = request.path_params["user_id"]
    return render(request, "entities.html", user_id=user_id, entities=source_of(request).entities(user_id))


def episodes(request: Request) -> Response:
    """The user's episodes, newest first."""
    user_id = request.path_params["user_id"]
    return render(request, "episodes.html", user_id=user_id, episodes=source_of(request).episodes(user_id))


def replay(request: Request) -> Response:
    """Pick a user and a thread, type a query: what ``before_turn`` would send, part by part."""
    source = source_of(request)
    params = request.query_params
    user_id = params.get("user", "").strip()
    thread_id = params.get("thread", "").strip()
    query = params.get("query", "").strip()
    # The picker lists the first users (a user id typed in the address works for any).
    all_users = source.users()[:USERS_PICKED]
    if user_id and user_id not in all_users:
        all_users.append(user_id)
    threads = source.threads(user_id) if user_id else []
    result = None
    if user_id and thread_id:
        context, evidence = source.replay(user_id, thread_id, query or None)
        result = replaying.build(context, evidence, source.count_message_tokens, source.budget())
    return render(request, "replay.html", users=all_users, threads=threads, user_id=user_id,
                  thread_id=thread_id, query=query, replay=result)


def jobs(request: Request) -> Response:
    """The job journal, newest first (``?status=failed`` for the failures and their errors)."""
    source = source_of(request)
    status = request.query_params.get("status") or None
    return render(request, "jobs.html", jobs=source.jobs(status, JOBS_SHOWN), status=status or "",
                  counts=source.stats()["jobs"])


def spend(request: Request) -> Response:
    """Model calls and tokens per day and per user, as charts."""
    usage = source_of(request).stats()["usage"]
    return render(request, "spend.html", usage=usage, days=charts.columns(usage["by_day"]),
                  people=charts.rows(usage["by_user"]))


def _whole(text: str, name: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InvalidInputError(f"{name} must be a whole number, got {text!r}") from None
    if value < 0:
        raise InvalidInputError(f"{name} must be a whole number, got {text!r}")
    return value


async def _memory_error(request: Request, exc: Exception) -> Response:
    """A memory error as a page that says it (404 for what does not exist)."""
    status = 404 if isinstance(exc, NotFoundError) else 400 if isinstance(
        exc, (InvalidInputError, ThreadOwnershipError)) else 500
    if request.url.path.startswith("/api/"):
        return JSONResponse({"error": str(exc)}, status_code=status)
    return render(request, "error.html", status_code=status, message=str(exc))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return PlainTextResponse(f"{exc.status_code}: {exc.detail}", status_code=exc.status_code)


ERROR_HANDLERS: dict[Any, Any] = {TieredMemoryError: _memory_error, HTTPException: _http_error}

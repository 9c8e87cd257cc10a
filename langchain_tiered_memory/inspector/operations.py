"""The inspector's write operations: forget, export a user, re-run failed jobs.

Each answers 403 unless the server was started with ``allow_writes`` (the pages then show
no button for it either). Forgetting asks for a typed confirmation -- the id of what goes --
and forgets as the API does (``memory.memories.forget``, ``memory.admin.forget``): one
journaled operation, whose result says what was deleted and what the scrub found
(``wal_scrubbed``: no frame of the deleted rows left in ``memory.db-wal``;
``job_answers_scrubbed``: job rows whose copies of the text were dropped). Writes are
``POST`` with a JSON body, and an ``Origin`` header, when the browser sends one, must name
this server: another site's page cannot make them.
"""

from __future__ import annotations

import json
from typing import Any


from ..errors import InvalidInputError
from .pages import source_of
from .web import JSONResponse, Request, Response, run_in_threadpool

__all__ = ["export_user", "forget", "retry_jobs"]

#: What can be forgotten from the inspector, and the id its confirmation must repeat.
KINDS = ("memory", "thread", "user")


def _refused(request: Request) -> Response | None:
    """403 when writes are off; 400 for a request a page of ours would not make."""
    if not request.app.state.allow_writes:
        return JSONResponse(
            {"error": "writes are off: start the inspector with --allow-writes (serve(..., allow_writes=True))"},
            status_code=403,
        )
    return None


async def _body(request: Request) -> dict[str, Any]:
    origin = request.headers.get("origin")
    if origin is not None and origin.rstrip("/") != f"{request.url.scheme}://{request.url.netloc}":
        raise InvalidInputError(f"a write from another origin ({origin}) is refused")
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
        raise InvalidInputError("a write is a POST with a JSON body (Content-Type: application/json)")
    try:
        body = json.loads(await request.body())
    except ValueError:
        raise InvalidInputError("the request body is not JSON") from None
    if not isinstance(body, dict):
        raise InvalidInputError("the request body must be a JSON object")
    return body


async def forget(request: Request) -> Response:
    """``{"kind": "memory"|"thread"|"user", "user_id": …, "target": …, "confirm": …}``:
    forgets it when ``confirm`` repeats the target's id (the user id for a user)."""
    refused = _refused(request)
    if refused is not None:
        return refused
    body = await _body(request)
    kind, user_id, target = body.get("kind"), body.get("user_id"), body.get("target")
    if kind not in KINDS:
        raise InvalidInputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(user_id, str) or not user_id:
        raise InvalidInputError("user_id is missing")
    named = user_id if kind == "user" else target
    if not isinstance(named, str) or not named:
        raise InvalidInputError(f"target (the {kind}'s id) is missing")
    if body.get("confirm") != named:
        raise InvalidInputError(f"nothing was forgotten: type the {kind}'s id ({named}) to confirm")
    source = source_of(request)
    if kind == "memory":
        counts = await run_in_threadpool(source.forget, user_id, memory_id=named)
    elif kind == "thread":
        counts = await run_in_threadpool(source.forget, user_id, thread_id=named)
    else:
        counts = await run_in_threadpool(source.forget, user_id)
    scrub = {k: counts.pop(k) for k in ("wal_scrubbed", "job_answers_scrubbed") if k in counts}
    return JSONResponse({"forgotten": counts, "scrub": scrub, "kind": kind, "target": named})


def export_user(request: Request) -> Response:
    """Everything stored of the user, as a JSON download."""
    refused = _refused(request)
    if refused is not None:
        return refused
    user_id = request.path_params["user_id"]
    data = source_of(request).export_user(user_id)
    # export_user's data is JSON-ready; str() covers a stray date.
    body = json.dumps(data, ensure_ascii=False, default=str)
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in user_id)
    return Response(body, media_type="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{safe}.json"'})


async def retry_jobs(request: Request) -> Response:
    """Runs the failed jobs again and waits for them; says how many are still failed."""
    refused = _refused(request)
    if refused is not None:
        return refused
    await _body(request)

    return JSONResponse(await run_in_threadpool(source_of(request).retry_failed))

"""The inspector's web application: routes, templates, and the checks every request passes.

Security, in the order a request meets it:

- the token (when one is set): ``Authorization: Bearer <token>``, or the cookie a first
  visit with ``?token=<token>`` sets; compared in constant time on every request;
- the ``Host`` header, for a local bind: only ``127.0.0.1``, ``localhost`` or ``[::1]``,
  so that a web page cannot reach the inspector through a DNS name rebound to this machine;
- writes (forget, export, re-run jobs) answer 403 unless the server was started with
  ``allow_writes``; they are ``POST`` requests with a JSON body and, when the browser sends
  one, an ``Origin`` of this server, so a page elsewhere cannot submit them.

Every stored text reaches the page through Jinja's autoescaping: it is user data. And in
case some path ever missed it, every response carries a Content-Security-Policy that runs
only the inspector's own script file (no inline script), in no frame of another site.
"""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any
from urllib.parse import urlencode


from . import operations, pages
from .source import Source, job_label, when
from .web import (
    ASGIApp, Environment, FileSystemLoader, Jinja2Templates, Message, Middleware, Mount, MutableHeaders,
    PlainTextResponse, Receive, RedirectResponse, Request, Response, Route, Scope, Send, Starlette, StaticFiles,
    TrustedHostMiddleware,
)

__all__ = ["LOCAL_HOSTS", "TOKEN_COOKIE", "make_app"]

HERE = Path(__file__).parent
#: The names a local bind answers to (a browser's Host header).
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
TOKEN_COOKIE = "tiered_memory_inspector"
#: Headers of every response: scripts from this server's files only (never inline), no
#: framing (a forget button under another site's overlay), no address sent elsewhere.
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def make_app(source: Source, *, allow_writes: bool = False, token: str | None = None, local: bool = True) -> Starlette:
    """The inspector over ``source``. ``local``: bound to a loopback address (the ``Host``
    header is then checked); ``token``: required of every request when set."""
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True)
    env.filters["when"] = when
    env.filters["num"] = _num
    env.filters["job_label"] = job_label
    templates = Jinja2Templates(env=env)
    middleware = [Middleware(SecurityHeaders)]
    if local:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS)))
    if token:
        middleware.append(Middleware(TokenCheck, token=token))
    routes = [
        Route("/", pages.home),
        Route("/users", pages.users),
        Route("/users/{user_id}", pages.user),
        Route("/users/{user_id}/threads/{thread_id}", pages.thread),
        Route("/users/{user_id}/memories", pages.memories),
        Route("/users/{user_id}/entities", pages.entities),
        Route("/users/{user_id}/episodes", pages.episodes),
        Route("/replay", pages.replay),
        Route("/jobs", pages.jobs),
        Route("/spend", pages.spend),
        Route("/users/{user_id}/export", operations.export_user),
        Route("/api/forget", operations.forget, methods=["POST"]),
        Route("/api/jobs/retry", operations.retry_jobs, methods=["POST"]),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]
    app = Starlette(routes=routes, middleware=middleware, exception_handlers=pages.ERROR_HANDLERS)
    app.state.source = source
    app.state.allow_writes = allow_writes
    app.state.templates = templates
    return app


class SecurityHeaders:
    """Adds :data:`SECURITY_HEADERS` to every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


class TokenCheck:
    """Refuses every request without the token (401); a ``?token=`` visit sets the cookie
    and comes back without the token in its address (kept out of history and logs)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._token = token.encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        given = request.query_params.get("token")
        if given is not None and self._ok(given):
            rest = [(k, v) for k, v in request.query_params.multi_items() if k != "token"]
            target = request.url.path + (f"?{urlencode(rest)}" if rest else "")
            response: Response = RedirectResponse(target, status_code=303)
            response.set_cookie(TOKEN_COOKIE, given, httponly=True, samesite="strict")
            await response(scope, receive, send)
            return
        header = request.headers.get("authorization", "")
        bearer = header[7:] if header.lower().startswith("bearer ") else None
        if not any(self._ok(t) for t in (bearer, request.cookies.get(TOKEN_COOKIE)) if t is not None):
            refused = PlainTextResponse(
                "401: this inspector needs its token: open the address the server printed "
                "(…?token=…), or send Authorization: Bearer <token>", status_code=401,
            )
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)

    def _ok(self, given: str) -> bool:
        return hmac.compare_digest(given.encode(), self._token)


def _num(value: Any, digits: int = 3) -> str:
    """A score part for the page (``—`` when the unit had none)."""
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return f"{value:,}"

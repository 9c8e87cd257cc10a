"""The web framework the inspector runs on (Starlette, Jinja2, uvicorn), imported in one place.

They come with the ``inspector`` extra; without it, importing this module raises
:class:`InspectorUnavailableError` with the install line, instead of a bare ImportError from
somewhere inside a page.
"""

from __future__ import annotations

from .errors import INSTALL, InspectorUnavailableError


try:
    import uvicorn
    from jinja2 import Environment, FileSystemLoader
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.datastructures import MutableHeaders
    from starlette.exceptions import HTTPException
    from starlette.middleware import Middleware
    from starlette.middleware.trustedhost import TrustedHostMiddleware
    from starlette.requests import Request
    from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles
    from starlette.templating import Jinja2Templates
    from starlette.types import ASGIApp, Message, Receive, Scope, Send
except ImportError as exc:
    raise InspectorUnavailableError(f"the inspector needs its web packages ({exc.name} is missing): {INSTALL}") from None

__all__ = [
    "ASGIApp", "Environment", "FileSystemLoader", "HTTPException",
    "JSONResponse", "Jinja2Templates", "Message", "Middleware", "Mount", "MutableHeaders", "PlainTextResponse",
    "Receive", "RedirectResponse", "Request", "Response", "Route", "Scope", "Send", "Starlette", "StaticFiles",
    "TrustedHostMiddleware", "run_in_threadpool", "uvicorn",
]

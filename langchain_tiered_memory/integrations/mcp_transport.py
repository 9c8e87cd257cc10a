"""Serving the MCP server of :mod:`.mcp_server`: over stdio (the default), or streamable HTTP.

stdio: the protocol owns the process's standard output. Anything else that writes to file
descriptor 1 while the server runs (a native library's note) goes to standard error
instead, so it cannot break the client's stream.

HTTP: ``http://HOST:PORT/mcp``, on ``127.0.0.1`` unless a token is given; with a token,
every request must carry ``Authorization: Bearer <token>`` (compared in constant time), or
it is answered 401 before it reaches the server.
"""

from __future__ import annotations

import asyncio
import hmac
import ipaddress
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal

from ..errors import ConfigError
from .mcp_server import DEFAULT_PORT, MCP_EXTRA, create_mcp_server

try:  # the [mcp] extra (the SDK serves its HTTP transport with uvicorn)
    import uvicorn
except ImportError as exc:
    raise ConfigError(f"the MCP server needs the [mcp] extra ({exc}): {MCP_EXTRA}") from exc

if TYPE_CHECKING:
    from mcp.server.fastmcp import FastMCP

    from ..memory import TieredMemory

__all__ = ["DEFAULT_PORT", "TOKEN_ENV", "check_address", "is_local", "serve_mcp"]

#: Where ``tiered-memory mcp`` reads the token when ``--token`` is not given.
TOKEN_ENV = "TIERED_MEMORY_MCP_TOKEN"

_Scope = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
_Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
_App = Callable[[_Scope, _Receive, _Send], Awaitable[None]]


def is_local(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_address(host: str, token: str | None) -> None:
    """:class:`ConfigError` for a ``host`` other machines can reach without a token, or a
    token too short to be a secret."""
    if token is not None and (not isinstance(token, str) or len(token) < 8):
        raise ConfigError("the token must be a string of at least 8 characters (e.g. secrets.token_urlsafe())")
    if not is_local(host) and not token:
        raise ConfigError(
            f"refusing to serve the memory over MCP on {host}, which other machines can reach, without a "
            f"token: pass --token (token=, or set {TOKEN_ENV}), or bind to 127.0.0.1"
        )


def serve_mcp(
    memory: TieredMemory,
    user_id: str,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    token: str | None = None,
    on_ready: Callable[[str], None] | None = None,
) -> None:
    """Serve ``memory`` to MCP clients, acting for ``user_id``, until the client goes
    (stdio: its end of standard input) or the process is interrupted (HTTP).

    ``transport="http"``: streamable HTTP at ``http://host:port/mcp`` (``port=0``: a free
    one); ``on_ready`` is called with that address once the server accepts connections.
    A ``host`` other machines can reach needs a ``token``, which every request must then
    carry as ``Authorization: Bearer <token>``.
    """
    if transport == "stdio":
        server = create_mcp_server(memory, user_id)
        with _stdout_for_the_protocol():
            asyncio.run(server.run_stdio_async())
        return
    if transport != "http":
        raise ConfigError(f"transport must be 'stdio' or 'http', got {transport!r}")
    if not isinstance(host, str) or not host:
        raise ConfigError(f"host must be an address such as 127.0.0.1, got {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port must be a whole number from 0 to 65535, got {port!r}")
    check_address(host, token)
    server = create_mcp_server(memory, user_id, host=host, port=port)
    asyncio.run(_serve_http(server, host, port, token, on_ready))


async def _serve_http(
    server: FastMCP[Any], host: str, port: int, token: str | None, on_ready: Callable[[str], None] | None
) -> None:
    app: _App = server.streamable_http_app()
    if token:
        app = _BearerCheck(app, token)
    sock = _bind(host, port)  # bound here: port 0 becomes a real port before we say where
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    web = uvicorn.Server(config)
    task = asyncio.create_task(web.serve(sockets=[sock]))
    while not web.started and not task.done():
        await asyncio.sleep(0.02)
    if web.started and on_ready is not None:
        on_ready(_address(host, sock.getsockname()[1]) + server.settings.streamable_http_path)
    await task


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``; our :class:`ConfigError` when it cannot be."""
    address = host.strip("[]")
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
    except OSError as exc:
        sock.close()
        raise ConfigError(f"the MCP server cannot listen on {host}:{port}: {exc.strerror or exc} "
                          "(another port, or --port 0 for a free one?)") from exc
    return sock


def _address(host: str, port: int) -> str:
    """``http://host:port`` as a client writes it (a wildcard address as the loopback one)."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    shown = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]"}.get(shown, shown)
    return f"http://{shown}:{port}"


class _BearerCheck:
    """Refuses (401) every HTTP request without ``Authorization: Bearer <token>``."""

    def __init__(self, app: _App, token: str) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "http" and not self._allowed(scope):
            body = b"401: this MCP server needs its token: send Authorization: Bearer <token>\n"
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"text/plain; charset=utf-8"), (b"www-authenticate", b"Bearer"),
                (b"content-length", str(len(body)).encode()),
            ]})
            await send({"type": "http.response.body", "body": body})
            return
        await self._app(scope, receive, send)

    def _allowed(self, scope: _Scope) -> bool:
        given = [value for name, value in scope.get("headers", ()) if name.lower() == b"authorization"]
        return len(given) == 1 and hmac.compare_digest(given[0], self._expected)


@contextmanager
def _stdout_for_the_protocol() -> Iterator[None]:
    """Standard output for the MCP stream alone: ``sys.stdout`` (which the SDK's stdio
    transport writes) keeps the real stdout, while file descriptor 1 points at stderr."""
    sys.stdout.flush()
    original = sys.stdout
    protocol = os.dup(1)
    saved = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = os.fdopen(protocol, "w", encoding="utf-8")
    try:
        yield
    finally:
        try:
            sys.stdout.close()
        except (OSError, ValueError):  # the client closed its end first
            pass
        sys.stdout = original
        os.dup2(saved, 1)
        os.close(saved)

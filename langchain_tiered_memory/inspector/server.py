"""Running the inspector: :func:`serve` binds it, in the foreground or in a thread."""

from __future__ import annotations

import ipaddress
import secrets
import threading
import time
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from .errors import InspectorUnavailableError

if TYPE_CHECKING:
    from ..memory import TieredMemory

__all__ = ["DEFAULT_PORT", "Inspector", "InspectorUnavailableError", "is_local", "serve"]

DEFAULT_PORT = 8765
#: How long a background server may take to start listening, in seconds.
START_SECONDS = 30.0


class Inspector:
    """A running inspector: its address, and :meth:`stop` (also on leaving a ``with``)."""

    def __init__(self, server: Any, thread: threading.Thread | None, url: str) -> None:
        self._server = server
        self._thread = thread
        #: The address to open in a browser (with ``?token=…`` when a token is required).
        self.url = url

    def stop(self, timeout: float = 10.0) -> None:
        """Stop serving and wait for the server to close (at most ``timeout`` seconds)."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)

    def wait(self) -> None:
        """Serve until the server stops, or until Ctrl-C (which stops it)."""
        try:
            while self._thread is not None and self._thread.is_alive():
                self._thread.join(0.5)
        except KeyboardInterrupt:
            self.stop()

    def __enter__(self) -> Inspector:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"Inspector({self.url})"

    def _repr_html_(self) -> str:
        from html import escape

        return f'<a href="{escape(self.url)}" target="_blank">memory inspector: {escape(self.url)}</a>'


def is_local(host: str) -> bool:
    """Whether ``host`` is a loopback address (or ``localhost``)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def serve(
    memory: TieredMemory,
    *,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    allow_writes: bool = False,
    token: str | None = None,
    block: bool = True,
) -> Inspector | None:
    """Serve the memory inspector for ``memory`` at ``http://host:port``.

    Read-only unless ``allow_writes`` (forget, export, re-run failed jobs). Binds to
    127.0.0.1; another address needs a ``token``, which every request must then carry (the
    returned ``url`` holds it once, and the browser keeps it in a cookie). ``port=0`` picks
    a free port. ``block=False`` (a notebook) serves from a thread and returns an
    :class:`Inspector` with ``.url`` and ``.stop()``; ``block=True`` prints the address, serves until Ctrl-C
    and returns ``None``. Reads are looks: nothing the pages show changes what is stored.
    """
    if not isinstance(host, str) or not host:
        raise ConfigError(f"host must be an address such as 127.0.0.1, got {host!r}")
    if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
        raise ConfigError(f"port must be a whole number from 0 to 65535, got {port!r}")
    if token is not None and (not isinstance(token, str) or len(token) < 8):
        raise ConfigError("token must be a string of at least 8 characters (e.g. secrets.token_urlsafe())")
    local = is_local(host)
    if not local and not token:
        raise ConfigError(
            f"refusing to serve the memory on {host}, which other machines can reach, without a token: "
            f"pass --token (e.g. --token {secrets.token_urlsafe(16)}), or bind to 127.0.0.1"
        )
    from .app import make_app  # raises InspectorUnavailableError without the extra (web.py)
    from .web import uvicorn
    from .source import Source

    app = make_app(Source(memory), allow_writes=allow_writes, token=token, local=local)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="tiered-memory-inspector", daemon=True)
    thread.start()
    deadline = time.monotonic() + START_SECONDS
    while not server.started:
        if not thread.is_alive():
            raise ConfigError(f"the inspector could not listen on {host}:{port} (is the port in use?)")
        if time.monotonic() > deadline:
            server.should_exit = True
            raise ConfigError(f"the inspector did not start listening on {host}:{port} within {START_SECONDS:.0f} s")
        time.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
    inspector = Inspector(server, thread, address(host, int(bound), token))
    if not block:
        return inspector
    print(f"memory inspector at {inspector.url}  ({'writes allowed' if allow_writes else 'read-only'}; Ctrl-C stops it)",
          flush=True)
    inspector.wait()
    return None


def address(host: str, port: int, token: str | None) -> str:
    """The URL to open: the host as a browser writes it, and the token once."""
    shown = f"[{host.strip('[]')}]" if ":" in host else host
    if shown in ("0.0.0.0", "[::]"):
        shown = "127.0.0.1" if shown == "0.0.0.0" else "[::1]"
    url = f"http://{shown}:{port}/"
    if token:
        from urllib.parse import quote

        url += f"?token={quote(token)}"
    return url

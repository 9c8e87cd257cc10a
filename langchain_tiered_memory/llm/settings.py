"""The chat model used when none is passed: any OpenAI-compatible server, from the environment.

The variables a user of the OpenAI SDK already sets choose the server, and one of ours the
model:

- ``OPENAI_BASE_URL`` — the server (a local llama.cpp, Ollama, vLLM or LM Studio:
  ``http://localhost:8080/v1``); unset, OpenAI itself;
- ``OPENAI_API_KEY`` — its key (a local server needs none: a placeholder is sent);
- ``TIERED_MEMORY_MODEL`` — the model name (default ``gpt-4o-mini``); the CLI's ``--model``
  overrides it.

A model is configured when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set; otherwise
:meth:`ModelSettings.from_env` returns ``None`` and the memory works offline. The request
timeout and the client's retries are passed to ``ChatOpenAI``. :meth:`ModelSettings.check_reachable`
connects to the server once (a TCP connect, a few seconds at most), so a command fails fast
with one line naming the address, instead of after the SDK's retries.
"""

from __future__ import annotations

import math
import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..errors import ConfigError, ModelUnavailableError

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

__all__ = [
    "DEFAULT_OPENAI_MODEL",
    "ENV_MODEL",
    "OPENAI_URL",
    "ModelSettings",
    "is_connection_error",
]

#: The model used on OpenAI (or any server) when ``TIERED_MEMORY_MODEL`` does not name one.
DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
#: The variable naming the model.
ENV_MODEL = "TIERED_MEMORY_MODEL"
#: Where the OpenAI SDK goes without ``OPENAI_BASE_URL``.
OPENAI_URL = "https://api.openai.com/v1"
#: Sent as the key to a server that needs none (the OpenAI SDK refuses to start without one).
NO_KEY = "not-needed"
#: Seconds :meth:`ModelSettings.check_reachable` waits for the server to accept a connection.
CONNECT_TIMEOUT = 3.0


@dataclass(frozen=True)
class ModelSettings:
    """Which OpenAI-compatible server and model to use, and how to call it.

    Args:
        model: The model name the server knows (``gpt-4o-mini``, ``llama3.2``, a GGUF alias).
        base_url: The server's OpenAI-compatible root (``…/v1``); ``None``: OpenAI.
        api_key: The key; ``None`` sends a placeholder (local servers ignore it).
        timeout: Seconds one request may take before the client gives up on it.
        max_retries: Retries of a failed request by the client itself.
    """

    model: str = DEFAULT_OPENAI_MODEL
    base_url: str | None = None
    api_key: str | None = None
    timeout: float = 60.0
    max_retries: int = 2

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise ConfigError(f"the model name must be a non-empty string, got {self.model!r}")
        if isinstance(self.timeout, bool) or not isinstance(self.timeout, (int, float)) or not (
            math.isfinite(self.timeout) and self.timeout > 0
        ):
            raise ConfigError(f"timeout must be a positive number of seconds, got {self.timeout!r}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise ConfigError(f"max_retries must be a whole number >= 0, got {self.max_retries!r}")
        if self.base_url is not None:
            parts = urlsplit(self.base_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise ConfigError(
                    f"the server URL {self.base_url!r} is not an http(s) URL; set OPENAI_BASE_URL "
                    "to the server's OpenAI-compatible root, e.g. http://localhost:8080/v1"
                )

    @classmethod
    def from_env(
        cls,
        *,
        model: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        environ: Mapping[str, str] | None = None,
    ) -> ModelSettings | None:
        """The settings the environment gives (module doc), or ``None`` when it configures no
        model. ``model`` (the CLI's ``--model``) overrides ``TIERED_MEMORY_MODEL``; given while
        neither ``OPENAI_API_KEY`` nor ``OPENAI_BASE_URL`` is set, it is a :class:`ConfigError`.
        """
        env = os.environ if environ is None else environ
        key = env.get("OPENAI_API_KEY", "").strip() or None
        url = env.get("OPENAI_BASE_URL", "").strip() or None
        name = (model or "").strip() or env.get(ENV_MODEL, "").strip() or DEFAULT_OPENAI_MODEL
        if key is None and url is None:
            if model is not None:
                raise ConfigError(
                    f"model {model!r} was asked for, but no server is configured: set "
                    "OPENAI_BASE_URL to a local OpenAI-compatible server (llama.cpp, Ollama, vLLM), "
                    "or OPENAI_API_KEY for OpenAI"
                )
            return None
        return cls(model=name, base_url=url, api_key=key, timeout=timeout, max_retries=max_retries)

    @property
    def url(self) -> str:
        """The server's root URL (OpenAI's when no base URL is set)."""
        return self.base_url or OPENAI_URL

    def describe(self) -> str:
        """``model at URL``, for messages."""
        return f"{self.model} at {self.url}"

    def chat_model(self) -> BaseChatModel:
        """A ``ChatOpenAI`` on these settings (``langchain-openai`` is a dependency)."""
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(
            model=self.model,
            base_url=self.url,
            api_key=self.api_key or NO_KEY,  # type: ignore[arg-type]
            timeout=self.timeout,
            max_retries=self.max_retries,
        )

    def check_reachable(self, timeout: float = CONNECT_TIMEOUT) -> None:
        """Connect to the server once; :class:`ModelUnavailableError` when nobody answers.

        Only a TCP connection is opened (nothing is sent): it catches a server that is not
        running, a wrong port or host, and no network, in at most ``timeout`` seconds.
        """
        parts = urlsplit(self.url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            if isinstance(exc, TimeoutError) or isinstance(exc, socket.timeout):
                reason = f"no answer within {timeout:g} s"
            raise ModelUnavailableError(self.unreachable(reason)) from None

    def unreachable(self, reason: str) -> str:
        """The one line saying the server cannot be reached, and what to do."""
        where = "OPENAI_BASE_URL" if self.base_url else "OpenAI (OPENAI_BASE_URL is not set)"
        return (
            f"cannot reach the model server {self.url} ({reason}); start the server, or point "
            f"{where} at one that runs (model {self.model!r}, from --model or {ENV_MODEL}); "
            "unset OPENAI_API_KEY and OPENAI_BASE_URL to work offline"
        )


def is_connection_error(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause) says the server could not be reached at all."""
    seen = 0
    current: BaseException | None = exc
    while current is not None and seen < 5:
        name = type(current).__name__
        if name in ("APITimeoutError", "ReadTimeout"):
            return False  # the server is there but slow: one failed call, not a dead server
        if name in ("APIConnectionError", "ConnectError", "ConnectTimeout") or isinstance(
            current, (ConnectionError, socket.gaierror)
        ):
            return True
        current, seen = current.__cause__ or current.__context__, seen + 1
    return False

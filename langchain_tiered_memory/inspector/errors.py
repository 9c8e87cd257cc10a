"""The inspector's own error: its web packages are missing (the ``inspector`` extra)."""

from __future__ import annotations

from ..errors import ConfigError

__all__ = ["INSTALL", "InspectorUnavailableError"]

INSTALL = "pip install 'langchain-tiered-memory[inspector]'"


class InspectorUnavailableError(ConfigError):
    """The inspector's web packages (Starlette, Jinja2, uvicorn) are not installed."""

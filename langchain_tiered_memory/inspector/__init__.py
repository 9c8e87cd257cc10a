"""The memory inspector: a small local web app to see what the memory holds and what a turn
would send the model (``tiered-memory serve``, or :func:`serve` from a notebook).

Installed with ``pip install 'langchain-tiered-memory[inspector]'`` (Starlette, Jinja2 and
uvicorn); the pages use plain JavaScript and fetch nothing from elsewhere. It reads the
memory through its public API only (:mod:`.source`), and changes nothing unless started
with ``allow_writes``.
"""

from __future__ import annotations

from .server import DEFAULT_PORT, Inspector, InspectorUnavailableError, serve

__all__ = ["DEFAULT_PORT", "Inspector", "InspectorUnavailableError", "serve"]

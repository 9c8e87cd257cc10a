"""Where the package keeps files it can rebuild: a directory per kind in the user's cache.

``$XDG_CACHE_HOME/langchain-tiered-memory/<kind>`` (``~/.cache/...`` when unset); a
temporary directory when that cannot be created (a read-only home). Nothing in a cache is
a record: deleting it costs a rebuild, never data.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

__all__ = ["user_cache_dir"]


def user_cache_dir(kind: str) -> Path:
    """The cache directory of ``kind`` (created where it can be)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    path = Path(base) / "langchain-tiered-memory" / kind
    try:
        path.mkdir(parents=True, exist_ok=True)
        return path
    except OSError:
        fallback = Path(tempfile.gettempdir()) / f"langchain-tiered-memory-{kind}"
        # Never raises: a caller that writes here handles (and reports) its own failure.
        with contextlib.suppress(OSError):
            fallback.mkdir(parents=True, exist_ok=True)
        return fallback

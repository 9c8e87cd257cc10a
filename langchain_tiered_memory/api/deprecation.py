"""How the names of the old, flat facade keep working for one release: each warns with a
``DeprecationWarning`` that names its new spelling, then does what it did."""

from __future__ import annotations

import warnings

__all__ = ["warn_renamed"]


def warn_renamed(old: str, new: str, *, stacklevel: int = 3) -> None:
    """Warn that ``memory.<old>`` is deprecated in favour of ``new`` (removed in the next release)."""
    warnings.warn(
        f"memory.{old} is deprecated and will be removed in the next release; use {new}",
        DeprecationWarning,
        stacklevel=stacklevel,
    )

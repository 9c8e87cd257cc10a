"""The window: working memory, the newest messages of a thread that fit a token budget.

One layer in two modules: :mod:`.selection` decides which messages the window holds (the
rules are there), :mod:`.layer` keeps each thread's window between turns — its cached
index of the log, the pinned system message, truncated messages, and what left it.
"""

from .layer import Window
from .selection import TRUNCATION_MARKER, Selection, ThreadIndex, fit_group, select, truncate_message

__all__ = ["TRUNCATION_MARKER", "Selection", "ThreadIndex", "Window", "fit_group", "select", "truncate_message"]

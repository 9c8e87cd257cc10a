"""Work the embeddings start at a memory's open, in a thread, so that its first turn does not wait:
loading the local embedding model (~0.3 s; onnxruntime loads with the GIL released, while
the tokenizer, database and shard open). A failure is logged and left to the first real use
(which raises). Pure-Python work is not started so: it holds the GIL, and a turn asked at
once after the open paid for it all (the date parser's first use, ~0.8 s, warmed so made
open + first turn slower; it stays with the first query that names a month).

Exit waits for what still runs: the interpreter tears down native libraries (the ONNX
runtime) while a thread may be inside one, which aborts the process (C++'s ``terminate``,
exit 134). A process that exits within the load's ~0.3 s of its open so waits for its end.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable

__all__ = ["in_background"]

logger = logging.getLogger("langchain_tiered_memory")

_running: weakref.WeakSet[threading.Thread] = weakref.WeakSet()
#: How long exit waits for each (a load takes well under a second on 2 cores).
EXIT_WAIT_SECONDS = 30.0


def in_background(name: str, work: Callable[[], object]) -> threading.Thread:
    """Run ``work`` in a daemon thread that exit waits for; the thread."""

    def run() -> None:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - the first real use raises it
            logger.debug("%s in the background failed: %s", name, exc)

    thread = threading.Thread(target=run, name=f"tiered-memory-{name}", daemon=True)
    _running.add(thread)
    thread.start()
    return thread


@atexit.register
def _wait_at_exit() -> None:
    for thread in list(_running):
        thread.join(timeout=EXIT_WAIT_SECONDS)

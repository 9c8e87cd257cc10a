"""Who owns an embedded shard: one process at a time, by ``flock`` on ``path/LOCK``.

A second process gets :class:`ShardLockedError` naming the holder (its pid, written into
the lock file) and what to do, before it touches a file of the shard — instead of the
shard's own opaque WAL error, or two writers. The lock is released when its descriptor
closes, so a killed process never leaves a stale lock.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import ShardLockedError, VectorStoreError

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "lock_shard", "locked_message"]

LOCK_FILE = "LOCK"


def lock_shard(path: Path) -> int | None:
    """Take the shard at ``path`` for this process: the lock file's descriptor (close it to
    let go). Raises :class:`ShardLockedError` while another process holds it."""
    lock_path = path / LOCK_FILE
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise VectorStoreError(f"cannot create the lock file {lock_path}: {exc}") from exc
    if fcntl is None:  # pragma: no cover - no flock: rely on the shard's own WAL lock
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        try:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip()
        except OSError:
            holder = ""
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise VectorStoreError(f"cannot lock {lock_path}: {exc}") from exc
        raise ShardLockedError(locked_message(path, holder)) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def locked_message(path: Path, holder: str = "") -> str:
    """What :class:`ShardLockedError` says: who holds the shard, and what to do."""
    who = f"process {holder}" if holder.isdigit() else "another process"
    return (
        f"the Qdrant Edge shard in {path} is open in {who}; an embedded shard has one owner "
        "at a time, so long-term recall runs in that process only. Close the other process, "
        "give this one its own data_dir, or run a Qdrant server and pass "
        "TieredMemory(..., qdrant_url='http://…', qdrant_api_key=…) so that several processes "
        "share the index"
    )

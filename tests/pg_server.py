"""A throwaway PostgreSQL cluster for the tests and benchmarks: a real server, never a mock.

:func:`start` runs ``initdb`` and ``pg_ctl start`` on a Unix socket in a temporary directory
(no TCP port), as the ``postgres`` user when run as root (PostgreSQL refuses to run as
root); :meth:`Server.stop` stops it and deletes the directory. Databases are made from a
template that already holds the memory's schema, and a test's database is emptied and
handed to the next test (``TRUNCATE``: milliseconds, where ``CREATE DATABASE`` takes a few
hundred), so each test starts on an empty memory at once.
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

TEMPLATE = "tm_template"
#: Settings of a test cluster: nothing is kept after the run, so durability is not bought.
FAST = ("-c fsync=off -c synchronous_commit=off -c full_page_writes=off")


class Unavailable(RuntimeError):
    """No PostgreSQL server can run here; the message says why."""


def bin_dir() -> Path:
    """The directory of ``initdb`` and ``pg_ctl`` (the newest installed PostgreSQL)."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name))
    for path in reversed(candidates):
        if (Path(path) / "initdb").exists():
            return Path(path)
    found = shutil.which("initdb") or shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    raise Unavailable("PostgreSQL is not installed (no initdb/pg_ctl; apt-get install postgresql)")


class Server:
    """A running cluster in ``root`` (data in ``root/data``, the socket in ``root``)."""

    def __init__(self, root: Path, bindir: Path, runas: list[str]) -> None:
        self.root = root
        self.bindir = bindir
        self._runas = runas
        self._names = itertools.count()
        self._free: list[str] = []

    def url(self, dbname: str = "postgres") -> str:
        """A libpq URL of a database of this cluster (user ``postgres``, no password)."""
        return f"postgresql://postgres@/{dbname}?host={self.root}"

    def _admin(self, sql: str) -> None:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql)

    def prepare_template(self) -> None:
        """Create the template database with the memory's schema in it."""
        from langchain_tiered_memory.storage import Storage

        self._admin(f"CREATE DATABASE {TEMPLATE}")
        Storage.open_url(self.url(TEMPLATE), pool_min=0).close()

    def new_database(self, *, schema: bool = True) -> str:
        """The URL of an empty memory database (``schema``), or of an empty database."""
        if schema and self._free:
            return self._free.pop()
        name = f"t{os.getpid()}_{next(self._names)}"
        self._admin(f"CREATE DATABASE {name} TEMPLATE {TEMPLATE if schema else 'template0'}")
        return self.url(name)

    def recycle(self, url: str) -> None:
        """Empty a database made by :meth:`new_database` for the next test, or drop it when
        it is not a plain memory database any more (another schema version, other tables)."""
        import psycopg

        from langchain_tiered_memory.storage import MIGRATIONS

        keep = {"tiered_memory_schema", "checkpoint_migrations"}
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                             "WHERE datname = current_database() AND pid <> pg_backend_pid()")
                conn.execute("SET lock_timeout = '5s'")
                version = conn.execute("SELECT version FROM tiered_memory_schema").fetchone()
                tables = [r[0] for r in conn.execute(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]
                if version != (max(MIGRATIONS),) or "threads" not in tables:
                    raise RuntimeError("not a plain memory database any more")
                conn.execute(f"TRUNCATE {', '.join(t for t in tables if t not in keep)} RESTART IDENTITY CASCADE")
                conn.execute("INSERT INTO meta (key, value) VALUES ('schema_version', %s)", (str(max(MIGRATIONS)),))
        except Exception:
            self.drop_database(url)
            return
        self._free.append(url)

    def drop_database(self, url: str) -> None:
        """Drop a database made by :meth:`new_database` (its connections are ended)."""
        name = url.rsplit("/", 1)[1].split("?", 1)[0]
        with contextlib.suppress(Exception):
            self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")

    def stop(self) -> None:
        """Stop the server and delete its directory."""
        with contextlib.suppress(Exception):
            subprocess.run(
                [*self._runas, str(self.bindir / "pg_ctl"), "-D", str(self.root / "data"), "-m", "immediate",
                 "-w", "stop"], capture_output=True, timeout=60,
            )
        shutil.rmtree(self.root, ignore_errors=True)


def start(*, durable: bool = False, settings: str = "") -> Server:
    """Start a cluster (``durable=False``: without fsync, for tests); raises
    :class:`Unavailable` with the reason when none can run."""
    bindir = bin_dir()
    runas: list[str] = []
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            raise Unavailable("running as root and there is no 'postgres' user to run PostgreSQL as") from None
        runner = shutil.which("runuser")
        if runner is None:
            raise Unavailable("running as root without runuser to start PostgreSQL as 'postgres'")
        runas = [runner, "-u", "postgres", "--"]
    # Short: a Unix socket path must stay under ~100 bytes.
    root = Path(tempfile.mkdtemp(prefix="tmpg-", dir="/tmp"))
    root.chmod(0o777)  # the postgres user writes its data directory and socket here
    data = root / "data"
    server = Server(root, bindir, runas)
    options = f"-k {root} -c listen_addresses='' -c max_connections=300 {'' if durable else FAST} {settings}"
    steps = [
        [*runas, str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
         "--no-instructions", *([] if durable else ["--no-sync"])],
        [*runas, str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(root / "log"), "-w",
         "-t", "60", "start"],
    ]
    for step in steps:
        try:
            done = subprocess.run(step, capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            server.stop()
            raise Unavailable(f"{Path(step[len(runas)]).name} failed: {exc}") from None
        if done.returncode != 0:
            log = (root / "log").read_text(errors="replace")[-500:] if (root / "log").exists() else ""
            server.stop()
            raise Unavailable(
                f"{Path(step[len(runas)]).name} failed ({done.returncode}): {(done.stderr or done.stdout)[-500:]} {log}"
            )
    try:
        server.prepare_template()
    except Exception as exc:
        server.stop()
        raise Unavailable(f"the test cluster started but the template database failed: {exc}") from None
    return server

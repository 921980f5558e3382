"""Helpers of the fault tests: the CLI as a process that can be interrupted, killed or cut off,
and an administrator's connection that holds a lock on one of the catalog's tables, so that a
run stops at a known point of its pipeline (with its temp tables made) until it is let go.

Watching the run's sessions on the server is what makes the tests deterministic: a signal is
sent once the run waits for the held lock, never after a guessed delay.
"""
from __future__ import annotations

import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import sqlalchemy as sa
import yaml

import sqlanon
from tests.backends.test_catalog import POLICY, load, people
from tests.helpers import restricted, wait_for


class Setup:
    """A table of people, the catalog, a policy file and a login the database keeps from the
    table (``restricted``); the test database's URL is the administrator's."""

    def __init__(self, db_url: str, tmp_path: Path, n: int = 2000):
        self.admin = db_url
        self.backend = sa.engine.make_url(db_url).get_backend_name()
        load(db_url, people(n))
        sqlanon.connect(db_url, POLICY, catalog=True, unrestricted=True).close()
        self.policy = tmp_path / "policy.yml"
        self.policy.write_text(yaml.safe_dump(POLICY), encoding="utf-8")
        # after the catalog exists: the reader role gets its tables
        self.login, self.reader = restricted(db_url, str(self.policy))
        self.user = sa.engine.make_url(self.login).username
        self.engine = sa.create_engine(db_url, isolation_level="AUTOCOMMIT")

    def start(self, *args: str) -> subprocess.Popen:
        """``sqlanon ARGS --db LOGIN --policy FILE`` as a deployment runs it."""
        return subprocess.Popen([sys.executable, "-m", "sqlanon", "--reader-role", self.reader, *args,
                                 "--db", self.login, "--policy", str(self.policy)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def run(self, *args: str) -> subprocess.CompletedProcess:
        p = self.start(*args)
        out, err = p.communicate(timeout=300)
        return subprocess.CompletedProcess(p.args, p.returncode, out, err)

    def catalog(self, name: str) -> str:
        """A catalog table's name as SQL (schema ``sqlanon`` or the prefix)."""
        return f"sqlanon.{name}" if self.backend == "postgresql" else f"sqlanon_{name}"

    def scalar(self, sql: str, **params: object) -> object:
        with self.engine.connect() as c:
            return c.execute(sa.text(sql), params).scalar()

    def sessions(self) -> list[tuple]:
        """The login's sessions: (id, what it waits for, its statement)."""
        with self.engine.connect() as c:
            if self.backend == "postgresql":
                q = ("SELECT pid, COALESCE(wait_event_type, ''), COALESCE(query, '') FROM pg_stat_activity "
                     "WHERE usename = :u")
            else:
                # a wait for a row lock shows as state "Update": a statement of these small tests
                # that has run for a second is one that waits
                q = ("SELECT ID, CASE WHEN INFO IS NOT NULL AND TIME_MS > 1000 THEN 'lock' ELSE COALESCE(STATE, '') "
                     "END, COALESCE(INFO, '') FROM information_schema.PROCESSLIST WHERE USER = :u")
            return [tuple(r) for r in c.execute(sa.text(q), {"u": self.user})]

    def waiting(self, *runs: subprocess.Popen, count: int = 1, on: str = "") -> list[tuple]:
        """Wait until ``count`` of the login's sessions wait for a lock (their statement
        containing ``on``); those sessions. A run that ends first fails the test."""
        def found() -> list[tuple]:
            ended = [r for r in runs if r.poll() is not None]  # (none: the run is this process's)
            if ended:
                raise AssertionError(f"the run ended first ({ended[0].returncode}): {ended[0].communicate()}")
            return [s for s in self.sessions() if ("Lock" in s[1] or "lock" in s[1]) and on in s[2]]
        try:
            wait_for(lambda: len(found()) >= count, f"{count} session(s) of the run waiting for a lock on {on!r}")
        except AssertionError as e:
            raise AssertionError(f"{e}; its sessions: {self.sessions()}") from None
        return found()

    @contextmanager
    def locked(self, name: str, mode: str = "ACCESS EXCLUSIVE") -> Iterator[Callable[[], None]]:
        """Hold a lock on the catalog's table ``name`` (PostgreSQL: in ``mode``; MariaDB:
        LOCK TABLES … WRITE; ``mode`` FOR UPDATE: every row and the gap after the last,
        which blocks inserts and no read). Yields a function that lets it go early."""
        conn = sa.create_engine(self.admin).connect()
        held = [True]

        def release() -> None:
            if held[0]:
                held[0] = False
                if self.backend == "mysql" and mode != "FOR UPDATE":
                    conn.exec_driver_sql("UNLOCK TABLES")
                conn.rollback()

        try:
            if mode == "FOR UPDATE":
                conn.exec_driver_sql(f"SELECT * FROM {self.catalog(name)} FOR UPDATE").fetchall()
            elif self.backend == "postgresql":
                conn.exec_driver_sql(f"LOCK TABLE {self.catalog(name)} IN {mode} MODE")
            else:
                conn.exec_driver_sql(f"LOCK TABLES {self.catalog(name)} WRITE")
            yield release
        finally:
            release()
            conn.close()

    def end(self, session: int) -> None:
        """End a session of the run as an administrator does (the connection is lost to it)."""
        with self.engine.connect() as c:
            if self.backend == "postgresql":
                c.execute(sa.text("SELECT pg_terminate_backend(:p)"), {"p": session})
            else:
                c.exec_driver_sql(f"KILL {int(session)}")

    def names(self) -> set[str]:
        """The tables and views of the database, the catalog's own left out."""
        insp = sa.inspect(self.engine)
        return {n for n in insp.get_table_names() + insp.get_view_names() if not n.startswith("sqlanon_")}

    def released(self, target: str) -> int:
        """Releases of ``target`` in the release log."""
        return int(self.scalar(f"SELECT COUNT(*) FROM {self.catalog('releases')} WHERE target = :t", t=target) or 0)

    def claims(self) -> int:
        return int(self.scalar(f"SELECT COUNT(*) FROM {self.catalog('materializing')}") or 0)

    def dispose(self) -> None:
        self.engine.dispose()



def one_line(stderr: str) -> str:
    """The CLI's one line on a failure: no traceback, no class of a library."""
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("error: "), line
    for word in ("Traceback", "sqlalchemy", "psycopg", "pymysql", "OperationalError", "InterfaceError",
                 "sqlalche.me", "Background on this error"):
        assert word not in line, line
    return line

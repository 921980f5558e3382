"""CPU seconds the database server spends, read from /proc where it runs on this machine.

On a shared machine a run's wall time drifts with everyone's load (the same 1 M-row Mondrian
stage took 3.4 s and, an hour later, 10 s), its server's CPU time far less: compare.py reports
both. PostgreSQL: the postmaster of the measuring connection, its live children, and what its
exited children spent (a process's cutime/cstime); MariaDB: the one mariadbd process, all its
threads. None where the server is elsewhere or /proc does not show it (SQLite runs in the
client: its work is the client's CPU time).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable

import sqlalchemy as sa

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> list[str]:
    # the fields after the command name, which may contain spaces and parentheses
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def _seconds(pid: int, children: bool) -> float:
    f = _stat(pid)
    ticks = int(f[11]) + int(f[12]) + (int(f[13]) + int(f[14]) if children else 0)
    return ticks / TICK


def _postgres(conn: sa.Connection) -> Callable[[], float]:
    backend = int(conn.execute(sa.text("SELECT pg_backend_pid()")).scalar())
    postmaster = int(_stat(backend)[1])

    def read() -> float:
        total = _seconds(postmaster, children=True)
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    if int(_stat(int(entry.name))[1]) == postmaster:
                        total += _seconds(int(entry.name), children=False)
                except (OSError, IndexError, ValueError):
                    continue  # a process that ended meanwhile: counted in the postmaster's children
        return total

    return read


def _mariadb(conn: sa.Connection) -> Callable[[], float]:
    found = conn.execute(sa.text("SELECT @@pid_file, @@datadir")).one()
    pid = int((Path(found[1]) / found[0]).read_text().strip())  # an absolute pid_file stays as it is
    return lambda: _seconds(pid, children=False)


def reader(url: str) -> Callable[[], float] | None:
    """A function that returns the server's CPU seconds so far, or None where they cannot be read."""
    if url.startswith("sqlite"):
        return None
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            read = _postgres(conn) if engine.dialect.name == "postgresql" else _mariadb(conn)
            read()
            return read
    except (OSError, IndexError, ValueError, sa.exc.DBAPIError):
        return None
    finally:
        engine.dispose()

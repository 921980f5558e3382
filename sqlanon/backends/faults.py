"""A database's errors as sqlanon's: one line that names the cause — the connection was lost,
another connection holds a lock, the database refused a statement — never a driver's or
SQLAlchemy's class, nor SQLAlchemy's "Background on this error" link.

The backend that served the failed call reads its driver's error (Backend.fault); an error
that reaches a front-end without one is offered to every backend in turn.
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import sqlalchemy as sa

from sqlanon import interrupts
from sqlanon.backends import REGISTRY, Backend
from sqlanon.errors import BackendError, ConnectionLost, DatabaseLocked, SqlanonError


def driver_error(error: BaseException) -> BaseException:
    """The driver's own error inside SQLAlchemy's wrapper (or ``error`` itself)."""
    orig = getattr(error, "orig", None) if isinstance(error, sa.exc.DBAPIError) else None
    return orig if isinstance(orig, BaseException) else error


def fault(error: BaseException, backend: Backend | None = None, where: str = "") -> SqlanonError | None:
    """The sqlanon error for ``error`` when it is a database's error (``where``: " in stage …"),
    or None when it is not (a bug is not hidden as a database fault). Raises KeyboardInterrupt
    where the error is a Ctrl-C in disguise (Backend.fault: "interrupted")."""
    if isinstance(error, SqlanonError):
        return error
    orig = driver_error(error)
    for b in [backend] if backend is not None else [cls() for cls in dict.fromkeys(REGISTRY.values())]:
        kind = b.fault(orig)
        if kind is None:
            continue
        if kind == "interrupted":
            # a Ctrl-C inside a function the backend runs in this process: the interrupt, which
            # the run's own handling tells as such (exit 130), not the database's refusal
            raise (interrupts.take() or KeyboardInterrupt()) from error
        if kind == "refused" and isinstance(error, sa.exc.DBAPIError) and error.connection_invalidated:
            kind = "lost"
        return _error(kind, b.error_text(orig), where)
    if isinstance(error, sa.exc.DBAPIError):
        return _error("lost" if error.connection_invalidated else "refused", Backend().error_text(orig), where)
    if isinstance(error, sa.exc.SQLAlchemyError):
        # SQLAlchemy's own (a pool exhausted, a closed result): its message, without the link
        text = str(error).split("(Background on this error")[0]
        return BackendError(f"the database connection failed{where}: {Backend().error_text(text)}")
    return None


def _error(kind: str, text: str, where: str) -> SqlanonError:
    if kind == "lost":
        return ConnectionLost(f"the database connection was lost{where} ({text})")
    if kind == "locked":
        return DatabaseLocked(f"the database is locked by another connection{where} ({text}): try again when it "
                              "is free")
    return BackendError(f"the database refused a statement{where}: {text}")


@contextmanager
def translated(backend: Backend | None = None) -> Iterator[None]:
    """Raise a database's error inside as sqlanon's (ConnectionLost, DatabaseLocked,
    BackendError); anything else as it is."""
    try:
        yield
    except SqlanonError:
        raise
    except Exception as e:
        mapped = fault(e, backend)
        if mapped is None:
            raise
        raise mapped from e

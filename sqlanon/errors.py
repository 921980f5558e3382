"""One exception tree for every front-end.

Each error carries what a caller needs to act on it without parsing the message: the SQL
construct that was refused, the table and column a policy error is about, and a SQLSTATE the
proxy can put on the wire.
"""
from __future__ import annotations


class SqlanonError(Exception):
    """Base of all sqlanon errors."""

    sqlstate = "XX000"

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message


class PolicyError(SqlanonError):
    """The policy file is wrong; names the table, the column and what is wrong."""

    sqlstate = "22023"

    def __init__(self, message: str, *, table: str | None = None, column: str | None = None):
        where = ".".join(p for p in (table, column) if p)
        super().__init__(f"policy: {where}: {message}" if where else f"policy: {message}")
        self.table = table
        self.column = column


class QueryRejected(SqlanonError):
    """The query touches protected data in a way the rewriter does not fully understand."""

    sqlstate = "42501"

    def __init__(self, construct: str, detail: str = "", *, fragment: str | None = None):
        msg = f"rejected: {construct}"
        if detail:
            msg += f": {detail}"
        super().__init__(msg)
        self.construct = construct
        self.fragment = fragment


class ReleaseRefused(SqlanonError):
    """The anonymization could not meet the requirement within the policy's limits.

    Nothing is released: a release that fails its own verification never leaves the database.
    """

    sqlstate = "22000"


class SuppressionExceeded(ReleaseRefused):
    """The release meets every model but withholds or fully generalizes more rows than the
    policy's ``max_suppression`` allows: another method may still fit (plan.Plan.fallback)."""


class BackendError(SqlanonError):
    """The database or its configuration cannot serve sqlanon safely."""

    sqlstate = "58000"


class ConnectionLost(BackendError):
    """The connection to the database broke (the server closed or killed it, the network went):
    nothing was released, and the server drops the session's temp tables with the session."""

    sqlstate = "08006"


class SelectionChanged(BackendError):
    """The method counted other rows than the selection holds when verify counted it: rows
    written to the table between two reads of a selection read through a view, or a method
    that lost rows. Nothing was released; the flow reads the selection once more into a copy."""


class DatabaseLocked(BackendError):
    """Another connection holds what this run needs (a lock, a write transaction, the same
    release being stored): nothing was released; the same call may succeed later."""

    sqlstate = "55P03"


class Interrupted(KeyboardInterrupt):
    """A KeyboardInterrupt (Ctrl-C, SIGINT) that says what became of the run: what was released
    and whether its temp tables were dropped or go with the session."""

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

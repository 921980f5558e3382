"""An answer read as the database hands it over: rows fetched in batches from a cursor the run
keeps open (Backend.stream), so that the client holds one batch, never the whole answer.

The release was verified inside the database before the answer's statement ran: streaming only
changes how the verified answer is fetched, and every refusal comes before the first row. The
run — its connection, its temp tables — ends when the last row has been read, when the reader
closes the rows (leaves a ``with`` block, breaks out of a loop and drops them), or when reading
fails; its temp tables are then dropped as after any run.
"""
from __future__ import annotations

import logging
from collections import deque
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Callable, Iterator

from sqlanon.backends.base import Backend
from sqlanon.backends.faults import fault
from sqlanon.errors import BackendError
from sqlanon.finish.report import Report

log = logging.getLogger("sqlanon.stream")

#: rows fetched from the database at a time unless the reader asks for another size
BATCH = 1000

Row = tuple[Any, ...]


class Rows:
    """The rows of an answer, read once, in batches: iterate, or ``fetchmany(n)``."""

    def __init__(self, cursor: Any, backend: Backend | None = None, size: int = BATCH,
                 abandon: Callable[[], None] | None = None, start: Callable[[], Any] | None = None):
        self.size = size
        #: rows handed to the reader so far
        self.count = 0
        self.closed = False
        #: told once, when the rows are closed: the rows handed over, and whether that was all
        self.on_close: Callable[[int, bool], None] | None = None
        self._cursor = cursor
        self._backend = backend
        self._buffer: deque[Row] = deque()
        self._run: ExitStack | None = None
        #: runs the answer's statement and returns its cursor (``begin``)
        self._start = start
        self._done = cursor is None and start is None
        #: told when the rows are closed before the last: the run stops the answer its own way
        self._abandon = abandon

    @classmethod
    def of(cls, rows: list[Row]) -> "Rows":
        """Rows already read (a differentially private answer's few)."""
        out = cls(None)
        out._buffer.extend(rows)
        return out

    def begin(self) -> list[str]:
        """Run the answer's statement; the names of its columns."""
        if self._start is not None:
            self._cursor, self._start = self._start(), None
            self._done = self._cursor is None  # a static explain sends nothing
        description = getattr(self._cursor, "description", None)
        return [d[0] for d in description] if description else []

    def hold(self, run: ExitStack) -> None:
        """Take over the run the rows come from (its connection, its temp tables): it ends when
        the rows are closed, or now when they are all read already."""
        self._run = run
        if self._done:
            self._end(None)

    def __iter__(self) -> Iterator[Row]:
        return self

    def __next__(self) -> Row:
        if not self._buffer and not self._fill(self.size):
            raise StopIteration
        self.count += 1
        return self._buffer.popleft()

    def fetchone(self) -> Row | None:
        return next(self, None)

    def fetchmany(self, size: int | None = None) -> list[Row]:
        """The next ``size`` rows (default: the batch size); fewer at the end, none after it."""
        n = self.size if size is None else size
        out: list[Row] = []
        while len(out) < n and (self._buffer or self._fill(n - len(out))):
            take = min(n - len(out), len(self._buffer))
            out.extend(self._buffer.popleft() for _ in range(take))
        self.count += len(out)
        return out

    def _fill(self, wanted: int) -> bool:
        """Fetch the next batch from the database; False, and the run ended, after the last."""
        if self._done:
            self.close()
            return False
        if self.closed:
            raise BackendError("the answer was closed before its last row was read")
        try:
            batch = self._cursor.fetchmany(max(wanted, self.size))
        except BaseException as e:
            self._end(e)
            mapped = fault(e, self._backend, " while reading the answer") if isinstance(e, Exception) else None
            if mapped is not None:
                raise mapped from e
            raise
        if not batch:
            self._done = True
            self.close()
            return False
        self._buffer.extend(batch if isinstance(batch[0], tuple) else map(tuple, batch))
        return True

    def close(self) -> None:
        """End the run: the database stops the answer where it can (MariaDB sends the rest,
        which is read and dropped), the temp tables are dropped, the connection goes back."""
        if self.closed:
            return
        self.closed = True
        self._buffer.clear()
        try:
            self._end(None)
        finally:
            if self.on_close is not None:
                self.on_close(self.count, self._done)

    def _end(self, error: BaseException | None) -> None:
        run, self._run = self._run, None
        if run is None:
            return
        if error is None:
            try:
                if not self._done and self._abandon is not None:
                    self._abandon()
            finally:
                run.close()
            return
        try:
            run.__exit__(type(error), error, error.__traceback__)
        except KeyboardInterrupt:
            # the run tells an interrupt as "nothing was released": rows were, and the
            # interrupt itself goes on to the reader
            pass

    def __enter__(self) -> "Rows":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def __del__(self) -> None:
        # a reader that broke out of a loop and dropped the rows: the run still ends
        if not self.closed and self._run is not None:
            try:
                self.close()
            except Exception as e:  # noqa: BLE001 - nobody is left to tell
                log.warning("sqlanon: ending an answer nobody closed: %s", e)


@dataclass
class Streamed:
    """An answer whose rows are read as they arrive (``Session.stream``): the same shape as a
    Result, but ``rows`` is read once, and ends the run when read or closed."""

    columns: list[str]
    rows: Rows
    report: Report

    def __iter__(self) -> Iterator[Row]:
        return self.rows

    def fetchmany(self, size: int | None = None) -> list[Row]:
        return self.rows.fetchmany(size)

    def fetchone(self) -> Row | None:
        return self.rows.fetchone()

    def close(self) -> None:
        self.rows.close()

    def __enter__(self) -> "Streamed":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

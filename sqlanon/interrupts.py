"""Ctrl-C (and the CLI's SIGTERM) that a database running inside this process swallowed.

SQLite runs sqlanon's own functions (FLOOR, MD5, the statistics aggregates) in this process. A
signal handled while one of them runs raises inside it, and sqlite3 turns the exception into the
statement's error "user-defined function raised exception", which would be told as a refusal
(exit 2) and not as the interrupt it was (exit 130). So the interrupt is noted here: by the
functions' guard, and by the CLI's signal handlers, which also see a signal handled on the
function's very first instruction, before the guard's ``try`` begins. The backend's fault
mapping takes the note back (Backend.fault: "interrupted").

A stored release's commit is the other place where a signal must not land unseen: held from
just before the commit (``hold``) until the run has ended (``release``), a signal is delivered
once the run knows, and can tell, that the release exists.
"""
from __future__ import annotations

import functools
import signal
import threading
from typing import Any, Callable, TypeVar


class _Noted(threading.local):
    # per thread: a signal is handled in the main thread, and a statement's error reaches the
    # fault mapping in the thread that ran it
    error: KeyboardInterrupt | None = None


_noted = _Noted()
F = TypeVar("F", bound=Callable[..., Any])


def note(error: KeyboardInterrupt) -> None:
    _noted.error = error


def noted() -> bool:
    return _noted.error is not None


def take() -> KeyboardInterrupt | None:
    """The interrupt noted since the last take, or None (the note is cleared)."""
    error, _noted.error = _noted.error, None
    return error


def guarded(fn: F) -> F:
    """``fn`` noting a KeyboardInterrupt raised inside it before it goes on."""
    @functools.wraps(fn)
    def call(*args: Any) -> Any:
        try:
            return fn(*args)
        except KeyboardInterrupt as e:
            note(e)
            raise
    return call  # type: ignore[return-value]


def raising(kind: type[KeyboardInterrupt]) -> Callable[[int, Any], None]:
    """A signal handler that raises ``kind`` where the program is, as Python's own handler of
    SIGINT does, and notes it first."""
    def handler(_signum: int, _frame: Any) -> None:
        error = kind()
        note(error)
        raise error
    return handler


#: the signals a hold keeps back: Ctrl-C, and SIGTERM (which the CLI turns into a clean-up)
_HELD = (signal.SIGINT, signal.SIGTERM)


class _Hold:
    def __init__(self) -> None:
        self.previous: dict[int, Any] = {}
        self.caught: list[int] = []

    def catch(self, signum: int, _frame: Any) -> None:
        self.caught.append(signum)


_hold: _Hold | None = None


def hold() -> bool:
    """Keep SIGINT and SIGTERM back until ``release`` (in the main thread, where Python handles
    signals; elsewhere no signal lands anyway): whether this call began a hold."""
    global _hold
    if _hold is not None or threading.current_thread() is not threading.main_thread():
        return False
    h = _Hold()
    for s in _HELD:
        previous = signal.getsignal(s)
        if previous is not None:  # (None: a handler not installed from Python, left alone)
            h.previous[s] = previous
            signal.signal(s, h.catch)
    _hold = h
    return True


def release() -> None:
    """End the hold; a signal that came meanwhile is delivered now, to the handler it would
    have met (raising here, as Ctrl-C raises where the program is)."""
    global _hold
    h, _hold = _hold, None
    if h is None:
        return
    for s, previous in h.previous.items():
        signal.signal(s, previous)
    if h.caught:
        signal.raise_signal(h.caught[0])

"""The audit trail: every statement a front-end receives, who sent it and what became of it.

Events go to sinks: structured log lines (logger ``sqlanon.audit``, one JSON object per line)
always, and the catalog's audit table where a catalog exists. A sink that fails never hides the
answer from the caller, but it is logged.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Callable

LOG = logging.getLogger("sqlanon.audit")

#: what became of a statement
DECISIONS = ("passed", "anonymized", "rejected", "refused", "error")


@dataclass(frozen=True)
class AuditEvent:
    #: who sent it: the proxy's client name, or the front-end's caller ("library", "cli")
    client: str
    #: library, cli, proxy-postgresql, proxy-mysql
    front_end: str
    sql: str
    decision: str
    table: str | None = None
    method: str | None = None
    #: for a rejection: the construct the rewriter named
    construct: str | None = None
    message: str | None = None
    seconds: float | None = None
    rows: int | None = None
    at: float = field(default_factory=time.time)

    def to_json(self) -> str:
        # vars(), not asdict(): the fields are flat, and asdict's deep copy was most of the cost
        # of auditing a relayed statement (63 of 155 µs)
        return json.dumps(vars(self), default=str, sort_keys=True)


Sink = Callable[[AuditEvent], None]


def log_sink(event: AuditEvent) -> None:
    LOG.info(event.to_json())


class Audit:
    def __init__(self, sinks: list[Sink] | None = None):
        self.sinks: list[Sink] = [log_sink] if sinks is None else list(sinks)

    def record(self, event: AuditEvent, *, failing: bool = False) -> None:
        """``failing``: the event is of an error on its way out to the caller, who tells it; a
        sink that fails then (the same lost connection, the same lock) is logged below warnings."""
        for sink in self.sinks:
            try:
                sink(event)
            except Exception as e:  # noqa: BLE001 - the answer must not depend on the audit sink
                from sqlanon.backends.faults import fault

                cause = fault(e)
                LOG.log(logging.INFO if failing else logging.WARNING, "the audit log missed an event (%s): %s",
                        event.decision, cause.message if cause is not None else f"{type(e).__name__}: {e}")
                LOG.debug("audit sink %r failed", sink, exc_info=True)

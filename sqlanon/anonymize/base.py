"""The method protocol: how a release is produced inside the database.

A method never grades itself: ``verify/`` measures its output. It declares which requirements it
can meet, may ask the pushdown for extra columns, and leaves a released temp table behind.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Protocol

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.pushdown.fragment import Fragment


@dataclass
class Release:
    """A released temp table: only the fragment's columns, generalized; stored in any order
    (the finish stage orders every result randomly)."""

    table: str
    columns: tuple[str, ...]
    #: per quasi-identifier: generalization level → rows released at that level
    levels: dict[str, dict[int, int]] = field(default_factory=dict)
    #: quasi-identifiers released as their group's mean (microaggregation), not as labels
    aggregated: tuple[str, ...] = ()
    #: slicing's column groups, and the released table's column that holds each row's bucket
    #: (verification reads it; the query never sees it)
    slices: tuple[tuple[str, ...], ...] = ()
    bucket: str | None = None
    #: the selection's frequency table when the method counted one (anonymize/frequency.py:
    #: raw_<i> per quasi-identifier, n per cell); verification reads the selection's
    #: distribution from it instead of grouping the rows again, after checking its total
    counts: str | None = None
    notes: list[str] = field(default_factory=list)


class Method(Protocol):
    name: ClassVar[str]
    #: criteria the method is built to satisfy (verify/ checks them all the same)
    guarantees: ClassVar[tuple[str, ...]]
    #: the method may withhold selected rows: the selection's size is then no count of the
    #: release, and answers report it only with noise (verify/noise.py)
    suppresses: ClassVar[bool]

    def pushdown_columns(self, frag: Fragment, ctx: RunContext) -> list[exp.Expression]:
        """Extra columns computed in the pushdown's single pass over the base table."""

    def run(self, frag: Fragment, src: str, ctx: RunContext) -> Release:
        """Build the released temp table from the pushed-down rows in ``src``."""


def reads_rows_once(method: Method, frag: Fragment, ctx: RunContext) -> bool:
    """Whether ``method`` reads the pushed-down rows in one statement alone, so that they need
    not be copied (Backend.selection_view): a method says so with a ``reads_rows_once(frag,
    ctx)`` of its own; one without it reads them as often as it likes."""
    once = getattr(method, "reads_rows_once", None)
    return bool(once(frag, ctx)) if once is not None else False

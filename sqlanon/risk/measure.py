"""The risk of a stored table (raw or a release) or of a query's released rows."""
from __future__ import annotations

from typing import Any, Sequence

from sqlanon.backends.connect import Database
from sqlanon.errors import PolicyError
from sqlanon.policy.model import Policy
from sqlanon.risk.classes import SUPPRESSED, class_sizes, class_sizes_of_rows, population_class_sizes
from sqlanon.risk.report import RiskReport, assess
from sqlanon.risk.sample import JournalistRisks, journalist_risks


def table_risk(db: Database, name: str, qis: Sequence[str], *, release_of: str | None = None,
               population: int | str | None = None, threshold: float | None = None,
               population_table: str | None = None) -> RiskReport:
    """Risk of table ``name`` over ``qis``, read as the pipeline's identity. ``release_of``: the
    table is a release of that protected table; its suppressed records (every quasi-identifier
    '*') are left out, as ARX leaves them out. ``population_table``: a table of the same
    database that ``name`` is a sample of, with the same columns: the journalist's classes are
    counted there (and the population's size is its rows unless ``population`` says)."""
    histogram = class_sizes(db, name, qis, skip_suppressed=release_of is not None)
    journalist: JournalistRisks | None = None
    if population_table is not None:
        pairs, rows = population_class_sizes(db, name, population_table, qis, skip_suppressed=release_of is not None)
        try:
            journalist = journalist_risks(db.spelling.get(population_table.lower(), population_table), rows, pairs,
                                          threshold)
        except ValueError as e:
            raise PolicyError(str(e)) from None
        population = rows if population is None else population
    suppressed = None
    subject = f"table {name}"
    if release_of is not None:
        subject = f"release {name} (of {release_of})"
        total = class_sizes(db, name, qis)
        suppressed = _records(total) - _records(histogram)
    return _assess(subject, qis, histogram, population, threshold, suppressed, journalist=journalist)


def rows_risk(subject: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], qis: Sequence[str], *,
              population: int | str | None = None, threshold: float | None = None) -> RiskReport:
    """Risk of rows already released (a query's anonymized answer) over those of ``qis`` the
    answer has as columns."""
    lowered = [c.lower() for c in columns]
    present = [q for q in qis if q.lower() in lowered]
    if not present:
        raise PolicyError("the answer has none of the quasi-identifiers as a column: nothing to link it by")
    positions = [lowered.index(q.lower()) for q in present]
    histogram = class_sizes_of_rows(rows, positions, skip_suppressed=True)
    suppressed = len(rows) - _records(histogram)
    notes = () if len(present) == len(qis) else (
        f"the answer leaves out {', '.join(q for q in qis if q not in present)}: classes over the rest",)
    return _assess(subject, present, histogram, population, threshold, suppressed, notes)


def _records(histogram: dict[int, int]) -> int:
    return sum(size * n for size, n in histogram.items())


def _assess(subject: str, qis: Sequence[str], histogram: dict[int, int], population: int | str | None,
            threshold: float | None, suppressed: int | None, notes: tuple[str, ...] = (),
            journalist: JournalistRisks | None = None) -> RiskReport:
    if suppressed:
        notes = (*notes, f"records whose quasi-identifiers are all '{SUPPRESSED}' are left out (suppressed)")
    try:
        return assess(subject, tuple(qis), histogram, population=population, threshold=threshold,
                      suppressed=suppressed, notes=notes, journalist=journalist)
    except ValueError as e:
        raise PolicyError(str(e)) from None


def policy_quasi_identifiers(policy: Policy, name: str, release_of: str | None = None) -> tuple[list[str], str | None]:
    """The quasi-identifiers ``name`` is measured over, from the policy's entry for it — or for
    ``release_of``, the protected table it is a release of (the policy's only table where it
    names one and not ``name``). Returns them and the protected table when ``name`` is a release."""
    tp = policy.for_table(release_of or name)
    if tp is None and release_of is None and len(policy.tables) == 1:
        tp = next(iter(policy.tables.values()))
    if tp is None:
        raise PolicyError(f"the policy names no table {release_of or name!r}: say which protected table "
                          f"{name} is a release of")
    source = None if tp.table.lower() == name.lower() else tp.table
    return [q.column for q in tp.quasi_identifiers], source

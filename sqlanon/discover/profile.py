"""What ``discover`` reads from the database: aggregates only.

- ``profile``: one pass over the table — rows, and per column its distinct values (NULL counted
  as one), whether it holds NULL, and for numbers the range (min and max, for interval stubs),
  for text the shortest and longest length (fixed-length codes);
- ``Combinations``: the classes and sample uniques of a combination (``discover/combination``),
  on a random sample of the rows first where the table is large, then on the whole table;
- ``patterns``: how many of a random sample of a text column's values look like an e-mail
  address, a phone number, a national identification number (US SSN) or a person's name —
  counted in the database with LIKE over the value and its shape (every digit as '9').
"""
from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sqlalchemy.pool import SingletonThreadPool, StaticPool
from sqlglot import exp

from sqlanon.backends.connect import Column
from sqlanon.discover.lattice import Combination, Measure, needed
from sqlanon.sql.reading import Reading
from sqlanon.sql.templates import col, lit, render


@dataclass(frozen=True)
class ColumnProfile:
    name: str
    family: str
    distinct: int
    nulls: bool
    low: Any = None
    high: Any = None
    #: text: shortest and longest value
    shortest: int | None = None
    longest: int | None = None


def profile(r: Reading, source: str, columns: list[Column]) -> tuple[int, dict[str, ColumnProfile]]:
    measures: list[exp.Expression] = []
    for c in columns:
        key = r.key(c.name, c.family)
        measures.append(exp.Count(this=exp.Distinct(expressions=[key])))
        measures.append(exp.Max(this=exp.Case(ifs=[exp.If(this=exp.Is(this=col(c.name), expression=exp.Null()),
                                                          true=lit(1))], default=lit(0))))
        if c.family == "numeric":
            measures += [exp.Min(this=col(c.name)), exp.Max(this=col(c.name))]
        elif c.family == "text":
            measures += [exp.Min(this=exp.Length(this=col(c.name))), exp.Max(this=exp.Length(this=col(c.name)))]
    row = r.one(render("discover/columns", rows=source, measures=measures))
    rows, at, out = int(row[0]), 1, {}
    for c in columns:
        distinct, nulls = int(row[at] or 0), bool(row[at + 1])
        at += 2
        low = high = shortest = longest = None
        if c.family == "numeric":
            low, high = row[at], row[at + 1]
            at += 2
        elif c.family == "text":
            shortest, longest = (int(v) if v is not None else None for v in row[at:at + 2])
            at += 2
        out[c.name] = ColumnProfile(c.name, c.family, distinct + int(nulls), nulls, low, high, shortest, longest)
    return rows, out


class Combinations:
    """Measures combinations: on the sample first (when there is one), where a combination that
    does not qualify there is taken not to qualify — a random sample singles out, in
    expectation, at least the share of rows the whole table does, and a margin of three
    standard deviations is allowed — then exactly on the whole table.

    The exact measurements of one level (``prefetch``) go to the database ``workers`` at a time,
    each on a connection of its own: every one is a GROUP BY of up to a row per group, which
    one statement computes on one core of the server (measured: 1.3-1.75 times as fast with
    two on a loaded 2-core machine). The sample is a temp table of the main connection, so
    the sample's statements stay on it."""

    def __init__(self, r: Reading, source: str, families: dict[str, str], rows: int, threshold: float,
                 sample: str | None = None, sample_rows: int = 0, workers: int = 1):
        self.r, self.source, self.families = r, source, families
        self.rows, self.threshold = rows, threshold
        self.sample, self.sample_rows = sample, sample_rows
        # connections that are one and the same (SQLite in memory) cannot measure side by side
        self.workers = 1 if isinstance(r.db.engine.pool, (SingletonThreadPool, StaticPool)) else max(1, workers)
        #: statements run on the sample and on the whole table
        self.on_sample = self.on_table = 0
        #: measures taken ahead by ``prefetch``, handed out by ``__call__``
        self._ready: dict[Combination, Measure] = {}

    def exact(self, cols: Combination) -> Measure:
        self.on_table += 1
        return Measure(*self._measure(self.r, self.source, cols), exact=True, rows=self.rows)

    def __call__(self, cols: Combination) -> Measure:
        if cols in self._ready:
            return self._ready.pop(cols)
        on_sample = self._on_sample(cols)
        return on_sample if on_sample is not None else self.exact(cols)

    def prefetch(self, level: list[Combination]) -> None:
        """Measure a level's candidates ahead: on the sample one after the other, then those the
        sample does not rule out on the whole table, ``workers`` statements at a time."""
        todo = []
        for cols in level:
            on_sample = self._on_sample(cols)
            if on_sample is not None:
                self._ready[cols] = on_sample
            else:
                todo.append(cols)
        if self.workers < 2 or len(todo) < 2:
            self._ready.update((cols, self.exact(cols)) for cols in todo)
            return
        shares = [todo[i::self.workers] for i in range(min(self.workers, len(todo)))]
        with ThreadPoolExecutor(len(shares)) as pool:
            for found in pool.map(self._exact_on_own_connection, shares):
                self._ready.update(found)
        self.on_table += len(todo)

    def _exact_on_own_connection(self, share: list[Combination]) -> dict[Combination, Measure]:
        with Reading(self.r.db) as own:
            found = {cols: Measure(*self._measure(own, self.source, cols), exact=True, rows=self.rows)
                     for cols in share}
            self.r.add(own)
        return found

    def _on_sample(self, cols: Combination) -> Measure | None:
        """The measure on the sample where it rules the combination out; None: measure it exactly."""
        if self.sample is None or not self.sample_rows:
            return None
        self.on_sample += 1
        classes, uniques = self._measure(self.r, self.sample, cols)
        t = self.threshold
        margin = 0 if t >= 1 else 3 * math.sqrt(t * (1 - t) / self.sample_rows) * self.sample_rows
        if uniques < needed(self.sample_rows, t) - margin:
            return Measure(classes, uniques, exact=False, rows=self.sample_rows)
        return None

    def _measure(self, r: Reading, source: str, cols: Combination) -> tuple[int, int]:
        keys = [r.key(c, self.families[c]) for c in cols]
        classes, uniques = r.one(render("discover/combination", rows=source, columns=keys))
        return int(classes or 0), int(uniques or 0)


def take_sample(r: Reading, source: str, columns: list[str], size: int) -> str:
    """A temp table with ``size`` rows of ``source`` drawn at random, inside the database."""
    return r.temp_table(render("discover/sample", rows=source, columns=columns, size=lit(size)), "discover")


# -- identifier patterns ------------------------------------------------------------------------
def _s(text: str) -> exp.Literal:
    return exp.Literal.string(text)


def _replace(e: exp.Expr, old: str, new: str) -> exp.Expr:
    return exp.func("REPLACE", e, _s(old), _s(new))


def _like(e: exp.Expr, pattern: str) -> exp.Expr:
    return exp.Like(this=e.copy(), expression=_s(pattern))


def _shape(v: exp.Expr) -> exp.Expr:
    """The value with every digit written as '9'."""
    for d in "012345678":
        v = _replace(v, d, "9")
    return v


def pattern_conditions(v: exp.Expr) -> dict[str, exp.Expr]:
    """Conditions over a sampled value ``v`` (text, compared byte for byte)."""
    shape = _shape(v.copy())
    digits_only = shape
    for sep in " -()+./":
        digits_only = _replace(digits_only, sep, "")
    first = exp.Substring(this=v.copy(), start=lit(1), length=lit(1))
    return {
        "email": exp.and_(_like(v, "%_@_%._%"), exp.not_(_like(v, "% %"))),
        "phone": exp.and_(_like(digits_only, "9999999%"), exp.LTE(this=exp.Length(this=digits_only.copy()), expression=lit(15)),
                          exp.EQ(this=_replace(digits_only.copy(), "9", ""), expression=_s(""))),
        "national_id": exp.or_(_like(shape, "999-99-9999"), _like(shape, "999 99 9999")),
        "name": exp.and_(exp.not_(_like(shape, "%9%")), _like(v, "_% _%"), exp.not_(_like(v, "%@%")),
                         exp.LTE(this=exp.Length(this=v.copy()), expression=lit(60)),
                         exp.EQ(this=first.copy(), expression=exp.Upper(this=first.copy())),
                         exp.NEQ(this=first.copy(), expression=exp.Lower(this=first.copy()))),
        "code": exp.and_(exp.not_(_like(v, "% %")), exp.GTE(this=exp.Length(this=v.copy()), expression=lit(2))),
    }


def patterns(r: Reading, source: str, column: str, size: int) -> tuple[int, dict[str, int]]:
    """(values sampled, {pattern: values matching}) for a text column."""
    value = r.key(column, "text")
    conditions = pattern_conditions(exp.column("v"))
    matches = [exp.alias_(exp.Sum(this=exp.Case(ifs=[exp.If(this=c, true=lit(1))], default=lit(0))), name)
               for name, c in conditions.items()]
    row = r.one(render("discover/patterns", rows=source, value=value, matches=matches, size=lit(size)))
    return int(row[0] or 0), {name: int(v or 0) for name, v in zip(conditions, row[1:])}

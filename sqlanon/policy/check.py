"""Check a policy against the database it protects, before any query runs.

Every named table and column must exist, hierarchies must fit the column's type, and a
taxonomy must cover every value the column holds. Errors name the table, the column and what
is wrong; this runs at connect time, on the administrator's side.
"""
from __future__ import annotations

from sqlglot import exp

from sqlanon.backends.connect import Database
from sqlanon.errors import PolicyError
from sqlanon.hierarchy import DateHierarchy, IntervalHierarchy, TaxonomyHierarchy
from sqlanon.policy.model import Policy
from sqlanon.sql.templates import col, table

RESERVED_PREFIX = "_sa_"


def check_against_database(policy: Policy, db: Database) -> None:
    for tp in policy.tables.values():
        if tp.table.lower() not in db.tables:
            raise PolicyError("no such table in the database", table=tp.table)
        cols = db.columns(tp.table)
        for name in tp.known_columns:
            if name not in cols:
                raise PolicyError("no such column in the table", table=tp.table, column=name)
            if name.startswith(RESERVED_PREFIX):
                raise PolicyError(f"column names starting with {RESERVED_PREFIX} are reserved",
                                  table=tp.table, column=name)
        for q in tp.quasi_identifiers:
            family = cols[q.column].family
            h = q.hierarchy
            if isinstance(h, IntervalHierarchy) and family != "numeric":
                raise PolicyError(f"interval hierarchy needs a numeric column, found {cols[q.column].type}",
                                  table=tp.table, column=q.column)
            if isinstance(h, DateHierarchy) and family not in ("date", "text"):
                raise PolicyError(f"date hierarchy needs a date column, found {cols[q.column].type}",
                                  table=tp.table, column=q.column)
        taxonomies = [(q.column, q.hierarchy) for q in tp.quasi_identifiers
                      if isinstance(q.hierarchy, TaxonomyHierarchy)]
        if taxonomies:
            _check_coverage(db, db.spelling.get(tp.table.lower(), tp.table), taxonomies)


def _uncovered(column: str, h: TaxonomyHierarchy) -> exp.Expression:
    text = exp.cast(col(column), "TEXT")
    return exp.and_(exp.Not(this=exp.Is(this=col(column), expression=exp.Null())),
                    exp.Not(this=exp.In(this=text, expressions=[exp.Literal.string(v) for v in h.leaves])))


def _check_coverage(db: Database, table_name: str, taxonomies: list[tuple[str, TaxonomyHierarchy]]) -> None:
    """One scan of the table finds whether any taxonomy misses a value (a large table is read
    once at connect, not once per column); only then is each column asked which values."""
    raw = db.raw_connection()
    try:
        cur = raw.cursor()

        def rows(query: exp.Expression) -> list[tuple]:
            cur.execute(db.backend.render(query))
            return cur.fetchall()

        if not rows(exp.select(exp.Literal.number(1)).from_(table(table_name))
                    .where(exp.or_(*[_uncovered(c, h) for c, h in taxonomies])).limit(1)):
            return
        for column, h in taxonomies:
            missing = [r[0] for r in rows(exp.select(exp.cast(col(column), "TEXT")).distinct()
                                          .from_(table(table_name)).where(_uncovered(column, h)).limit(5))]
            if missing:
                raise PolicyError(f"taxonomy {h.source} does not cover the values {missing}",
                                  table=table_name, column=column)
    finally:
        raw.close()

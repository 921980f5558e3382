"""The query classes of John's thesis (§4) that its decision algorithm (§5, Figure 23) reads.

- simple or complex: complex when the query groups, aggregates or joins;
- column- or row-oriented: row-oriented queries select whole rows that meet a criterion,
  column-oriented ones refer to single columns: aggregates (mostly column-based, §4), or a
  projection of fewer than half of the columns the policy releases; a join (within the
  database) matches whole rows: row-oriented (Figure 23 sends joins to the row methods);
- the number of rows the query selects: the pushed-down COUNT(*) of its WHERE clause.
"""
from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from sqlanon.analyze import Analysis
from sqlanon.analyze.linked import origin

#: a projection of fewer than this share of the releasable columns is column-oriented
COLUMN_SHARE = 0.5


@dataclass(frozen=True)
class Classification:
    complex: bool
    column_oriented: bool
    #: rows the WHERE clause selects; None when no rule needed them, or in a static explain
    rows: int | None
    why: str
    #: joined with unprotected tables (a join needs whole rows: row methods only)
    joined: bool = False
    #: the query groups or aggregates (what differential privacy answers, ``privacy.epsilon``)
    aggregating: bool = False

    def __str__(self) -> str:
        shape = f"{'complex' if self.complex else 'simple'}, {'column' if self.column_oriented else 'row'}-oriented"
        if self.joined:
            shape += ", joined within the database"
        rows = "rows not counted" if self.rows is None else f"about {self.rows} row(s) selected (counted with noise)"
        return f"{shape} ({self.why}); {rows}"


def count_statement(analysis: Analysis) -> exp.Select:
    """The pushed-down COUNT(*) of the query's selection."""
    count = origin(analysis.table, analysis.alias, analysis.link).select(exp.Count(this=exp.Star()))
    return count.where(analysis.where.copy()) if analysis.where is not None else count


def classify(analysis: Analysis, rows: int | None) -> Classification:
    tree = analysis.tree
    assert analysis.policy is not None
    grouped = tree.args.get("group") is not None or tree.args.get("having") is not None
    aggregates = any(isinstance(e, exp.AggFunc) for s in tree.expressions for e in s.find_all(exp.AggFunc))
    releasable = analysis.policy.releasable
    selected = {c.name for s in tree.expressions for c in s.find_all(exp.Column)}
    share = len(selected & set(releasable)) / max(len(releasable), 1)
    if grouped or aggregates:
        why = "groups or aggregates"
        column = True
    elif share < COLUMN_SHARE:
        why = f"projects {len(selected & set(releasable))} of {len(releasable)} released columns"
        column = True
    else:
        why = f"selects {len(selected & set(releasable))} of {len(releasable)} released columns"
        column = False
    joined = analysis.joined or analysis.link is not None
    if joined:
        column, why = False, "a join matches whole rows"
    elif analysis.policy.person is not None:
        column, why = False, f"a person's rows are counted together (person: {analysis.policy.person})"
    return Classification(complex=grouped or aggregates or joined, column_oriented=column, rows=rows,
                          why=why, joined=joined, aggregating=grouped or aggregates)

"""Joins of the protected table with unprotected tables, and which of their conditions the
pushdown may run on the stored rows.

Every join runs after anonymization, on the released rows: what it returns is computed from the
release and the other tables only. Suppressed rows are not in the release, so an outer join
cannot bring them back, not even as NULL-extended rows; a row the release does not hold looks
exactly like a row the table never had. What needs care is the selection: a condition over the
protected table alone is pushed down (run on the stored values, before anonymization) only where
that is the same as filtering after the join:

- a WHERE conjunct, when no join NULL-extends the protected table (it is the preserved side of
  every outer join): it removes the same rows before the join as after it;
- an ON conjunct of the outer join that NULL-extends the protected table (``d LEFT JOIN p ON …``,
  or ``p RIGHT JOIN d ON …`` with ``p`` first): it decides which of the table's rows can match,
  which is filtering that table alone.

Every other condition stays where the query wrote it and runs on the released values: a WHERE
over a NULL-extended table sees the NULL-extended rows (``WHERE p.zip IS NULL`` finds the rows
of ``d`` without a released match), and an ON condition over the preserved side decides matches,
not which rows exist. A join on a generalized quasi-identifier matches the released labels.
"""
from __future__ import annotations

from sqlglot import exp

from sqlanon.backends.base import Backend
from sqlanon.errors import QueryRejected
from sqlanon.policy.model import TablePolicy


def check_joins(tree: exp.Select, tp: TablePolicy, backend: Backend) -> None:
    """Inner, cross and outer joins written one after the other, each on its own ON condition."""
    for j in tree.find_all(exp.Join):
        if j.parent is not tree:
            raise QueryRejected("nested join", f"with protected table {tp.table}: write the joins one after the other",
                                fragment=j.parent.sql() if j.parent is not None else j.sql())
    for j in tree.args.get("joins") or []:
        side, kind = (j.side or "").upper(), (j.kind or "").upper()
        if j.method:
            raise QueryRejected(f"{j.method.upper()} join", f"with protected table {tp.table}: name the columns in ON",
                                fragment=j.sql())
        if j.args.get("using"):
            raise QueryRejected("JOIN … USING", f"with protected table {tp.table}: name the columns in ON",
                                fragment=j.sql())
        if kind not in ("", "INNER", "CROSS", "OUTER") or (kind == "OUTER" and not side):
            raise QueryRejected(kind if kind.endswith("JOIN") else f"{kind} join",
                                f"with protected table {tp.table}: inner, cross and outer joins only", fragment=j.sql())
        extra = [k for k in ("global_", "hint", "match_condition", "nearest", "directed", "expressions", "pivots")
                 if j.args.get(k)]
        if extra:
            raise QueryRejected(f"join {extra[0].rstrip('_').upper()}", f"with protected table {tp.table}",
                                fragment=j.sql())
        if side == "FULL" and not backend.full_outer_join:
            raise QueryRejected("FULL OUTER join", f"{backend.product} has no FULL OUTER JOIN", fragment=j.sql())


def null_extended(tree: exp.Select, alias: str) -> bool:
    """Whether an outer join can fill the columns of table ``alias`` with NULL: it is the right
    side of a LEFT join, either side of a FULL join, or on the left of a RIGHT join."""
    from_ = tree.args.get("from_")
    seen = from_ is not None and from_.this.alias_or_name == alias
    for j in tree.args.get("joins") or []:
        side = (j.side or "").upper()
        if seen and side in ("RIGHT", "FULL"):
            return True
        if j.this.alias_or_name == alias:
            if side in ("LEFT", "FULL"):
                return True
            seen = True
    return False


def extending_join(tree: exp.Select, alias: str) -> exp.Join | None:
    """The outer join that NULL-extends table ``alias`` and nothing else on that side, if any:
    ``… LEFT JOIN alias ON …``, or ``alias RIGHT JOIN … ON …`` as the first join."""
    joins = tree.args.get("joins") or []
    from_ = tree.args.get("from_")
    for i, j in enumerate(joins):
        side = (j.side or "").upper()
        if side == "LEFT" and j.this.alias_or_name == alias:
            return j
        if side == "RIGHT" and i == 0 and from_ is not None and from_.this.alias_or_name == alias:
            return j
    return None


def conjuncts(condition: exp.Expression | None) -> list[exp.Expression]:
    if condition is None:
        return []
    return list(condition.flatten()) if isinstance(condition, exp.And) else [condition]

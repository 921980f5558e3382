"""One order of the quasi-identifiers that stands for nearness, for methods that take rows
"near each other" by sorting once (SABRE's approximate neighbours, slicing's buckets)."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, render, table


def qi_order(frag: Fragment, freq: str, ctx: RunContext) -> tuple[list[exp.Expression], dict[int, str], int]:
    """The sort key over ``src AS s``, the tables to join for it, and the number of rows, read
    from the selection's frequency table ``freq`` (its stored quasi-identifier values in
    ``r_<i>``, in the order of ``frag.qis``, and their rows in ``cnt``): a pass over the
    distinct combinations, not over the rows.

    Attributes with fewer distinct values come first (a run of the order then keeps them
    constant longest); text sorts byte for byte; a taxonomy sorts by the number of its value
    along the ancestor paths, so that siblings are neighbours: one small table per taxonomy,
    to be LEFT JOINed as ``c<i>`` on ``c<i>.x = s.<column>``."""
    be = ctx.backend
    stats = ctx.query(exp.select(exp.Sum(this=col("cnt")), *[
        exp.Count(this=exp.Distinct(expressions=[col(f"r_{i}")])) for i in range(len(frag.qis))]).from_(table(freq)))
    n = int(stats[0][0] or 0) if stats else 0
    distinct = [int(c) for c in stats[0][1:]] if stats else [0] * len(frag.qis)
    key: list[exp.Expression] = []
    codes: dict[int, str] = {}
    for i in sorted(range(len(frag.qis)), key=lambda i: (distinct[i], i)):
        q = frag.qis[i]
        if isinstance(q.hierarchy, TaxonomyHierarchy):
            path = [be.binary_text(q.hierarchy.expr(col("x"), lv)) for lv in range(q.hierarchy.height - 1, 0, -1)]
            raw = be.binary_text(col("x")) if q.column in frag.text_columns else col("x")
            codes[i] = ctx.create_temp(f"ocodes_{i}", render(
                "anonymize/order_codes", path=path + [raw], x=col(f"r_{i}"), src=freq))
            key.append(col("code", f"c{i}"))
        else:
            x = col(q.column, "s")
            key.append(be.binary_text(x) if q.column in frag.text_columns else x)
    return key, codes, n


def join_codes(select: exp.Select, frag: Fragment, codes: dict[int, str]) -> exp.Select:
    """``select`` (over ``src AS s``) with the order's code tables joined."""
    for i, code in codes.items():
        select = select.join(table(code, f"c{i}"), join_type="left", on=exp.EQ(
            this=col("x", f"c{i}"), expression=col(frag.qis[i].column, "s")))
    return select

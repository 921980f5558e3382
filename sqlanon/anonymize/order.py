"""One order of the quasi-identifiers that stands for nearness, for a method that takes rows
"near each other" by sorting them once (slicing's buckets are runs of it; SABRE reads the
frequency table's positions instead, anonymize/frequency.py)."""
from __future__ import annotations

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.hierarchy import TaxonomyHierarchy
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, lit, render, table

#: a packed key stays below this, so that it is exact in every backend's 64-bit integer
PACKED_LIMIT = 2 ** 62


def qi_order(frag: Fragment, freq: str, ctx: RunContext) -> tuple[list[exp.Expression], dict[int, str], int]:
    """The sort key over ``src AS s``, the tables to join for it, and the number of rows, read
    from the selection's frequency table ``freq`` (its stored quasi-identifier values in
    ``raw_<i>``, in the order of ``frag.qis``, and their rows in ``n``): a pass over the
    distinct combinations, not over the rows.

    Attributes with fewer distinct values come first (a run of the order then keeps them
    constant longest); each value is numbered in a small table, to be LEFT JOINed as ``c<i>``
    on ``c<i>.x = s.<column>``: along the ancestor paths for a taxonomy, so that siblings are
    neighbours, else in the value's order (text byte for byte). The numbers are packed into as
    few 64-bit integers as hold them (mixed radix; a missing value numbers 0, first): the
    rows are sorted on one integer instead of on a key per attribute."""
    be = ctx.backend
    stats = ctx.query(exp.select(exp.Sum(this=col("n")), *[
        exp.Count(this=exp.Distinct(expressions=[col(f"raw_{i}")])) for i in range(len(frag.qis))]).from_(table(freq)))
    n = int(stats[0][0] or 0) if stats else 0
    distinct = [int(c) for c in stats[0][1:]] if stats else [0] * len(frag.qis)
    order = sorted(range(len(frag.qis)), key=lambda i: (distinct[i], i))
    codes: dict[int, str] = {}
    for i in order:
        q = frag.qis[i]
        path = [be.binary_text(q.hierarchy.expr(col("x"), lv)) for lv in range(q.hierarchy.height - 1, 0, -1)] \
            if isinstance(q.hierarchy, TaxonomyHierarchy) else []
        raw = be.binary_text(col("x")) if q.column in frag.text_columns else col("x")
        codes[i] = ctx.create_temp(f"ocodes_{i}", render(
            "anonymize/order_codes", path=path + [raw], x=col(f"raw_{i}"), src=freq))
        index = be.lookup_index(codes[i], "x")  # every row looks its code up (join_codes)
        if index is not None:
            ctx.run_text(index)
    if not order:
        return [], codes, n
    # the largest number of each table (text the backend groups apart may number more values
    # than COUNT(DISTINCT) saw)
    tops = ctx.query(exp.select(*[exp.select(exp.Max(this=col("code"))).from_(table(codes[i])).subquery()
                                  for i in order])) if ctx.live else []
    radix = [int(v or 0) + 1 for v in tops[0]] if tops else [distinct[i] + 2 for i in order]
    key: list[exp.Expression] = []
    packed: exp.Expression | None = None
    room = 1
    for i, r in zip(order, radix):
        code = exp.func("COALESCE", col("code", f"c{i}"), lit(0))
        if packed is None or room * r >= PACKED_LIMIT:
            if packed is not None:
                key.append(packed)
            packed, room = code, r
        else:
            packed, room = exp.Add(this=exp.Mul(this=exp.Paren(this=packed), expression=lit(r)), expression=code), room * r
    key.append(packed)
    return key, codes, n


def join_codes(select: exp.Select, frag: Fragment, codes: dict[int, str]) -> exp.Select:
    """``select`` (over ``src AS s``) with the order's code tables joined."""
    for i, code in codes.items():
        select = select.join(table(code, f"c{i}"), join_type="left", on=exp.EQ(
            this=col("x", f"c{i}"), expression=col(frag.qis[i].column, "s")))
    return select

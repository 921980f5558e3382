"""Information loss of microaggregation: IL = SSE / SST on standardized attributes (Domingo-Ferrer & Mateo-Sanz 2002).

Measured on the released rows alone, without linking them back to the selection: a
microaggregated value is its group's mean, so per attribute SSE = SST − SSB, where SSB is the
released values' sum of squares about the selection's mean. Standardizing divides SSE and SST
by the same variance, so IL is the mean over attributes of SSE/SST (constant attributes,
with SST = 0, lose nothing and are left out).
"""
from __future__ import annotations

from sqlglot import exp

from sqlanon.context import RunContext
from sqlanon.sql.templates import col, render


def information_loss(columns: list[str], src: str, released: str, ctx: RunContext) -> float | None:
    """IL in percent, or None when every attribute is constant."""
    if not columns:
        return None

    def squares(alias: str) -> list[exp.Expression]:
        out = []
        for i, c in enumerate(columns):
            d = exp.Paren(this=exp.Sub(this=exp.cast(col(c, alias), "DOUBLE"), expression=col(f"m_{i}", "m")))
            out.append(exp.alias_(exp.Sum(this=exp.Mul(this=d, expression=d.copy())), f"{alias}_{i}"))
        return out

    means = [exp.alias_(exp.Avg(this=exp.cast(col(c), "DOUBLE")), f"m_{i}") for i, c in enumerate(columns)]
    row = ctx.query(render("verify/sse", sst=squares("s"), ssb=squares("r"), means=means, src=src,
                           released=released))
    if not row:
        return None
    n = len(columns)
    sst, ssb = row[0][:n], row[0][n:]
    shares = [1.0 - float(b or 0) / float(t) for t, b in zip(sst, ssb) if t]
    return 100.0 * sum(shares) / len(shares) if shares else None

"""``sqlanon synthesize``: a synthetic table made by MWEM (mwem.py) from a protected table,
written into the database beside it; its ε is reserved in the catalog's ledger first, like a
query's, and nothing else of the table is read but the histogram."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from sqlanon.backends.connect import Database
from sqlanon.context import RunContext
from sqlanon.dp import Spend, no_ledger
from sqlanon.dp.mwem import axes, cells, default_columns, histogram_statement, mwem
from sqlanon.errors import PolicyError, QueryRejected
from sqlanon.policy.model import Policy

#: rows per INSERT
BATCH = 500


@dataclass
class Synthesized:
    table: str
    into: str
    rows: int
    columns: list[str]
    epsilon: float
    budget_left: float
    rounds: int
    measured: list[list[str]]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def synthesize(db: Database, policy: Policy, table: str, into: str, *, epsilon: float,
               workload: list[list[str]] | None = None, rounds: int | None = None, bins: int = 10,
               spend: Spend | None = None) -> Synthesized:
    tp = policy.for_table(table)
    if tp is None:
        raise PolicyError(f"no policy names table {table!r}: only a protected table is synthesized")
    dp = tp.requirement.dp
    if dp is None:
        raise PolicyError("a synthetic table spends ε: the table's policy needs privacy.epsilon", table=tp.table)
    if not 0 < epsilon <= dp.epsilon.budget:
        raise PolicyError(f"--epsilon must be positive and at most the budget {dp.epsilon.budget:g}", table=tp.table)
    if spend is None:
        raise QueryRejected("differential privacy without a catalog", no_ledger(db.backend))
    if into.lower() in db.tables or into.lower() in db.views:
        raise QueryRejected("existing table", f"{into}: a synthetic table never replaces one")
    columns = list(dict.fromkeys(c for w in workload for c in w)) if workload else default_columns(tp, dp)
    if not columns:
        raise QueryRejected("no column with a known domain", f"{tp.table}: list values under privacy.groups.public or "
                            "bounds under privacy.bounds")
    cols = axes(tp, dp, columns, bins)
    stored = db.spelling.get(tp.table.lower(), tp.table)
    with RunContext(db) as ctx:
        spent = spend(tp.table, dp, epsilon, 0.0)
        with ctx.in_stage("histogram"):
            found = ctx.query(histogram_statement(tp, stored, dp, cols))
        with ctx.in_stage("mwem"):
            made = mwem(cols, cells(cols, found), workload, dp, epsilon, rounds)
        with ctx.in_stage("write"):
            numeric = [all(isinstance(v, (int, float)) for v in a.values) for a in cols]
            schema = exp.Schema(this=exp.to_identifier(into, quoted=True), expressions=[
                exp.ColumnDef(this=exp.to_identifier(a.column, quoted=True),
                              kind=exp.DataType.build("FLOAT" if num else "VARCHAR(200)"))
                for a, num in zip(cols, numeric)])
            ctx.execute(exp.Create(this=schema, kind="TABLE"))
            for i in range(0, len(made.rows), BATCH):
                values = exp.values([tuple(exp.Literal.number(v) if num else exp.Literal.string(str(v))
                                           for v, num in zip(row, numeric)) for row in made.rows[i:i + BATCH]])
                ctx.execute(exp.insert(values, exp.Table(this=exp.to_identifier(into, quoted=True))))
            for statement in db.backend.share(into) if db.reader is not None else ():
                ctx.run_text(statement)
    db.refresh_schema()
    return Synthesized(tp.table, into, len(made.rows), [a.column for a in cols], epsilon, spent.left, made.rounds,
                       made.measured)

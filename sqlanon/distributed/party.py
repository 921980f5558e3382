"""One party of D2Pt: a database that anonymizes its own vertical part, inside itself.

Its selection lands in one temp table (the pushdown): the join key's pseudonym (never the key),
a row number in the order of the pseudonyms, each row's cell (the distinct combination of its
released quasi-identifiers, numbered), and the columns the query releases from this side; the
cells get a temp table of their own. Every later request is one set-based statement whose
answer is a column, never a row at a time: the pseudonyms and cells (once), the class of every
cell at a vector of generalization levels (an opaque dense rank, not the labels), the number of
labels per quasi-identifier, the sensitive attribute as codes, and at the end the labels of the
released classes and the values of the released rows only (the fragmenter's input).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
from sqlglot import exp

from sqlanon.backends.connect import Database
from sqlanon.context import RunContext
from sqlanon.distributed.query import Side
from sqlanon.errors import QueryRejected
from sqlanon.policy.model import QuasiIdentifier, TablePolicy
from sqlanon.sql.templates import col, ident, table

#: the pushed-down table's own columns (the released ones are c0, c1, … beside them)
PID, RN, CELL = "pid", "rn", "cell"


def size(rows: Sequence[Sequence[Any]]) -> int:
    """Bytes of an answer's values as the client holds them (text in UTF-8, numbers 8 bytes)."""
    total = 0
    for r in rows:
        for v in r:
            total += len(v.encode("utf-8")) if isinstance(v, str) else len(v) if isinstance(v, bytes) else 8
    return total


@dataclass
class Party:
    name: str
    db: Database
    policy: TablePolicy
    side: Side
    ctx: RunContext
    #: bytes this party sent to the client and received from it
    sent: int = 0
    received: int = 0
    src: str = ""
    #: rows of the selection (known once the pseudonyms are read)
    rows: int = 0
    #: per level vector asked for, the temp table of its class numbers (rn, cls)
    vectors: list[str] = field(default_factory=list)
    #: the cells of the released quasi-identifiers (temp table), and each row's cell
    cells: str = ""
    cell_of_row: np.ndarray | None = None
    #: (quasi-identifier, level) → its number of labels
    counted: dict[tuple[str, int], int] = field(default_factory=dict)
    #: released column → its name in the pushed-down table
    names: dict[str, str] = field(default_factory=dict)

    @property
    def qis(self) -> tuple[QuasiIdentifier, ...]:
        """The quasi-identifiers this side releases."""
        return tuple(q for q in self.policy.quasi_identifiers if q.column in self.side.columns)

    @property
    def per_row(self) -> tuple[str, ...]:
        """Released columns that are not generalized: sensitive and insensitive ones."""
        qi = {q.column for q in self.qis}
        return tuple(c for c in self.side.columns if c not in qi)

    def check(self) -> None:
        """The side's columns against its policy: identifiers are never released, every released
        column is named by the policy, the key is an integer or text (its text is the same in
        every database, so are its pseudonyms)."""
        tp, cols = self.policy, self.db.columns(self.db.spelling.get(self.side.table.lower(), self.side.table))
        if self.side.key and self.side.key not in cols:
            raise QueryRejected("unknown join key", f"{self.name}.{self.side.table} has no column {self.side.key}")
        if self.side.key and (cols[self.side.key].family not in ("numeric", "text") or cols[
                self.side.key].type.upper() in ("FLOAT", "REAL", "DOUBLE", "DOUBLE PRECISION", "NUMERIC", "DECIMAL")):
            raise QueryRejected("join key that is neither integer nor text across databases",
                                f"{self.name}.{self.side.table}.{self.side.key} is {cols[self.side.key].type}")
        for c in self.side.columns:
            if c in tp.identifiers:
                raise QueryRejected("identifier column", f"{self.name}.{tp.table}.{c} is never released")
            if c not in tp.releasable:
                raise QueryRejected("column the policy does not release",
                                    f"{self.name}.{tp.table}.{c} is not named by the policy")

    def pushdown(self, key: bytes | None) -> None:
        """The selection, the join key pseudonymized, into the party's temp table (one
        statement); without a join key (a union) the rows as they are, numbered."""
        self.names = {c: f"c{i}" for i, c in enumerate(self.side.columns)}
        base = table(self.db.spelling.get(self.side.table.lower(), self.side.table))
        columns = [exp.alias_(col(c), n, quoted=True) for c, n in self.names.items()]
        cell = [exp.alias_(self._rank(self._labels({q.column: 0 for q in self.qis})), CELL, quoted=True)
                ] if self.qis else []
        if key is None:
            rn = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[
                exp.Ordered(this=col(n)) for n in self.names.values()]))
            self.src = self.ctx.create_temp("d2pt_src", exp.select(
                exp.alias_(rn, RN, quoted=True), *cell, *[col(n) for n in self.names.values()]).from_(
                exp.select(*columns).from_(base).subquery("x")))
        else:
            inner = exp.select(exp.alias_(self.db.backend.pseudonym(col(self.side.key), key), PID, quoted=True),
                               *columns).from_(base).where(exp.Not(this=exp.Is(this=col(self.side.key),
                                                                               expression=exp.Null())))
            rn = exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=[exp.Ordered(this=col(PID))]))
            self.src = self.ctx.create_temp("d2pt_src", exp.select(
                col(PID), exp.alias_(rn, RN, quoted=True), *cell, *[col(n) for n in self.names.values()]
            ).from_(inner.subquery("x")))
        if self.qis:
            # the cells: each distinct combination of the released quasi-identifiers once
            # (Adult: ~20,000 whatever the rows); the levels' classes are numbered over them
            qi = [self.names[q.column] for q in self.qis]
            self.cells = self.ctx.create_temp("d2pt_cells", exp.select(
                col(CELL), *[exp.alias_(exp.Max(this=col(n)), n, quoted=True) for n in qi]).from_(
                table(self.src)).group_by(col(CELL)))

    def cell_of_rows(self) -> np.ndarray:
        """Each row's cell (0-based), in row order: read once."""
        if self.cell_of_row is None:
            found = self._query(exp.select(col(CELL)).from_(table(self.src)).order_by(col(RN)))
            self.cell_of_row = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found)) - 1
            self.rows = len(found)
        return self.cell_of_row

    def hashes(self, levels: dict[str, int] | None, column: str | None, key: bytes) -> list[str]:
        """Per row, in row order, the keyed hash of its labels at ``levels`` (a class both
        parties of a union name alike) or of its value of ``column`` (a sensitive value both
        code alike): comparable across databases, readable by neither."""
        def h(e: exp.Expression) -> exp.Expression:
            return exp.Coalesce(this=self.db.backend.pseudonym(e, key), expressions=[exp.Literal.string("0" * 16)])

        if levels is not None:  # per cell, then per row
            parts = [h(g) for g in self._labels(levels)]
            value = self.db.backend.pseudonym(exp.Concat(expressions=parts) if len(parts) > 1 else parts[0], key)
            per_cell = [r[0] for r in self._query(exp.select(exp.alias_(value, "h", quoted=True))
                                                  .from_(table(self.cells)).order_by(col(CELL)))]
            return [per_cell[c] for c in self.cell_of_rows().tolist()]
        assert column is not None
        found = [r[0] for r in self._query(exp.select(exp.alias_(h(col(self.names[column])), "h", quoted=True))
                                           .from_(table(self.src)).order_by(col(RN)))]
        self.rows = len(found)
        return found

    def released_rows(self, vectors: list[dict[str, int]], used: list[int], keep: str) -> list[tuple]:
        """The released rows themselves, each at its level vector, in the query's column order
        (a union: no other party's part to merge)."""
        out: list[tuple] = []
        qi = {q.column: q for q in self.qis}
        for v in used:
            values = [qi[c].hierarchy.expr(col(self.names[c], "s"), vectors[v][c]) if c in qi
                      else col(self.names[c], "s") for c in self.side.columns]
            out += self._query(exp.select(*values).from_(table(keep, "k")).join(
                table(self.src, "s"), on=exp.EQ(this=col(RN, "s"), expression=col(RN, "k"))).where(
                exp.EQ(this=col("v", "k"), expression=exp.Literal.number(v))))
        return out

    def _query(self, statement: exp.Expression) -> list[tuple]:
        rows = self.ctx.query(statement)
        self.sent += size(rows)
        return rows

    def pseudonyms(self) -> list[str]:
        """The pseudonym of every row, in row-number order."""
        found = [r[0] for r in self._query(exp.select(col(PID)).from_(table(self.src)).order_by(col(RN)))]
        self.rows = len(found)
        return found

    def _labels(self, levels: dict[str, int]) -> list[exp.Expression]:
        return [q.hierarchy.expr(col(self.names[q.column]), levels[q.column]) for q in self.qis]

    def _rank(self, values: list[exp.Expression], text: bool = True) -> exp.Expression:
        """DENSE_RANK over ``values``; text compared byte for byte, as a reader tells labels apart."""
        order = [exp.Ordered(this=self.db.backend.binary_text(v.copy()) if text else v.copy(), nulls_first=True)
                 for v in values]
        return exp.Window(this=exp.Anonymous(this="DENSE_RANK"), order=exp.Order(expressions=order))

    def classes(self, levels: dict[str, int]) -> np.ndarray:
        """Every row's local class at ``levels``, as an opaque number (1, 2, …), in row order:
        numbered over the cells, kept in a temp table of the vector's own (where the fragmenter
        finds the released classes' labels), read per cell and spread to the rows here."""
        name = self.ctx.create_temp(f"d2pt_cls{len(self.vectors)}", exp.select(
            col(CELL), exp.alias_(self._rank(self._labels(levels)), "cls", quoted=True)).from_(table(self.cells)))
        self.vectors.append(name)
        found = self._query(exp.select(col("cls")).from_(table(name)).order_by(col(CELL)))
        per_cell = np.fromiter((r[0] for r in found), dtype=np.int64, count=len(found))
        return per_cell[self.cell_of_rows()]

    def distinct(self, levels: dict[str, int]) -> dict[str, int]:
        """How many labels each quasi-identifier has at ``levels`` (Datafly's choice); a count
        once per quasi-identifier and level, all that are new in one statement."""
        new = [q for q in self.qis if (q.column, levels[q.column]) not in self.counted]
        if new:
            row = self._query(exp.select(*[exp.Count(this=exp.Distinct(expressions=[self.db.backend.binary_text(
                q.hierarchy.expr(col(self.names[q.column]), levels[q.column]))])) for q in new]
                                         ).from_(table(self.cells)))[0]
            self.counted.update({(q.column, levels[q.column]): int(n) for q, n in zip(new, row)})
        return {q.column: self.counted[(q.column, levels[q.column])] for q in self.qis}

    def codes(self, column: str, numeric: bool) -> list[int]:
        """Codes of a sensitive attribute's values in row order, dense in the values' order
        (numeric order for numbers): what t-closeness and l-diversity need, not the values."""
        value = col(self.names[column])
        rank = self._rank([value], text=False) if numeric else self._rank([exp.cast(value, "TEXT")])
        rows = self._query(exp.select(exp.alias_(rank, "v", quoted=True)).from_(table(self.src)).order_by(col(RN)))
        return [int(r[0]) for r in rows]

    def keep(self, rows: list[tuple[int, ...]], columns: tuple[str, ...] = (RN,)) -> str:
        """Numbers the client sends in one bulk insert, into a temp table of ``columns``: the
        released rows (with their level vector, for a union), or the released classes."""
        zero = exp.cast(exp.Literal.number(0), "BIGINT")
        name = self.ctx.create_temp("d2pt_keep", exp.select(*[exp.alias_(zero.copy(), c, quoted=True)
                                                              for c in columns]).where(exp.false()))
        self.ctx.insert_many(exp.insert(exp.values([tuple(exp.Placeholder() for _ in columns)]), table(name),
                                        columns=[ident(c) for c in columns]), rows)
        self.received += 8 * len(columns) * len(rows)
        return name

    def released_labels(self, vectors: list[dict[str, int]], needed: dict[int, list[int]]) -> dict[tuple[int, int], tuple]:
        """The labels of the released classes the client names per level vector: (vector, class
        number) → labels. The party learns which of its classes are released at which vector,
        not which rows."""
        keep = self.keep([(v, c) for v, cs in needed.items() for c in cs], ("v", "cls"))
        out: dict[tuple[int, int], tuple] = {}
        for v in sorted(needed):
            labels = [g.transform(lambda n: col(n.name, "e") if isinstance(n, exp.Column) else n)
                      for g in self._labels(vectors[v])]
            select = exp.select(col("cls", "c"), *labels).distinct().from_(table(keep, "k")).join(
                table(self.vectors[v], "c"), on=exp.EQ(this=col("cls", "c"), expression=col("cls", "k"))).join(
                table(self.cells, "e"), on=exp.EQ(this=col(CELL, "e"), expression=col(CELL, "c"))).where(
                exp.EQ(this=col("v", "k"), expression=exp.Literal.number(v)))
            out.update({(v, int(r[0])): tuple(r[1:]) for r in self._query(select)})
        return out

    def released_values(self, released: np.ndarray) -> dict[int, tuple]:
        """The sensitive and insensitive values of the released rows only (0-based row indexes):
        row number → values. The client sends the released row numbers, or the withheld ones
        where they are fewer (a join that releases every row sends nothing)."""
        withheld = np.setdiff1d(np.arange(self.rows), released, assume_unique=True)
        exclude = len(withheld) < len(released)
        keep = self.keep([(int(r) + 1,) for r in (withheld if exclude else released)])
        on = exp.EQ(this=col(RN, "k"), expression=col(RN, "s"))
        select = exp.select(col(RN, "s"), *[col(self.names[c], "s") for c in self.per_row]).from_(table(self.src, "s"))
        if exclude:
            select = select.join(table(keep, "k"), on=on, join_type="left").where(
                exp.Is(this=col(RN, "k"), expression=exp.Null()))
        else:
            select = select.join(table(keep, "k"), on=on)
        rows = self._query(select)
        return {int(r[0]): tuple(r[1:]) for r in rows}

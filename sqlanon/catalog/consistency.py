"""Releases of one table kept consistent with each other (Sweeney 2002: complementary release, temporal attack).

A complementary-release attack joins two releases of the same rows made under different
generalizations (on the sensitive value, say): a person released as ``[30,40), 022**`` in one and
``[35,40), 0221*`` in the other is narrowed down to the intersection, and classes of k fall
apart. A temporal attack does the same with a release made after rows were added or removed.

The catalog therefore remembers, per protected table, what each row (recognised by the table's
primary key, which never leaves the database) was released as: one table per protected table,
``rows_<table>`` in the catalog's schema or with its prefix. A new stored release

1. reuses the earlier generalization of every row released before (``across_releases: reuse``,
   consistent recoding) or is refused when one differs (``refuse``);
2. is verified as usual, and then the union of everything released of the table so far (this
   release plus the remembered rows it does not contain) is measured against the same models:
   an attacker holding every release sees exactly that;
3. adds its new rows to the memory.
Per-query answers are not remembered (see ``differencing.py`` for what protects them).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import sqlalchemy as sa
from sqlglot import exp

from sqlanon.catalog.store import Catalog
from sqlanon.context import RunContext
from sqlanon.errors import ReleaseRefused
from sqlanon.policy.model import Requirement
from sqlanon.pushdown.fragment import Fragment
from sqlanon.sql.templates import col, ident, table
from sqlanon.verify import measure_table

TARGET = "sqlanon_target"
AT = "sqlanon_at"


@dataclass
class Consistency:
    """The Recoder (finish/store.py) of ``flow.materialize`` for one stored release of ``table``."""

    catalog: Catalog
    table: str
    target: str
    mode: str
    active: bool = False
    exists: bool = False
    notes: list[str] = field(default_factory=list)
    #: the rows of this release that the memory does not hold yet (set by ``pin``)
    _fresh: str = ""

    @property
    def memory_name(self) -> str:
        return self.catalog.names(f"rows_{self.table.lower()}")

    def _memory(self, alias: str | None = None) -> exp.Table:
        t = table(self.memory_name, alias)
        if self.catalog.names.schema is not None:
            t.set("db", ident(self.catalog.names.schema))
        return t

    def prepare(self, frag: Fragment, method: str, ctx: RunContext) -> Fragment:
        if self.mode == "off":
            return frag
        if method == "slicing":
            raise ReleaseRefused(f"slicing keeps no per-row generalization that later releases of {self.table} could "
                                 "stay consistent with; choose another method, or set privacy.across_releases: off")
        key = self.catalog.db.primary_key(frag.table)
        if not key:
            raise ReleaseRefused(f"{frag.table} has no primary key: sqlanon cannot recognise its rows in later "
                                 "releases to keep them consistent; add one, or set privacy.across_releases: off")
        self.active = True
        self.exists = sa.inspect(self.catalog.db.engine).has_table(self.memory_name, schema=self.catalog.names.schema)
        return frag.with_key(key)

    def _same_row(self, frag: Fragment, a: str, b: str) -> exp.Expression:
        return exp.and_(*[exp.EQ(this=col(k, a), expression=col(k, b)) for k in frag.key])

    def narrow(self, frag: Fragment, src: str, ctx: RunContext) -> str:
        """The selected rows the method anonymizes: under ``reuse``, only those never released
        (the others keep their earlier generalization)."""
        if not (self.active and self.exists) or self.mode != "reuse":
            return src
        fresh = exp.select(exp.Column(this=exp.Star(), table=ident("s"))).from_(table(src, "s")).where(
            exp.Not(this=exp.Exists(this=exp.select(exp.Literal.number(1)).from_(self._memory("m"))
                                    .where(self._same_row(frag, "s", "m")))))
        return ctx.create_temp("fresh", fresh)

    def pin(self, frag: Fragment, src: str, released: str, ctx: RunContext) -> str:
        self._fresh = released
        if not (self.active and self.exists):
            return released
        qis = [q.column for q in frag.qis]
        join = self._same_row(frag, "r", "m")
        if self.mode == "refuse":
            be = ctx.backend
            same = exp.and_(*[exp.NullSafeEQ(this=be.binary_text(col(q, "r")), expression=be.binary_text(col(q, "m")))
                              for q in qis]) if qis else exp.true()
            n, first = ctx.query(exp.select(exp.Count(this=exp.Star()), exp.Min(this=col(TARGET, "m")))
                                 .from_(table(released, "r")).join(self._memory("m"), on=join)
                                 .where(exp.Not(this=exp.Paren(this=same))))[0]
            if n:
                raise ReleaseRefused(f"{n} of the selected rows of {self.table} were released before (in {first}, "
                                     "among others) under another generalization; the policy says refuse "
                                     "(privacy.across_releases)")
            self._fresh = ctx.create_temp("fresh_release", self._unremembered(frag, released))
            return released
        # reuse: the method anonymized the new rows; the others come back as they were released
        again = exp.select(*[exp.alias_(col(c, "m" if c in qis else "s"), c, quoted=True) for c in frag.columns]) \
            .from_(table(src, "s")).join(self._memory("m"), on=self._same_row(frag, "s", "m"))
        pinned = ctx.create_temp("pinned", exp.union(
            exp.select(*[col(c, "r") for c in frag.columns]).from_(table(released, "r")), again, distinct=False))
        earlier = ctx.query(exp.select(col(TARGET, "m"), exp.Count(this=exp.Star())).from_(table(src, "s"))
                            .join(self._memory("m"), on=self._same_row(frag, "s", "m")).group_by(col(TARGET, "m"))
                            .order_by(col(TARGET, "m")))
        named = ", ".join(f"{n} from {target}" for target, n in earlier) or "none"
        self.notes.append(f"consistent recoding: rows released before keep their earlier generalization ({named}); "
                          "the method anonymized the others")
        return pinned

    def _unremembered(self, frag: Fragment, released: str) -> exp.Select:
        """The rows of ``released`` the memory does not hold (probing the memory's key index)."""
        return (exp.select(*[col(c, "r") for c in frag.columns]).from_(table(released, "r"))
                .where(exp.Not(this=exp.Exists(this=exp.select(exp.Literal.number(1)).from_(self._memory("m"))
                                               .where(self._same_row(frag, "r", "m"))))))

    def check(self, frag: Fragment, released: str, req: Requirement, ctx: RunContext,
              numbers: tuple[str, ...] = ()) -> list[str]:
        if not (self.active and self.exists):
            return self.notes
        # every row ever released of the table once: the remembered ones as they were released
        # (this release gave them the same classes), and the rows this release adds
        union = ctx.create_temp("all_releases", exp.union(
            exp.select(*[col(c) for c in frag.columns]).from_(self._memory()),
            exp.select(*[col(c) for c in frag.columns]).from_(table(self._fresh)), distinct=False))
        m = measure_table(replace(frag, table=union), req, ctx, numbers)
        ctx.drop(union)
        failed = [v for v in m.verdicts if not v.ok]
        if failed:
            raise ReleaseRefused(f"this release of {self.table} and the rows released before together break the "
                                 "policy (an attacker holding every release sees their union): "
                                 + "; ".join(f"{v.criterion}: {v.measured}" for v in failed) + "; nothing was stored")
        return self.notes + [f"every release of {self.table} together: {m.rows_released} rows, "
                             + ", ".join(f"{v.criterion} {v.measured}" for v in m.verdicts)]

    def creates(self) -> str | None:
        return self.memory_name if self.active and not self.exists else None

    def remember(self, frag: Fragment, released: str, ctx: RunContext) -> None:
        if not self.active:
            return
        stamp = [exp.alias_(exp.cast(exp.Literal.string(self.target), "VARCHAR(200)"), TARGET, quoted=True),
                 exp.alias_(exp.CurrentTimestamp(), AT, quoted=True)]
        if not self.exists:
            props = ctx.backend.stored_table_properties()
            ctx.run(exp.Create(this=self._memory(), kind="TABLE", expression=exp.select(
                *[col(c, "r") for c in frag.columns], *stamp).from_(table(released, "r")),
                properties=exp.Properties(expressions=props) if props else None))
            # every later release probes the memory by key: without an index that is rows × rows
            memory = sa.Table(self.memory_name, sa.MetaData(), *[sa.Column(k) for k in frag.key],
                              schema=self.catalog.names.schema)
            if ctx.live:
                # in the release's transaction, on its connection (finish/store.py)
                sa.Index(f"{self.memory_name}_key", *[memory.c[k] for k in frag.key], unique=True).create(
                    ctx.connection())
            return
        new = self._unremembered(frag, self._fresh).select(*stamp)
        names = [ident(c) for c in frag.columns] + [ident(TARGET), ident(AT)]
        ctx.run(exp.Insert(this=exp.Schema(this=self._memory(), expressions=names), expression=new))

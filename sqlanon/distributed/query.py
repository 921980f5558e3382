"""Which query over several databases D2Pt answers, and the refusal of every other by name.

A query names a database of the federation as the qualifier of a table (``clinic.patients``).
Tables of one database only: the query is that database's, answered by its own session. Tables
of two databases: the one shape the protocol covers (Nielsen et al., BTW 2015; John's thesis
§3.4) is a vertical partition, two tables that describe the same persons, joined on a key::

    SELECT p.age, p.zip, l.test, l.result
    FROM clinic.patients p JOIN lab.results l ON l.patient_id = p.id

plain columns only, one INNER join on one equality of two columns. Everything else that reads
two databases (WHERE, GROUP BY, aggregates, ORDER BY, LIMIT, DISTINCT, subqueries, outer joins,
expressions, ``*``, a third table) is refused, naming the construct: allowlist, not blocklist.
"""
from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp

from sqlanon.errors import QueryRejected

#: SELECT clauses the cross-database form may have; any other is refused under its name here
ALLOWED = frozenset({"expressions", "from_", "joins", "kind"})
#: how a refused clause is named
CLAUSES = {"where": "WHERE", "group": "GROUP BY", "having": "HAVING", "order": "ORDER BY", "limit": "LIMIT",
           "offset": "OFFSET", "distinct": "DISTINCT", "with_": "WITH", "qualify": "QUALIFY", "windows": "WINDOW",
           "locks": "FOR UPDATE", "into": "SELECT INTO", "sample": "TABLESAMPLE", "hint": "optimizer hint",
           "laterals": "LATERAL", "pivots": "PIVOT", "connect": "CONNECT BY", "prewhere": "PREWHERE",
           "cluster": "CLUSTER BY", "distribute": "DISTRIBUTE BY", "sort": "SORT BY", "settings": "SETTINGS",
           "format": "FORMAT", "options": "OPTIONS", "exclude": "EXCLUDE", "operation_modifiers": "modifier"}


@dataclass(frozen=True)
class Side:
    """One database's part of a cross-database join."""

    database: str
    #: the table as the query spells it, without the database
    table: str
    alias: str
    #: the join key column (its values never leave the database: only their pseudonyms do)
    key: str
    #: the columns this side releases, in the order the query selects them
    columns: tuple[str, ...]


@dataclass(frozen=True)
class CrossJoin:
    sides: tuple[Side, Side]
    #: per selected column: (side 0 or 1, column, output name)
    output: tuple[tuple[int, str, str], ...]


def parse(sql: str, dialect: str | None = None) -> exp.Expression:
    try:
        trees = sqlglot.parse(sql, dialect=dialect)
    except sqlglot.errors.ParseError as e:
        raise QueryRejected("unparsable SQL", str(e).splitlines()[0]) from None
    trees = [t for t in trees if t is not None]
    if len(trees) != 1:
        raise QueryRejected("multiple statements", "send one SELECT at a time")
    tree = trees[0]
    assert isinstance(tree, exp.Expression)
    return tree


def databases(tree: exp.Expression, names: frozenset[str]) -> set[str]:
    """The federation's databases the query names as table qualifiers."""
    return {t.db.lower() for t in tree.find_all(exp.Table) if t.db and t.db.lower() in names}


def strip(tree: exp.Expression, name: str) -> exp.Expression:
    """The query as its one database reads it: the federation's qualifier removed."""
    tree = tree.copy()
    for t in tree.find_all(exp.Table):
        if t.db and t.db.lower() == name and not t.catalog:
            t.set("db", None)
    return tree


@dataclass(frozen=True)
class UnionAll:
    """A horizontally partitioned table: one table's rows in two databases, released as one."""

    sides: tuple[Side, Side]
    #: the output columns' names (the first branch's)
    names: tuple[str, ...]


def union_all(tree: exp.Expression, names: frozenset[str]) -> UnionAll:
    """``SELECT cols FROM a.t UNION ALL SELECT cols FROM b.t``: plain columns of one table per
    branch, two databases, the same columns in the same order; anything else refused by name."""
    if not isinstance(tree, exp.Union) or tree.args.get("distinct"):
        kind = type(tree).__name__.upper() + ("" if tree.args.get("distinct") else " ALL")
        raise QueryRejected(f"{kind} across databases", "UNION ALL of one table's rows in two databases, or a join")
    for name in ("order", "limit", "offset", "with_"):
        if tree.args.get(name):
            raise QueryRejected(f"{CLAUSES[name]} across databases",
                                "D2Pt releases the union's rows as they are; sort or limit the released rows")
    branches = [tree.this, tree.expression]
    if not all(isinstance(b, exp.Select) for b in branches):
        raise QueryRejected("UNION of more than two branches across databases", "one branch per database")
    sides = []
    for b in branches:
        for key, value in b.args.items():
            if value and key not in ALLOWED - {"joins"}:
                raise QueryRejected(f"{'JOIN' if key == 'joins' else CLAUSES.get(key, key.upper())} in a union "
                                    "across databases", fragment=b.sql())
        tables = list(b.find_all(exp.Table))
        if len(tables) != 1 or any(n is not b for n in b.find_all(exp.Subquery, exp.Select)):
            raise QueryRejected("subquery across databases", fragment=b.sql())
        t = tables[0]
        if not t.db or t.db.lower() not in names or t.catalog:
            raise QueryRejected("table without a database name", f"name each table's database ({sorted(names)})",
                                fragment=t.sql())
        columns = []
        for e in b.expressions:
            target = e.this if isinstance(e, exp.Alias) else e
            if not isinstance(target, exp.Column) or isinstance(target.this, exp.Star):
                raise QueryRejected("* across databases" if isinstance(target, exp.Star) or isinstance(
                    getattr(target, "this", None), exp.Star) else f"{type(target).__name__} across databases",
                                    "select columns as they are", fragment=e.sql())
            if target.table and target.table.lower() != t.alias_or_name.lower():
                raise QueryRejected("unknown table qualifier", fragment=target.sql())
            columns.append(target.name)
        sides.append(Side(t.db.lower(), t.name, t.alias_or_name.lower(), "", tuple(columns)))
    if sides[0].database == sides[1].database:
        raise QueryRejected("union within one database mixed with federation names", fragment=tree.sql())
    if [c.lower() for c in sides[0].columns] != [c.lower() for c in sides[1].columns]:
        raise QueryRejected("union of different columns across databases",
                            "both branches select the same columns of the same table, in the same order")
    return UnionAll((sides[0], sides[1]), tuple(e.alias_or_name for e in branches[0].expressions))


def cross_join(tree: exp.Expression, names: frozenset[str]) -> CrossJoin:
    """The cross-database join ``tree`` writes, or QueryRejected naming what D2Pt cannot answer."""
    if isinstance(tree, exp.SetOperation):
        kind = type(tree).__name__.upper() + (" ALL" if not tree.args.get("distinct") else "")
        raise QueryRejected(f"{kind} across databases", "D2Pt answers a join of two databases' tables on a key")
    if not isinstance(tree, exp.Select):
        raise QueryRejected(f"{tree.key.upper()} across databases", "only a SELECT reads several databases")
    for name, value in tree.args.items():
        if value and name not in ALLOWED:
            raise QueryRejected(f"{CLAUSES.get(name, name.upper())} across databases",
                                "D2Pt releases the join's rows as they are; filter or aggregate the released rows")
    if tree.args.get("kind"):
        raise QueryRejected(f"SELECT {str(tree.args['kind']).upper()} across databases")
    for node in tree.find_all(exp.Subquery, exp.Select):
        if node is not tree:
            raise QueryRejected("subquery across databases", fragment=node.sql())
    joins = tree.args.get("joins") or []
    tables = list(tree.find_all(exp.Table))
    if len(joins) != 1 or len(tables) != 2:
        raise QueryRejected("join of more than two tables across databases" if len(tables) > 2 else
                            "cross-database query without a join", "D2Pt joins two parties' tables")
    join = joins[0]
    side, kind = (join.side or "").upper(), (join.kind or "").upper()
    if side or kind not in ("", "INNER"):
        raise QueryRejected(f"{(side + ' ' + kind).strip()} JOIN across databases",
                            "an inner join only: an outer or cross join would release a party's rows without "
                            "the other's", fragment=join.sql())
    if join.args.get("using"):
        raise QueryRejected("JOIN … USING across databases", "name the key columns in ON", fragment=join.sql())
    if join.method:
        raise QueryRejected(f"{join.method.upper()} JOIN across databases", fragment=join.sql())
    first, second = tables
    for t in tables:
        if not t.db or t.db.lower() not in names:
            raise QueryRejected("table without a database name", f"name each table's database ({sorted(names)}): "
                                f"database.table", fragment=t.sql())
        if t.catalog:
            raise QueryRejected("catalog-qualified table across databases", fragment=t.sql())
    if first.db.lower() == second.db.lower():
        raise QueryRejected("join within one database mixed with federation names", fragment=tree.sql())
    aliases = [t.alias_or_name.lower() for t in tables]
    if aliases[0] == aliases[1]:
        raise QueryRejected("two tables under one name", "give the tables aliases", fragment=tree.sql())

    def column_side(c: exp.Column) -> int:
        if not c.table:
            raise QueryRejected("column without its table across databases",
                                f"qualify {c.name} by its table's alias", fragment=c.sql())
        if c.table.lower() not in aliases:
            raise QueryRejected("unknown table qualifier", fragment=c.sql())
        return aliases.index(c.table.lower())

    on = join.args.get("on")
    if not isinstance(on, exp.EQ) or not all(isinstance(x, exp.Column) for x in (on.this, on.expression)):
        raise QueryRejected("join condition other than one equality of two columns across databases",
                            "join on one key: ON a.key = b.key", fragment=on.sql() if on is not None else join.sql())
    left, right = on.this, on.expression
    if column_side(left) == column_side(right):
        raise QueryRejected("join condition within one table across databases", fragment=on.sql())
    keys = [""] * 2
    keys[column_side(left)], keys[column_side(right)] = left.name, right.name

    output: list[tuple[int, str, str]] = []
    for e in tree.expressions:
        target = e.this if isinstance(e, exp.Alias) else e
        if isinstance(target, exp.Star) or (isinstance(target, exp.Column) and isinstance(target.this, exp.Star)):
            raise QueryRejected("* across databases", "name the columns to release", fragment=e.sql())
        if not isinstance(target, exp.Column):
            raise QueryRejected(f"{type(target).__name__} across databases",
                                "select columns as they are; compute on the released rows", fragment=e.sql())
        output.append((column_side(target), target.name, e.alias_or_name))
    names_out = [o[2].lower() for o in output]
    if len(set(names_out)) != len(names_out):
        raise QueryRejected("two output columns of one name across databases", "give them aliases")
    sides = tuple(Side(t.db.lower(), t.name, aliases[i], keys[i], tuple(c for s, c, _ in output if s == i))
                  for i, t in enumerate(tables))
    return CrossJoin((sides[0], sides[1]), tuple(output))

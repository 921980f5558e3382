"""Which base table every table reference of a query names: proved, never guessed by spelling.

A name-matching analyzer that takes ``WITH patients AS (SELECT * FROM patients) SELECT * FROM
patients`` for a query over a CTE passes raw rows through; one that reads ``P.ssn`` as a column of
``hospitals AS "P"`` checks the wrong table. Both come from names that mean one thing to the
database and another to the analyzer. So names are made unambiguous before anything reads them:

- a CTE, a derived table or an alias may not be named like a table or view the database knows
  (compared without case: quoted or not, on every engine a reader could take it for the table);
- two sources of one query may share a name (compared without case) only when both are the
  same base table (``FROM adult … (SELECT AVG(age) FROM adult)``);
- every table reference is then either a CTE of the query or a known base table: anything else
  is rejected by name.

With these rules the table a reference reads follows from its name alone, in every scope, on
every engine (PostgreSQL folds unquoted names to lower case, MariaDB compares table names by
case on Linux, SQLite never does); sqlglot's scope machinery would resolve the same, but a rule
that leaves no two readings needs no resolver to be trusted.
"""
from __future__ import annotations

from sqlglot import exp

from sqlanon.errors import QueryRejected


def _kind(node: exp.Expression) -> str:
    if isinstance(node, exp.CTE):
        return "common table expression"
    if isinstance(node, exp.Table):
        return "table alias"
    return "derived table"


def base_tables(tree: exp.Expression, known: set[str] | frozenset[str]) -> list[exp.Table]:
    """The references to base tables in ``tree`` (every scope), after the checks above.

    ``known``: lower-cased names of every table and view in the connected schema (a CTE or alias
    named like one is refused even where the query never reads that table: the next reader of
    the query might)."""
    ctes = {c.alias_or_name.lower(): c for c in tree.find_all(exp.CTE)}
    if len(ctes) != sum(1 for _ in tree.find_all(exp.CTE)):
        raise QueryRejected("common table expression (WITH)", "two CTEs of one query share a name")
    # what each name (without case) stands for: ("table", name) or the node that defines it
    meaning: dict[str, object] = {}

    def claim(name: str, what: object, node: exp.Expression) -> None:
        key = name.lower()
        if key in meaning and meaning[key] != what:
            raise QueryRejected("ambiguous name", f"{name!r} names two different sources of the query "
                                "(names are compared without case)", fragment=node.sql()[:200])
        meaning[key] = what

    for name, cte in ctes.items():
        if name in known:
            raise QueryRejected("common table expression named like a table",
                                f"{cte.alias_or_name!r} is also a table of the database", fragment=cte.sql()[:200])
        claim(name, ("cte", id(cte)), cte)
    refs: list[exp.Table] = []
    for t in tree.find_all(exp.Table):
        if not isinstance(t.this, exp.Identifier):
            raise QueryRejected(f"table expression {t.this.key.upper()}", "only named tables are accepted",
                                fragment=t.sql()[:200])
        name = t.name.lower()
        is_cte = not t.args.get("db") and not t.args.get("catalog") and name in ctes
        target: object = ("cte", id(ctes[name])) if is_cte else ("table", name)
        if not is_cte:
            refs.append(t)
        claim(t.name, target, t)
        if t.alias:
            if t.alias.lower() in known and t.alias.lower() != name:
                raise QueryRejected("table alias named like a table",
                                    f"{t.alias!r} is also a table of the database", fragment=t.sql()[:200])
            claim(t.alias, target, t)
    for sub in tree.find_all(exp.Subquery, exp.Lateral, exp.Values, exp.Unnest, exp.TableFromRows):
        alias = sub.alias
        if not alias:
            continue
        if alias.lower() in known:
            raise QueryRejected(f"{_kind(sub)} named like a table", f"{alias!r} is also a table of the database",
                                fragment=sub.sql()[:200])
        claim(alias, ("derived", id(sub)), sub)
    return refs

"""SQL templates: written once as SQL under ``sql_templates/``, filled as trees, never as text.

A template is parsed once. ``render`` fills ``:name`` placeholders with quoted identifiers
(``str``), derived tables (a subquery where the template names a table), expressions, or lists
of expressions spliced into the surrounding list (select list, GROUP BY, PARTITION BY …). The
result is a sqlglot expression the backend writes in its dialect.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Union

import sqlglot
from sqlglot import exp

from sqlanon.resources import data_dir

ROOT = data_dir("sql_templates")

Value = Union[str, exp.Expression, "Owned", list]


@lru_cache(maxsize=None)
def _parsed(name: str) -> exp.Expression:
    text = (ROOT / f"{name}.sql").read_text(encoding="utf-8")
    tree = sqlglot.parse_one(text, error_level=sqlglot.ErrorLevel.RAISE)
    # Every render copies the template. The parser's source positions (one dict per identifier)
    # and the template's comments are never written (write.py drops comments), but copying
    # them took two thirds of each copy; sqlglot has no option to parse without them.
    for node in tree.walk():
        node._meta = None
        node.comments = None
    return tree


def ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def lit(v: int | float) -> exp.Literal:
    return exp.Literal.number(v)


def col(name: str, table: str | None = None) -> exp.Column:
    return exp.column(name, table=table, quoted=True)


class Owned:
    """A value built for one ``render`` call alone, placed as it is instead of a copy: a
    hierarchy's CASE over every leaf costs more to copy than to build. Only where the caller
    keeps no reference to it."""

    __slots__ = ("expression",)

    def __init__(self, expression: exp.Expression):
        self.expression = expression


def render(name: str, **values: Value) -> exp.Expression:
    placed: set[int] = set()

    def own(v: exp.Expression | Owned) -> exp.Expression:
        """The value to place: an Owned value itself the first time, else a copy."""
        if isinstance(v, Owned) and id(v) not in placed:
            placed.add(id(v))
            return v.expression
        return (v.expression if isinstance(v, Owned) else v).copy()

    tree = _parsed(name).copy()
    missing = {p.this for p in tree.find_all(exp.Placeholder)} - set(values)
    if missing:
        raise KeyError(f"template {name}: no value for {sorted(missing)}")
    for ph in list(tree.find_all(exp.Placeholder)):
        value = values[ph.this]
        parent = ph.parent
        if isinstance(value, list) and isinstance(parent, exp.Ordered) and ph.arg_key == "this":
            # ORDER BY :list → one ORDER BY term per item, keeping the direction
            ordered, holder = parent, parent.parent
            items = holder.args[ordered.arg_key]
            at = items.index(ordered)
            new = [ordered.copy() for _ in value]
            for o, v in zip(new, value):
                o.set("this", col(v) if isinstance(v, str) else own(v))
            holder.set(ordered.arg_key, items[:at] + new + items[at + 1:])
        elif isinstance(value, list):
            if ph.index is None:
                raise TypeError(f"template {name}: :{ph.this} is not in a list")
            items = parent.args[ph.arg_key]
            at = items.index(ph)
            new = [col(v) if isinstance(v, str) else own(v) for v in value]
            parent.set(ph.arg_key, items[:at] + new + items[at + 1:])
        elif isinstance(value, str) and isinstance(parent, exp.Table):
            ph.replace(ident(value))
        elif isinstance(value.expression if isinstance(value, Owned) else value, exp.Subquery) \
                and isinstance(parent, exp.Table):
            # a derived table where the template names a table: FROM :t AS x → FROM (SELECT …) AS x
            sub = own(value)
            if parent.args.get("alias"):
                sub.set("alias", parent.args["alias"].copy())
            parent.replace(sub)
        elif isinstance(value, str):
            ph.replace(col(value))
        else:
            ph.replace(own(value))
    # An empty list leaves an empty clause behind (GROUP BY of nothing, ORDER BY of nothing); an
    # aggregate's ORDER BY of nothing (ARRAY_AGG(x ORDER BY :none)) leaves its argument.
    for clause in list(tree.find_all(exp.Group, exp.Order)):
        if not clause.expressions:
            if clause.this is not None:
                clause.replace(clause.this)
            else:
                clause.pop()
    return tree


def names() -> list[str]:
    return sorted(str(p.relative_to(ROOT).with_suffix("")) for p in ROOT.rglob("*.sql"))


def table(name: str, alias: str | None = None) -> exp.Table:
    """A table reference with its name quoted (``exp.to_table`` does not quote)."""
    t = exp.Table(this=ident(name))
    if alias:
        t.set("alias", exp.TableAlias(this=exp.to_identifier(alias, quoted=True)))
    return t

"""Every SQL template parses, and rendering refuses a missing value instead of leaving a hole."""
from __future__ import annotations

import pytest
from sqlglot import exp

from sqlanon.sql.templates import _parsed, names, render


@pytest.mark.parametrize("name", names())
def test_template_parses(name):
    tree = _parsed(name)
    assert isinstance(tree, exp.Expression)
    assert list(tree.find_all(exp.Placeholder)), f"{name} takes no value: a fixed statement needs no template"


def test_missing_value_is_an_error():
    with pytest.raises(KeyError, match="no value"):
        render("alpha_k/choice")


def test_identifiers_are_quoted():
    sql = render("alpha_k/choice", lv='we"ird', top=exp.true(), levels=[]).sql("postgres")
    assert '"we""ird"' in sql


def test_an_aggregates_order_of_nothing_keeps_its_argument():
    """An empty list in an aggregate's ORDER BY drops the ORDER BY, not the aggregated value."""
    from sqlanon.sql.templates import col

    assert 'ARRAY_AGG("a")' in render("slicing/zip_column", x=col("a"), r=[]).sql("postgres")
    assert 'ARRAY_AGG("a" ORDER BY "r"' in render("slicing/zip_column", x=col("a"), r=[col("r")]).sql("postgres")


def test_a_subquery_where_a_table_is_named_is_a_derived_table():
    """``FROM :t AS x`` filled with a subquery reads from it under the template's alias."""
    from sqlanon.sql.templates import col

    levels = exp.select(exp.alias_(exp.Literal.number(0), "l_0")).subquery()
    sql = render("alpha_k/record", now="n", lv=levels, parent=col("l_0", "lv")).sql("postgres")
    assert 'CROSS JOIN (SELECT 0 AS l_0) AS lv' in sql
    assert 'FROM "n" AS c' in sql

"""Input bounds and statement kinds, before any database is involved."""
from __future__ import annotations

import pytest

from sqlanon import QueryRejected
from sqlanon.parse import MAX_CHARS, parse


@pytest.mark.parametrize("sql,construct", [
    ("SELECT 1; SELECT 2", "several statements"),
    ("INSERT INTO t VALUES (1)", "INSERT statement"),
    ("SELECT a FROM t /*!50000 WHERE 1 */", "MySQL executable comment"),
    ("SELECT a FROM t /*M!100000 WHERE 1 */", "MySQL executable comment"),
    ("SELECT " + "(" * 600 + "1" + ")" * 600, "statement too complex"),
    ("SELECT 1" + " " * MAX_CHARS, "statement too long"),
    ("   ", "empty statement"),
])
def test_rejected_before_analysis(sql, construct):
    with pytest.raises(QueryRejected) as e:
        parse(sql, "postgres")
    assert e.value.construct == construct


def test_opaque_command_is_rejected():
    with pytest.raises(QueryRejected) as e:
        parse("VACUUM FULL patients", "postgres")
    assert "VACUUM" in e.value.construct or "statement" in e.value.construct


def test_one_select_parses():
    assert parse("SELECT a FROM t WHERE b = 1;", "mysql").tree.key == "select"


@pytest.mark.parametrize("sql,where", [("SELECT * FROM t WHERE a >", "line 1, column 25"), ("SELECT (", "column 8")])
def test_a_syntax_error_says_where_in_the_users_words(sql, where):
    """Not the parser's internals: it used to say "missing for <class 'sqlglot.expressions.core.GT'>"."""
    with pytest.raises(QueryRejected) as e:
        parse(sql, "postgres")
    assert e.value.construct == "unparsable SQL" and where in e.value.message
    assert "sqlglot" not in e.value.message and "class" not in e.value.message

"""Every statement is written with sqlglot raising on what the dialect cannot express: a
construct is refused by name, never dropped (sqlglot ignores the string "RAISE")."""
from __future__ import annotations

import sqlite3

import pytest
import sqlglot

from sqlanon.errors import QueryRejected
from sqlanon.sql.write import write
from tests.helpers import connect

SAMPLED = "SELECT zip FROM wards TABLESAMPLE (10 PERCENT)"


@pytest.mark.parametrize("dialect", ["sqlite", "mysql"])
def test_a_construct_the_dialect_cannot_write_is_refused(dialect):
    with pytest.raises(QueryRejected) as e:
        write(sqlglot.parse_one(SAMPLED, read="postgres"), dialect)
    assert e.value.construct == "SQL the database cannot express" and "TABLESAMPLE" in str(e.value)


@pytest.mark.parametrize("dialect", ["sqlite", "mysql", "postgres"])
def test_what_the_dialect_writes_is_written(dialect):
    sql = "SELECT zip FROM wards WHERE zip > '1'"
    assert write(sqlglot.parse_one(sql), dialect) == sql


def test_a_pass_through_query_is_not_run_without_its_sampling(tmp_path):
    path = tmp_path / "x.db"
    with sqlite3.connect(path) as con:
        con.execute("CREATE TABLE wards (zip TEXT)")
        con.execute("CREATE TABLE patients (name TEXT, age INT)")
    policy = {"tables": {"patients": {"identifiers": ["name"], "quasi_identifiers": {"age": {"type": "suppress"}},
                                      "privacy": {"k": 2}}}}
    with connect(f"sqlite:///{path}", policy=policy) as db:
        with pytest.raises(QueryRejected, match="TABLESAMPLE"):
            db.execute(SAMPLED)

"""The PostgreSQL front-end's parts without a server: framing bounds, SCRAM in both roles,
values on the wire, and the gate's decisions as data (statement → what reaches the database)."""
from __future__ import annotations

import asyncio
import struct
from collections import deque
from decimal import Decimal
from pathlib import Path
from types import SimpleNamespace

import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st
from psycopg.types.numeric import DecimalBinaryDumper

from sqlanon.errors import QueryRejected
from sqlanon.parse import parse
from sqlanon.proxy.pg import catalog, codec, extended, gate, values
from sqlanon.proxy.pg.auth import AuthFailed, ScramClient, ScramServer
from sqlanon.proxy.pg.extended import Statement, bound_sql
from sqlanon.proxy.pg.session import PgSession
from sqlanon.proxy.users import ScramVerifier

PSQL_QUERIES = [q for q in (Path(__file__).parent / "fixtures" / "pg_catalog_psql.sql").read_text().split("-- next")
                if q.strip()]


def test_framer_bounds_lengths_before_buffering():
    f = codec.Framer()
    f.startup = False
    f.feed(b"Q" + struct.pack("!i", codec.MAX_MESSAGE + 1))
    with pytest.raises(codec.ProtocolViolation):
        f.next()
    f = codec.Framer()
    f.feed(struct.pack("!i", 3))
    with pytest.raises(codec.ProtocolViolation):
        f.next()


def test_framer_splits_messages_across_reads():
    data = codec.query("SELECT 1") + codec.SYNC
    f = codec.Framer()
    f.startup = False
    out = []
    for i in range(len(data)):
        f.feed(data[i:i + 1])
        while (m := f.next()) is not None:
            out.append(m)
    assert out == [(b"Q", b"SELECT 1\0"), (b"S", b"")]


def _login(verifier: ScramVerifier | None, password: str) -> bytes:
    server, client = ScramServer(verifier, "alice"), ScramClient(password)
    first = server.first("SCRAM-SHA-256", client.first())
    final = server.final(client.final(first))
    client.check(final)
    return final


def test_scram_roles_agree_and_fail_alike():
    v = ScramVerifier.make("right", iterations=64)
    assert _login(v, "right").startswith(b"v=")
    messages = []
    for verifier, password in ((v, "wrong"), (None, "right")):
        with pytest.raises(AuthFailed) as e:
            _login(verifier, password)
        messages.append(str(e.value))
    assert messages[0] == messages[1]


def test_scram_refuses_channel_binding_and_other_mechanisms():
    with pytest.raises(AuthFailed):
        ScramServer(None, "x").first("SCRAM-SHA-256-PLUS", b"p=tls-server-end-point,,n=,r=abc")
    with pytest.raises(AuthFailed):
        ScramServer(None, "x").first("SCRAM-SHA-256", b"p=tls-server-end-point,,n=,r=abc")


@given(st.decimals(allow_nan=False, allow_infinity=False).filter(lambda d: abs(d) < Decimal("1e30")))
def test_numeric_binary_agrees_with_psycopg(d):
    theirs = bytes(DecimalBinaryDumper(Decimal).dump(d))  # psycopg's own encoder as the oracle
    assert values.numeric_binary(d) == theirs
    assert values.binary_numeric(theirs) == d


@pytest.mark.parametrize("oid,fmt,raw,sql", [
    (values.INT4, 1, struct.pack("!i", -7), "-7"),
    (values.INT8, 0, b"42", "42"),
    (values.FLOAT8, 1, struct.pack("!d", 1.5), "CAST(1.5 AS DOUBLE PRECISION)"),
    (values.NUMERIC, 0, b"12.50", "12.50"),
    (values.TEXT, 0, b"it's", "'it''s'"),
    (0, 0, b"2020-01-02", "'2020-01-02'"),
    (values.BOOL, 1, b"\x01", "TRUE"),
    (values.DATE, 1, struct.pack("!i", 1), "CAST('2000-01-02' AS DATE)"),
    (values.INT4, 0, None, "CAST(NULL AS INT)"),
])
def test_parameters_become_typed_literals(oid, fmt, raw, sql):
    assert values.literal(oid, fmt, raw).sql("postgres") == sql


@pytest.mark.parametrize("oid,fmt,raw,error", [
    (values.INT4, 0, b"1; DROP TABLE x", values.BadValue),
    (values.TEXT, 0, b"a\0b", values.BadValue),
    (values.DATE, 0, b"yesterday", values.BadValue),
    (3802, 0, b"{}", values.Unsupported),  # jsonb
    (0, 1, b"\x00", values.Unsupported),
])
def test_bad_and_unknown_parameters_are_refused(oid, fmt, raw, error):
    with pytest.raises(error):
        values.literal(oid, fmt, raw)


def test_substitution_is_by_tree_not_text():
    tree = sqlglot.parse_one("SELECT a FROM t WHERE b = $1 AND c = $2 AND d = $1", read="postgres")
    out = values.substitute(tree, [values.literal(0, 0, b"x' OR '1'='1"), values.literal(values.INT4, 0, b"3")])
    assert out.sql("postgres") == "SELECT a FROM t WHERE b = 'x'' OR ''1''=''1' AND c = 3 AND d = 'x'' OR ''1''=''1'"
    with pytest.raises(values.BadValue):
        values.substitute(sqlglot.parse_one("SELECT $3", read="postgres"), [])


def test_a_prepared_statement_is_parsed_once_and_every_bind_gets_its_own_values(monkeypatch):
    stmt = Statement("SELECT a FROM t WHERE b = $1", [values.INT4])
    parses = []
    monkeypatch.setattr(extended, "parse", lambda *a: parses.append(a) or parse(*a))

    def bind(raw: bytes) -> codec.Bind:
        return codec.Bind("", "", [0], [raw], [])

    assert bound_sql(stmt, bind(b"3")) == "SELECT a FROM t WHERE b = 3"
    assert bound_sql(stmt, bind(b"4")) == "SELECT a FROM t WHERE b = 4"
    assert bound_sql(stmt, None) == "SELECT a FROM t WHERE b = CAST(NULL AS INT)"
    assert len(parses) == 1 and stmt.tree is not None
    assert stmt.tree.sql("postgres") == "SELECT a FROM t WHERE b = $1"  # never bound in place


def test_a_cached_decision_holds_only_for_its_schema_and_policy(monkeypatch):
    """The session remembers a statement's decision, but decides again once the schema was read
    again or the policy is another: a stale pass-through must never outlive either."""
    decided = []
    monkeypatch.setattr(gate, "decide", lambda sql, session: decided.append(sql) or gate.Decision("relay", sql))
    s = PgSession.__new__(PgSession)
    s._cache, s.pending, s.skipping, s.backend = {}, deque(), False, None
    s.front = SimpleNamespace(decide=None)
    s.session = SimpleNamespace(db=SimpleNamespace(tables={}), policy=object())

    async def decide_three_times() -> None:
        for _ in range(3):
            assert (await s.decide("SELECT 1")).sql == "SELECT 1"

    asyncio.run(decide_three_times())
    assert len(decided) == 1
    s.session.policy = object()
    asyncio.run(decide_three_times())
    assert len(decided) == 2
    s.session.db.tables = {}
    asyncio.run(decide_three_times())
    assert len(decided) == 3


SESSION = [
    ("SET application_name = 'x'", "SET \"application_name\" = 'x'"),
    ("set application_name to x;", "SET \"application_name\" = 'x'"),
    ("SET LOCAL statement_timeout = 5000", "SET LOCAL \"statement_timeout\" = '5000'"),
    ("SET DateStyle = ISO, MDY", "SET \"datestyle\" = 'ISO', 'MDY'"),
    ("SET TIME ZONE 'UTC'", "SET \"timezone\" = 'UTC'"),
    ("SET TimeZone TO DEFAULT", "SET \"timezone\" TO DEFAULT"),
    ("RESET application_name", "RESET \"application_name\""),
    ("SHOW server_version", "SHOW \"server_version\""),
    ("show transaction isolation level", "SHOW TRANSACTION ISOLATION LEVEL"),
    ("BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY", "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY"),
    ("START TRANSACTION", "BEGIN"),
    ("end", "COMMIT"),
    ("abort work", "ROLLBACK"),
    ("SAVEPOINT s1", "SAVEPOINT \"s1\""),
    ("ROLLBACK TO s1", "ROLLBACK TO SAVEPOINT \"s1\""),
    ("RELEASE s1", "RELEASE SAVEPOINT \"s1\""),
]


@pytest.mark.parametrize("sql,sent", SESSION, ids=[s for s, _ in SESSION])
def test_session_statements_are_rebuilt(sql, sent):
    d = gate.decide(sql, None)  # type: ignore[arg-type] - no statement here reaches the library
    assert (d.kind, d.sql) == ("relay", sent)


REFUSED = ["SET search_path = public", "SET ROLE x", "SET SESSION AUTHORIZATION x", "SET client_encoding = 'LATIN1'",
           "SET application_name = \"x\"", "SET statement_timeout = '1; DROP'", "RESET ALL", "SHOW ALL",
           "SHOW is_superuser", "BEGIN; SELECT 1", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", "START x",
           "'SET' x", "VACUUM", "NOTIFY x", "COMMIT AND CHAIN"]


class _Recorder:
    def record(self, *args, **kw) -> None:
        self.last = (args, kw)


@pytest.mark.parametrize("sql", REFUSED)
def test_session_statements_refused(sql):
    rec = _Recorder()
    with pytest.raises(QueryRejected):
        gate.decide(sql, rec)  # type: ignore[arg-type]
    assert rec.last[0][1] == "rejected"


@pytest.mark.parametrize("sql", PSQL_QUERIES, ids=[f"psql-{i}" for i in range(len(PSQL_QUERIES))])
def test_psql_catalog_queries_pass_the_catalog_allowlist(sql):
    d = gate.decide(sql, _Recorder())  # type: ignore[arg-type]
    assert d.kind == "relay"
    assert sqlglot.parse_one(d.sql, read="postgres") == sqlglot.parse_one(sql.strip().rstrip(";"), read="postgres")


def test_catalog_lists_exclude_statistics_and_secrets():
    for name in ("pg_statistic", "pg_stats", "pg_stat_activity", "pg_authid", "pg_shadow", "pg_largeobject",
                 "pg_statistic_ext_data", "pg_settings", "pg_user_mapping", "pg_sequences"):
        assert name not in catalog.RELATIONS
    for name in ("pg_read_file", "query_to_xml", "dblink", "pg_relation_size", "pg_table_size", "lo_get",
                 "set_config", "current_setting", "pg_ls_dir"):
        assert name not in catalog.CALLS


def test_data_rows_encode_values_lengths_and_nulls():
    encoders = [values.TEXT_OUT[values.INT8], values.TEXT_OUT[values.TEXT], values.BINARY_OUT[values.FLOAT8]]
    out = codec.data_rows([(12, None, 1.5), (-3, "ä", 0.0)], encoders)
    first = struct.pack("!h", 3) + struct.pack("!i", 2) + b"12" + b"\xff\xff\xff\xff" + struct.pack("!id", 8, 1.5)
    second = struct.pack("!h", 3) + struct.pack("!i", 2) + b"-3" + struct.pack("!i", 2) + "ä".encode() \
        + struct.pack("!id", 8, 0.0)
    assert out == codec.message(b"D", first) + codec.message(b"D", second)

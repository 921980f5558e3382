"""Real clients against the MySQL front-end: PyMySQL, mysql-connector-python (server-side prepared
statements), SQLAlchemy and the mariadb CLI, with and without TLS."""
from __future__ import annotations

import socket
import ssl
import struct
import subprocess
from decimal import Decimal

import mysql.connector
import pymysql
import pytest
import sqlalchemy as sa

from sqlanon import demo
from sqlanon.proxy.mysql import codec
from tests.helpers import assert_alpha_k
from tests.proxy.mysql_harness import PASSWORDS, env  # noqa: F401 - fixture

QUERY = "SELECT age, sex, zip, disease FROM patients"
STRICT_PROXY = True


@pytest.mark.parametrize("user", ["alice", "bob"])  # mysql_native_password; caching_sha2 full auth by RSA
def test_login_and_wrong_passwords_look_alike(env, user):
    with env.connect(user) as c, c.cursor() as cur:
        cur.execute("SELECT 1")
        assert cur.fetchall() == ((1,),)
    messages = []
    for name, password in [(user, "wrong"), ("nobody", "wrong"), (user, "")]:
        with pytest.raises(pymysql.err.OperationalError) as e:
            env.connect(name, password)
        assert e.value.args[0] == 1045
        messages.append(e.value.args[1].replace(f"'{name}'", "'?'"))
    assert len(set(messages)) == 1 and "password" not in messages[0].lower()


def test_caching_sha2_fast_path_after_full_authentication(env):
    # mysql-connector does caching_sha2 full authentication only over TLS; once it succeeded,
    # the proxy knows SHA256(SHA256(password)) and the same client logs in without TLS.
    with pytest.raises(mysql.connector.Error):
        mysql.connector.connect(host="127.0.0.1", port=env.port, user="bob", password="bob-pw-wrong",
                                ssl_disabled=True, use_pure=True)
    with mysql.connector.connect(host="127.0.0.1", port=env.port, user="bob", password=PASSWORDS["bob"],
                                 database=env.database, use_pure=True, ssl_verify_cert=False) as c:
        assert c.is_connected()
    with mysql.connector.connect(host="127.0.0.1", port=env.port, user="bob", password=PASSWORDS["bob"],
                                 database=env.database, use_pure=True, ssl_disabled=True) as c:
        cur = c.cursor()
        cur.execute("SELECT 2")
        assert cur.fetchall() == [(2,)]


def test_tls_by_default_and_required(env):
    with env.connect("bob", ssl_disabled=False, ssl={"check_hostname": False}) as c:  # PyMySQL pipelines TLS
        assert c._sock.version().startswith("TLS")
        with c.cursor() as cur:
            cur.execute(QUERY)
            assert len(cur.fetchall()) > 0
    strict = env.strict.port
    with pytest.raises(pymysql.err.OperationalError) as e:
        env.connect("alice", port=strict)
    assert e.value.args[0] == 3159
    with env.connect("alice", port=strict, ssl_disabled=False, ssl={"check_hostname": False}) as c, \
            c.cursor() as cur:
        cur.execute("SELECT 3")
        assert cur.fetchall() == ((3,),)


def test_pass_through_is_what_the_database_says(env):
    queries = ["SELECT * FROM items ORDER BY id", "SELECT id, price * 2 AS p, amount FROM items WHERE id > 1",
               "SELECT COUNT(*) AS n, MAX(day) FROM items"]
    with env.connect() as proxied, env.direct() as direct:
        for q in queries:
            with proxied.cursor() as a, direct.cursor() as b:
                a.execute(q)
                b.execute(q)
                assert a.description == b.description
                assert a.fetchall() == b.fetchall() and a.rowcount == b.rowcount
        with proxied.cursor() as cur:
            cur.execute("SELECT amount, name FROM items WHERE id = 3")
            assert cur.fetchall() == ((Decimal("-7.500"), "o'brien \\ \"q\""),)
            cur.execute("SET autocommit = 0")
            assert proxied.get_autocommit() is False  # the database's own status flags


def test_anonymized_rows_satisfy_the_policy(env):
    with env.connect("bob") as c, c.cursor() as cur:
        cur.execute(QUERY)
        rows = cur.fetchall()
        assert [d[0] for d in cur.description] == ["age", "sex", "zip", "disease"]
    names = {p[0] for p in demo.PATIENTS}
    assert rows and not any(v in names for r in rows for v in r)
    assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)


def test_prepared_statements_over_protected_and_unprotected_tables(env):
    with mysql.connector.connect(host="127.0.0.1", port=env.port, user="alice", password=PASSWORDS["alice"],
                                 database=env.database, use_pure=True, ssl_disabled=True) as c:
        cur = c.cursor(prepared=True)
        cur.execute("SELECT age, sex, zip, disease FROM patients WHERE age > ? AND sex <> ?", (20, "x' OR '1'='1"))
        rows = cur.fetchall()
        assert rows
        assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
        cur.execute("SELECT id, name, price, amount, day FROM items WHERE id = ? OR name = ?", (1, "o'brien \\ \"q\""))
        got = sorted(cur.fetchall())
        assert [r[0] for r in got] == [1, 3] and got[0][2] == 1.5 and got[1][3] == Decimal("-7.500")
        with pytest.raises(mysql.connector.Error) as e:
            cur.execute("SELECT name FROM patients WHERE age = ?", (30,))
        assert e.value.errno == 1227 and e.value.sqlstate == "42501"
        cur.execute("SELECT COUNT(*) FROM items WHERE day < ?", ("2000-01-01",))
        assert cur.fetchall() == [(1,)]
        # described at prepare time, as C clients (libmariadb) need: the anonymized result's names
        described = c.cmd_stmt_prepare(b"SELECT age, COUNT(*) AS n FROM patients WHERE age > ? GROUP BY age")
        assert (described["num_params"], [col[0] for col in described["columns"]]) == (1, ["age", "n"])


def test_rejection_is_an_error_with_sqlstate_and_the_session_goes_on(env):
    with env.connect() as c, c.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("SELECT name FROM patients")
        assert e.value.args[0] == 1227 and "identifier column" in e.value.args[1]
        cur.execute("SELECT 42")
        assert cur.fetchall() == ((42,),)
    with mysql.connector.connect(host="127.0.0.1", port=env.port, user="alice", password=PASSWORDS["alice"],
                                 database=env.database, use_pure=True, ssl_disabled=True) as c:
        cur = c.cursor()
        with pytest.raises(mysql.connector.Error) as e:
            cur.execute("SELECT name FROM patients")
        assert (e.value.errno, e.value.sqlstate) == (1227, "42501")


def test_sqlalchemy(env):
    engine = sa.create_engine(f"mysql+pymysql://bob:{PASSWORDS['bob']}@127.0.0.1:{env.port}/{env.database}",
                              connect_args={"ssl_disabled": True})
    try:
        with engine.connect() as c:
            assert sorted(sa.inspect(c).get_table_names()) == ["items", "patients"]
            assert [col["name"] for col in sa.inspect(c).get_columns("items")] == \
                ["id", "name", "price", "amount", "day"]
            rows = c.execute(sa.text("SELECT age, sex, zip, disease FROM patients WHERE age > :a"), {"a": 10}).all()
            assert_alpha_k([tuple(r) for r in rows], qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
            c.commit()
    finally:
        engine.dispose()


@pytest.mark.parametrize("ssl", ["--ssl", "--skip-ssl"])
def test_mariadb_cli(env, ssl):
    def cli(*args: str, password: str = PASSWORDS["bob"]) -> subprocess.CompletedProcess:
        return subprocess.run(["mariadb", "--no-defaults", "-h127.0.0.1", f"-P{env.port}", "-ubob",
                               f"-p{password}", ssl, "--batch", env.database, *args],
                              capture_output=True, text=True, timeout=30)

    out = cli("-e", "SELECT id, name FROM items ORDER BY id; SHOW TABLES; " + QUERY)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:3] == ["id\tname", "1\tapple", "2\tNULL"] and "patients" in lines
    released = [tuple(line.split("\t")) for line in lines[lines.index("age\tsex\tzip\tdisease") + 1:]]
    assert_alpha_k(released, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
    bad = cli("-e", "SELECT name FROM patients")
    assert bad.returncode == 1 and "ERROR 1227 (42501)" in bad.stderr
    denied = cli("-e", "SELECT 1", password="nope")
    assert denied.returncode == 1 and "ERROR 1045 (28000)" in denied.stderr


def test_reset_connection_returns_to_the_state_after_login(env):
    with mysql.connector.connect(host="127.0.0.1", port=env.port, user="alice", password=PASSWORDS["alice"],
                                 database=env.database, use_pure=True, ssl_disabled=True) as c:
        cur = c.cursor()
        cur.execute("SELECT @@time_zone")
        (zone,), = cur.fetchall()
        cur.execute("SET time_zone = '+05:00'")
        assert c.cmd_reset_connection()
        cur.execute("SELECT @@time_zone")
        assert cur.fetchall() == [(zone,)]


def test_tls_hello_right_behind_the_ssl_request(env):
    """The race: SSLRequest and ClientHello in one segment, before any answer."""
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    with socket.create_connection(("127.0.0.1", env.port), timeout=5) as s:
        head = s.recv(4, socket.MSG_WAITALL)
        s.recv(int.from_bytes(head[:3], "little"), socket.MSG_WAITALL)
        request = struct.pack("<IIB", codec.SSL | codec.PROTOCOL_41 | codec.SECURE_CONNECTION, 1 << 24, 45)
        pending = codec.frame(request + bytes(23), 1)[0]
        while True:
            try:
                tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                s.sendall(pending + outgoing.read())
                pending = b""
                incoming.write(s.recv(65536))  # times out if the proxy swallowed the hello
        assert tls.version().startswith("TLS")


def test_field_list_of_tables_of_the_database_only(env):
    """COM_FIELD_LIST (the mariadb CLI's completion): column definitions, no data."""
    with env.connect() as c:
        c._execute_command(pymysql.constants.COMMAND.COM_FIELD_LIST, "patients\0")
        names = []
        while not (packet := c._read_packet()).is_eof_packet():
            names.append(pymysql.protocol.FieldDescriptorPacket(packet._data, c.encoding).name)
        assert names == ["name", "age", "sex", "zip", "nationality", "disease"]
        c._execute_command(pymysql.constants.COMMAND.COM_FIELD_LIST, "user\0")
        with pytest.raises(pymysql.err.MySQLError) as e:
            c._read_packet()
        assert e.value.args[0] == 1227
        with c.cursor() as cur:
            cur.execute("SELECT 5")
            assert cur.fetchall() == ((5,),)

"""What a ``query`` command's start costs (issue 27): the modules it loads and the connections it
opens. Other commands' libraries (alembic, the proxies, OpenDP, NumPy, Spark), differential
privacy's rewriting and other databases' drivers stay unloaded; a session opens one pipeline
connection (no probe connection of its own) and one of the login's own, whose check that the
database refuses raw reads still runs."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from typing import Any

import sqlalchemy as sa
import yaml

import sqlanon
from tests.backends.test_worked_examples import PATIENT_COLS, PATIENT_POLICY, PATIENTS
from tests.helpers import load_table, restricted

#: print the process's modules as it exits (sys.exit of click's standalone mode included)
CHILD = """
import atexit, json, runpy, sys
atexit.register(lambda: print("MODULES " + json.dumps(sorted(sys.modules))))
sys.argv = ["sqlanon", *sys.argv[1:]]
runpy.run_module("sqlanon", run_name="__main__")
"""

#: modules of other commands, of the DP path, of libraries a query never needs
NEVER = ("alembic", "pyspark", "sqlanon.proxy", "sqlanon.discover", "sqlanon.distributed", "sqlanon.dp.rewrite",
         "sqlanon.dp.release", "sqlanon.dp.mechanisms", "sqlanon.demo")
#: not at start-up: OpenDP (and the NumPy it loads) draws the noise of a count a release withholds
NOT_AT_START = ("numpy", "opendp")


def _among(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_the_command_line_loads_no_other_commands_modules():
    out = subprocess.run([sys.executable, "-c", "import json, sys, sqlanon.cli; print(json.dumps(sorted(sys.modules)))"],
                         capture_output=True, text=True, timeout=60, check=True)
    assert not _among(set(json.loads(out.stdout)), NEVER + NOT_AT_START)
#: each backend's driver; the others' must not be loaded
DRIVERS = {"sqlite": "sqlite3", "postgresql": "psycopg", "mysql": "pymysql"}


def test_a_query_loads_no_other_commands_modules(db_url, backend, tmp_path):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    policy = tmp_path / "policy.yml"
    policy.write_text(yaml.safe_dump(PATIENT_POLICY, allow_unicode=True), encoding="utf-8")
    login, reader = restricted(db_url, str(policy))
    out = subprocess.run([sys.executable, "-c", CHILD, "--reader-role", reader, "query", "--db", login, "--policy",
                          str(policy), "--format", "csv", "--no-report", "SELECT age, sex, zip, disease FROM patients"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("age,sex,zip,disease\n")
    modules = set(json.loads(out.stdout.rsplit("MODULES ", 1)[1]))
    assert not _among(modules, NEVER)
    assert DRIVERS[backend] in modules and "pymysql" not in modules - {DRIVERS[backend]}


def test_a_session_opens_two_connections_and_still_checks_the_login(db_url, backend, tmp_path):
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    login, reader = restricted(db_url, PATIENT_POLICY)
    made: list[object] = []
    ours = _database_name(db_url)

    def count(dbapi_conn: object, _record: object) -> None:
        # every pool of the process is heard: count only this test's database (a proxy thread
        # of an earlier test, or a catalog elsewhere, may connect meanwhile)
        if _connected_to(dbapi_conn) == ours:
            made.append(dbapi_conn)

    sa.event.listen(sa.pool.Pool, "connect", count)
    try:
        with sqlanon.connect(login, PATIENT_POLICY, reader_role=reader) as s:
            # the pipeline's, the login's own for the check
            assert s.db.enforced and len(made) == 2, [type(c).__name__ for c in made]
            if backend != "sqlite":
                assert s.db.reader == reader
            s.execute("SELECT age, sex FROM patients")
        # the same login without the reader role cannot read the tables: refused, as before
        if backend != "sqlite":
            try:
                sqlanon.connect(login, PATIENT_POLICY, catalog=False, reader_role="no_such_role_here")
            except sqlanon.BackendError as e:
                assert "cannot read" in e.message
            else:
                raise AssertionError("a login that cannot take on its reader role was served")
    finally:
        sa.event.remove(sa.pool.Pool, "connect", count)


def _database_name(url: str) -> str:
    name = sa.engine.make_url(url).database or ""
    return os.path.realpath(name) if url.startswith("sqlite") else name


def _connected_to(dbapi_conn: Any) -> str:
    """The database a new DBAPI connection reached, as the driver tells it."""
    if isinstance(dbapi_conn, sqlite3.Connection):
        return os.path.realpath(dbapi_conn.execute("PRAGMA database_list").fetchall()[0][2])
    info = getattr(dbapi_conn, "info", None)
    if info is not None and hasattr(info, "dbname"):  # psycopg
        return str(info.dbname)
    db = getattr(dbapi_conn, "db", b"")  # PyMySQL
    return db.decode() if isinstance(db, bytes) else str(db)


def test_the_policys_fault_is_told_first_while_the_login_is_checked_alongside(db_url):
    """The policy's checks run while the login's own connection is asked; their failure comes
    first, as when they ran before, and a login that reads the tables is still refused."""
    load_table(db_url, "patients", PATIENT_COLS, PATIENTS)
    table = PATIENT_POLICY["tables"]["patients"]
    wrong = {"tables": {"patients": {**table, "insensitive": [*table.get("insensitive", []), "no_such_column"]}}}
    try:
        sqlanon.connect(db_url, wrong, catalog=False)  # the administrator: reads every table
    except sqlanon.PolicyError as e:
        assert "no_such_column" in str(e)
    else:
        raise AssertionError("a policy naming a missing column was served")
    login, _ = restricted(db_url, PATIENT_POLICY)
    if login != db_url:  # a database with logins: the administrator's reads are refused
        try:
            sqlanon.connect(db_url, PATIENT_POLICY, catalog=False)
        except sqlanon.BackendError as e:
            assert "lets this login read" in e.message
        else:
            raise AssertionError("a login that reads the protected tables was served")


def test_a_withheld_count_is_noised_without_opendps_extras():
    """The noise of a count a release withholds (verify/noise.py) and of differential privacy's
    answers (dp/mechanisms.py) loads OpenDP's measurements, not its prelude's extras (NumPy's,
    scikit-learn's, Polars' front-ends: 0.02-0.03 s of a CLI query); the draws are still discrete
    Laplace of scale 2."""
    code = ("import json, sys\nfrom sqlanon.verify.noise import noise\nfrom sqlanon.dp import mechanisms\n"
            "mechanisms.laplace([1, 2], 1, 0.5, True)\nmechanisms.threshold({'a': 50}, 1, 1.0, 1e-6)\n"
            "print(json.dumps([[noise() for _ in range(4000)], sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    draws, modules = json.loads(out.stdout)
    assert not _among(set(modules), ("opendp.extras", "opendp.prelude"))
    # two-sided geometric, a = exp(-1/2): P(0) = (1 - a) / (1 + a) = 0.245, E|X| = 2a / (1 - a²) = 1.92
    assert 0.21 < draws.count(0) / len(draws) < 0.28
    assert 1.75 < sum(abs(d) for d in draws) / len(draws) < 2.1

"""The PostgreSQL front-end with the real ``psql``: login, TLS on and off, required TLS,
``\\dt`` and ``\\d``, a refusal, and an anonymized answer."""
from __future__ import annotations

import csv
import io
import os
import shutil
import subprocess

import pytest

from tests.helpers import assert_alpha_k
from tests.proxy.certs import make_certificate
from tests.proxy.pg_support import PASSWORD, pg_proxy, start_proxy  # noqa: F401 - fixture

PSQL = shutil.which("psql")


def psql(running, *args: str, sslmode: str = "disable", password: str = PASSWORD, user: str = "alice",
         port: int | None = None) -> subprocess.CompletedProcess:
    if PSQL is None:
        pytest.fail("psql not found (Debian package postgresql-client)")
    env = dict(os.environ, PGPASSWORD=password, PGSSLMODE=sslmode, PGCONNECT_TIMEOUT="10")
    env.pop("PGOPTIONS", None)
    cmd = [PSQL, "-X", "-h", "127.0.0.1", "-p", str(port or running.port), "-U", user, "-d", running.database,
           "-v", "ON_ERROR_STOP=1", *args]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("sslmode", ["disable", "require"])
def test_psql_query_over_tls_or_not(pg_proxy, sslmode):
    out = psql(pg_proxy, "-A", "-t", "-c", "SELECT ward, floor FROM wards ORDER BY ward", sslmode=sslmode)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["A|1", "B|2", "C|3"]
    info = psql(pg_proxy, "-c", "\\conninfo", sslmode=sslmode)
    assert ("SSL connection" in info.stdout) == (sslmode == "require"), info.stdout


def test_psql_wrong_password(pg_proxy):
    out = psql(pg_proxy, "-c", "SELECT 1", password="nope")
    assert out.returncode != 0 and 'password authentication failed for user "alice"' in out.stderr


def test_psql_describe_tables(pg_proxy):
    out = psql(pg_proxy, "-c", "\\dt")
    assert out.returncode == 0, out.stderr
    assert all(name in out.stdout for name in ("patients", "wards", "numbers"))
    out = psql(pg_proxy, "-c", "\\d patients")
    assert out.returncode == 0, out.stderr
    assert 'Table "public.patients"' in out.stdout
    assert all(c in out.stdout for c in ("name", "age", "zip", "disease", "integer"))
    for command in ("\\l", "\\dn", "\\du", "\\dT", "\\df", "\\dv", "\\d+ wards"):
        out = psql(pg_proxy, "-c", command)
        assert out.returncode == 0, (command, out.stderr)
    out = psql(pg_proxy, "-c", "\\dt+")  # sizes are statistics: refused, by name
    assert out.returncode != 0 and "pg_size_pretty" in out.stderr.lower()


def test_psql_anonymized_csv_and_refusal(pg_proxy):
    out = psql(pg_proxy, "--csv", "-c", "SELECT age, sex, zip, disease FROM patients")
    assert out.returncode == 0, out.stderr
    rows = [tuple(r) for r in csv.reader(io.StringIO(out.stdout))][1:]
    assert len(rows) >= 11
    assert_alpha_k(rows, qi=[0, 1, 2], sens=3, k=2, alpha=0.5)
    out = psql(pg_proxy, "-c", "SELECT name FROM patients")
    assert out.returncode != 0 and "identifier column" in out.stderr
    script = "SELECT name FROM patients;\nSELECT COUNT(*) AS n FROM wards;\n"
    out = subprocess.run([PSQL, "-X", "-h", "127.0.0.1", "-p", str(pg_proxy.port), "-U", "alice", "-d",
                          pg_proxy.database, "-A", "-t"], input=script, capture_output=True, text=True, timeout=60,
                         env=dict(os.environ, PGPASSWORD=PASSWORD, PGSSLMODE="disable"))
    assert "identifier column" in out.stderr and out.stdout.strip() == "3"  # the session went on


def test_require_tls(pg_proxy, tmp_path):
    cert, key = make_certificate(tmp_path)
    proxy, port = start_proxy(pg_proxy, tls_cert=cert, tls_key=key, require_tls=True)
    try:
        out = psql(pg_proxy, "-c", "SELECT 1", port=port, sslmode="disable")
        assert out.returncode != 0 and "TLS" in out.stderr
        out = psql(pg_proxy, "-A", "-t", "-c", "SELECT COUNT(*) FROM wards", port=port, sslmode="require")
        assert out.returncode == 0 and out.stdout.strip() == "3", out.stderr
    finally:
        proxy.stop()


def test_no_tls_configured_means_no_tls(pg_proxy):
    proxy, port = start_proxy(pg_proxy)
    try:
        assert psql(pg_proxy, "-c", "SELECT 1", port=port, sslmode="require").returncode != 0
        assert psql(pg_proxy, "-c", "SELECT 1", port=port, sslmode="prefer").returncode == 0
    finally:
        proxy.stop()


def test_start_up_settings_stay_with_their_client(pg_proxy):
    env = dict(os.environ, PGPASSWORD=PASSWORD, PGSSLMODE="disable", PGTZ="Europe/Berlin", PGDATESTYLE="German")
    cmd = [PSQL, "-X", "-A", "-t", "-h", "127.0.0.1", "-p", str(pg_proxy.port), "-U", "alice", "-d",
           pg_proxy.database, "-c", "SHOW TimeZone", "-c", "SELECT opened FROM wards WHERE ward = 'A'"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["Europe/Berlin", "02.01.2020"]
    plain = psql(pg_proxy, "-A", "-t", "-c", "SHOW TimeZone")
    assert plain.stdout.strip() != "Europe/Berlin"
    env["PGTZ"] = "'; SET role postgres; --"
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "not accepted" in out.stderr

"""Start real PostgreSQL and MariaDB servers from local binaries in a temp directory.

PostgreSQL refuses to run as root, so it runs as the
``postgres`` user from a directory that user can enter; MariaDB runs as root with a fresh
datadir and utf8mb4 as the server character set (its default collation stays case-insensitive,
as users' servers have it).
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

PG_BIN_DIRS = ("/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin",
               "/usr/lib/postgresql/14/bin", "/usr/lib/postgresql/13/bin")


@dataclass
class Server:
    url: str
    stop: "callable"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_bin() -> Path | None:
    for d in PG_BIN_DIRS:
        if Path(d, "initdb").exists():
            return Path(d)
    found = shutil.which("initdb")
    return Path(found).resolve().parent if found else None


def start_postgres() -> Server:
    bindir = _pg_bin()
    if bindir is None:
        raise RuntimeError("PostgreSQL server binaries not found (Debian package postgresql)")
    base = Path(tempfile.mkdtemp(prefix="sqlanon-pg-", dir="/tmp"))
    os.chmod(base, 0o755)
    password = "sqlanon"
    (base / "pw").write_text(password)
    as_postgres: list[str] = []
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "postgres:postgres", str(base)], check=True)
        as_postgres = ["runuser", "-u", "postgres", "--"]
    port = free_port()
    subprocess.run([*as_postgres, str(bindir / "initdb"), "-D", str(base / "data"), "-U", "postgres",
                    "--auth=scram-sha-256", f"--pwfile={base / 'pw'}", "-E", "UTF8", "--locale=C.UTF-8",
                    "--no-sync"], check=True, capture_output=True)
    subprocess.run([*as_postgres, str(bindir / "pg_ctl"), "-D", str(base / "data"), "-l", str(base / "log"), "-w",
                    "-o", f"-p {port} -c listen_addresses=127.0.0.1 -k {base} -c fsync=off "
                          "-c synchronous_commit=off -c full_page_writes=off", "start"],
                   check=True, capture_output=True)

    def stop() -> None:
        subprocess.run([*as_postgres, str(bindir / "pg_ctl"), "-D", str(base / "data"), "-m", "fast", "-w", "stop"],
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)

    return Server(f"postgresql+psycopg://postgres:{password}@127.0.0.1:{port}/postgres", stop)


def start_mariadb() -> Server:
    mariadbd = shutil.which("mariadbd") or shutil.which("mysqld") or (
        "/usr/sbin/mariadbd" if Path("/usr/sbin/mariadbd").exists() else None)
    install = shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")
    if not mariadbd or not install:
        raise RuntimeError("MariaDB server binaries not found (Debian package mariadb-server)")
    base = Path(tempfile.mkdtemp(prefix="sqlanon-mariadb-", dir="/tmp"))
    port = free_port()
    user = ["--user=root"] if os.geteuid() == 0 else []
    subprocess.run([install, "--no-defaults", f"--datadir={base / 'data'}", *user,
                    "--auth-root-authentication-method=normal", "--skip-test-db"], check=True, capture_output=True)
    proc = subprocess.Popen([mariadbd, "--no-defaults", f"--datadir={base / 'data'}", *user,
                             "--bind-address=127.0.0.1", f"--port={port}", f"--socket={base / 's.sock'}",
                             f"--pid-file={base / 'pid'}", f"--log-error={base / 'err.log'}", "--skip-name-resolve",
                             # its temp tables' files in its own directory, not in a /tmp others clean
                             f"--tmpdir={base}",
                             "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci",
                             "--innodb-flush-log-at-trx-commit=0", "--innodb-buffer-pool-size=512M"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                break
        if proc.poll() is not None:
            raise RuntimeError(f"mariadbd exited: {(base / 'err.log').read_text()[-2000:]}")
        time.sleep(0.1)
    else:
        proc.kill()
        raise RuntimeError("mariadbd did not start within 60 s")

    def stop() -> None:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(base, ignore_errors=True)

    return Server(f"mysql+pymysql://root@127.0.0.1:{port}/mysql", stop)

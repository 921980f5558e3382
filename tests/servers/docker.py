"""Servers from a Docker engine through testcontainers, where one is reachable."""
from __future__ import annotations

from tests.servers.local import Server


def engine_available() -> bool:
    try:
        import docker  # shipped with testcontainers

        docker.from_env(timeout=3).ping()
        return True
    except Exception:  # noqa: BLE001 - no engine, no client, no permission: all mean "not here"
        return False


def start_postgres() -> Server:
    from testcontainers.postgres import PostgresContainer

    c = PostgresContainer("postgres:16", driver="psycopg").start()
    return Server(c.get_connection_url(), c.stop)


def start_mariadb() -> Server:
    from testcontainers.mysql import MySqlContainer  # serves MariaDB images too

    c = MySqlContainer("mariadb:10.11", dialect="pymysql").start()
    return Server(c.get_connection_url(), c.stop)

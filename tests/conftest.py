"""Every test that touches SQL runs on SQLite, PostgreSQL and MariaDB/MySQL.

Servers: a URL from the environment wins (SQLANON_TEST_POSTGRESQL_URL, SQLANON_TEST_MYSQL_URL);
otherwise a Docker engine through testcontainers; otherwise local server binaries started in a
temp directory. With CI=true a backend that cannot be had is an error, never a skip.
Each test gets a fresh, empty database.
"""
from __future__ import annotations

import itertools
import os
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest
import sqlalchemy as sa

from sqlanon.proxy.server import preload
from tests.helpers import drop_logins
from tests.servers import docker, local, spark

# what the library and the proxies import lazily is imported here, before any test starts a
# server thread (see sqlanon.proxy.server.preload: CPython 3.11's AST race between threads)
preload()

ALL = ("sqlite", "postgresql", "mysql", "spark")
#: backends that run only the tests marked for them (``@pytest.mark.spark``): a Spark statement
#: costs a job's scheduling, so the whole suite would take an hour there; ``--spark-all`` runs it
SUBSET = ("spark",)
#: the data sets the tests read, shipped with the repository (data/README.md)
DATASETS = Path(__file__).resolve().parent.parent / "data"
_counter = itertools.count()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--backends", default=os.environ.get("SQLANON_TEST_BACKENDS", ",".join(ALL)),
                     help="comma-separated subset of sqlite,postgresql,mysql,spark")
    parser.addoption("--spark-all", action="store_true", help="run every backend-generic test on spark too")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames:
        chosen = [b.strip() for b in metafunc.config.getoption("--backends").split(",") if b.strip()]
        unknown = set(chosen) - set(ALL)
        if unknown:
            raise pytest.UsageError(f"unknown backends {sorted(unknown)}")
        only = metafunc.definition.get_closest_marker("backends")
        if only is not None:  # a test of what one kind of database does: not run on the others
            chosen = [b for b in chosen if b in only.args]
        elif not metafunc.config.getoption("--spark-all"):
            chosen = [b for b in chosen if b not in SUBSET or metafunc.definition.get_closest_marker(b)]
        metafunc.parametrize("backend", chosen, scope="session")


class ServerPool:
    def __init__(self) -> None:
        self.servers: dict[str, local.Server] = {}
        self.errors: dict[str, str] = {}
        self.docker = None

    def admin_url(self, backend: str) -> str:
        if backend in self.servers:
            return self.servers[backend].url
        if backend in self.errors:
            self._unavailable(backend, self.errors[backend])
        env = os.environ.get(f"SQLANON_TEST_{backend.upper()}_URL")
        try:
            if env:
                self.servers[backend] = local.Server(env, lambda: None)
            else:
                if backend == "spark":
                    self.servers[backend] = spark.start_spark()
                    return self.servers[backend].url
                if self.docker is None:
                    self.docker = docker.engine_available()
                if self.docker:
                    start = docker.start_postgres if backend == "postgresql" else docker.start_mariadb
                else:
                    start = local.start_postgres if backend == "postgresql" else local.start_mariadb
                self.servers[backend] = start()
        except Exception as e:  # noqa: BLE001 - reported below, as an error in CI
            self.errors[backend] = f"{type(e).__name__}: {e}"
            self._unavailable(backend, self.errors[backend])
        return self.servers[backend].url

    @staticmethod
    def _unavailable(backend: str, why: str) -> None:
        msg = f"{backend} server unavailable: {why}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg, pytrace=False)
        pytest.skip(msg)

    def stop(self) -> None:
        for s in self.servers.values():
            s.stop()


@pytest.fixture(scope="session")
def servers():
    pool = ServerPool()
    yield pool
    pool.stop()


@contextmanager
def fresh_database(backend: str, servers: ServerPool, tmp: Path) -> Iterator[str]:
    """URL of a fresh, empty database on ``backend``, dropped afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp / 'test.db'}"
        return
    admin = sa.engine.make_url(servers.admin_url(backend))
    name = f"sqlanon_t{os.getpid()}_{next(_counter)}"
    if backend == "spark":
        with spark_database(name):
            yield admin.set(database=name).render_as_string(hide_password=False)
        return
    engine = sa.create_engine(admin, isolation_level="AUTOCOMMIT")
    quoted = engine.dialect.identifier_preparer.quote_identifier(name)
    with engine.connect() as c:
        c.exec_driver_sql("CREATE DATABASE " + quoted)
    try:
        yield admin.set(database=name).render_as_string(hide_password=False)
    finally:
        with engine.connect() as c:
            c.exec_driver_sql("DROP DATABASE " + quoted + (" WITH (FORCE)" if backend == "postgresql" else ""))
        engine.dispose()
        drop_logins(admin.render_as_string(hide_password=False), name)


@contextmanager
def spark_database(name: str) -> Iterator[None]:
    """A Spark database of the test session's Spark, dropped with its tables afterwards."""
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    session.sql(f"CREATE DATABASE `{name}`")
    try:
        yield
    finally:
        session.sql(f"DROP DATABASE IF EXISTS `{name}` CASCADE")


@pytest.fixture
def db_url(backend: str, servers: ServerPool, tmp_path: Path) -> Iterator[str]:
    with fresh_database(backend, servers, tmp_path) as url:
        yield url


@pytest.fixture(scope="session")
def datasets() -> Path:
    if not DATASETS.is_dir():
        pytest.fail(f"the repository's data sets are missing: {DATASETS}", pytrace=False)
    return DATASETS


@pytest.fixture(scope="module")
def adult_url(backend: str, servers: ServerPool, datasets: Path,
              tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """UCI Adult ('?' as NULL) in a database of its own, loaded once per test module."""
    from tests.helpers import ADULT_COLUMNS, load_table, read_adult

    with fresh_database(backend, servers, tmp_path_factory.mktemp("adult")) as url:
        load_table(url, "adult", ADULT_COLUMNS, read_adult(datasets / "adult" / "adult.data"))
        yield url

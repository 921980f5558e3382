"""Backends: one class per database, chosen by the SQLAlchemy URL's driver family."""
from __future__ import annotations

from sqlalchemy.dialects import registry

from sqlanon.backends.base import Backend
from sqlanon.backends.mysql import MySQLBackend
from sqlanon.backends.postgres import PostgresBackend
from sqlanon.backends.spark import SparkBackend
from sqlanon.backends.sqlite import SQLiteBackend

#: URL backend name (``postgresql+psycopg`` → ``postgresql``) → backend class
REGISTRY: dict[str, type[Backend]] = {
    "sqlite": SQLiteBackend,
    "postgresql": PostgresBackend,
    "mysql": MySQLBackend,
    "mariadb": MySQLBackend,
    "spark": SparkBackend,
}

# spark:// URLs: SQLAlchemy finds the dialect here (pyspark is imported on first connect only)
registry.register("spark", "sqlanon.backends.spark_dialect", "SparkDialect")

__all__ = ["Backend", "REGISTRY", "MySQLBackend", "PostgresBackend", "SparkBackend", "SQLiteBackend"]

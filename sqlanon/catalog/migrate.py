"""Create and upgrade the catalog with Alembic, on the database sqlanon serves.

Migrations run in one transaction where the database allows DDL in transactions (PostgreSQL,
SQLite); MariaDB commits each DDL statement itself. A downgrade drops the catalog's tables
with their rows: only ``sqlanon db downgrade`` does that, never the library.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from sqlanon.backends.connect import Database
from sqlanon.catalog.schema import Names
from sqlanon.resources import data_dir

SCRIPTS = data_dir("migrations")


def _config(conn: sa.Connection, names: Names) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPTS))
    cfg.attributes["connection"] = conn
    cfg.attributes["names"] = names
    return cfg


def _connection(db: Database) -> sa.Connection:
    # the engine runs in autocommit; migrations want a transaction where DDL can be in one
    return db.engine.connect().execution_options(isolation_level="SERIALIZABLE")


def upgrade(db: Database, revision: str = "head") -> str | None:
    names = Names.of(db.backend)
    with _connection(db) as conn:
        if names.schema is not None:
            conn.execute(sa.schema.CreateSchema(names.schema, if_not_exists=True))
            conn.commit()
        command.upgrade(_config(conn, names), revision)
        conn.commit()
    return current(db)


def downgrade(db: Database, revision: str) -> str | None:
    names = Names.of(db.backend)
    with _connection(db) as conn:
        command.downgrade(_config(conn, names), revision)
        conn.commit()
    return current(db)


def current(db: Database) -> str | None:
    """The catalog's revision; None where there is no catalog."""
    names = Names.of(db.backend)
    with db.engine.connect() as conn:
        ctx = MigrationContext.configure(conn, opts={"version_table": names.version_table,
                                                     "version_table_schema": names.schema})
        return ctx.get_current_revision()


def head() -> str:
    return ScriptDirectory(str(SCRIPTS)).get_current_head()


def history() -> list[str]:
    """Every revision, newest first, with its message."""
    return [f"{s.revision}: {s.doc}" for s in ScriptDirectory(str(SCRIPTS)).walk_revisions()]

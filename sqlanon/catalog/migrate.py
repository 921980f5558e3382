"""Create and upgrade the catalog with Alembic, on the database sqlanon serves.

Migrations run in one transaction where the database allows DDL in transactions (PostgreSQL,
SQLite); MariaDB commits each DDL statement itself. A downgrade drops the catalog's tables
with their rows: only ``sqlanon db downgrade`` does that, never the library.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa

from sqlanon.backends.connect import Database
from sqlanon.catalog.schema import Names
from sqlanon.errors import BackendError
from sqlanon.resources import data_dir

if TYPE_CHECKING:
    from alembic.config import Config

SCRIPTS = data_dir("migrations")


def _config(conn: sa.Connection, names: Names) -> Config:
    # Alembic is imported where a migration runs: importing it took 0.1 s of every command's start
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(SCRIPTS))
    cfg.attributes["connection"] = conn
    cfg.attributes["names"] = names
    return cfg


def _connection(db: Database) -> sa.Connection:
    # the engine runs in autocommit; migrations want a transaction where DDL can be in one
    return db.engine.connect().execution_options(isolation_level="SERIALIZABLE")


def upgrade(db: Database, revision: str = "head") -> str | None:
    from alembic import command

    if not db.backend.keeps_catalog:
        raise BackendError(f"{db.backend.title} cannot keep sqlanon's catalog: make it in a database of its own "
                           "('sqlanon db upgrade --catalog URL') and name that with --catalog URL")
    names = Names.of(db.backend)
    with _connection(db) as conn:
        if names.schema is not None:
            conn.execute(sa.schema.CreateSchema(names.schema, if_not_exists=True))
            conn.commit()
        command.upgrade(_config(conn, names), revision)
        conn.commit()
    return current(db)


def downgrade(db: Database, revision: str) -> str | None:
    from alembic import command

    names = Names.of(db.backend)
    with _connection(db) as conn:
        command.downgrade(_config(conn, names), revision)
        conn.commit()
    return current(db)


def current(db: Database) -> str | None:
    """The catalog's revision; None where there is no catalog. Every connect asks, so it is
    read as Alembic's MigrationContext reads it (the version table, where it exists) without
    importing Alembic."""
    names = Names.of(db.backend)
    with db.engine.connect() as conn:
        if not sa.inspect(conn).has_table(names.version_table, schema=names.schema):
            return None
        version = sa.table(names.version_table, sa.column("version_num"), schema=names.schema)
        found = [r[0] for r in conn.execute(sa.select(version.c.version_num))]
    if len(found) > 1:
        raise BackendError(f"the catalog's version table names {len(found)} revisions: {', '.join(found)}")
    return found[0] if found else None


def head() -> str:
    from alembic.script import ScriptDirectory

    return ScriptDirectory(str(SCRIPTS)).get_current_head()


def history() -> list[str]:
    """Every revision, newest first, with its message."""
    from alembic.script import ScriptDirectory

    return [f"{s.revision}: {s.doc}" for s in ScriptDirectory(str(SCRIPTS)).walk_revisions()]

"""Alembic environment for sqlanon's catalog: run on the connection ``catalog.migrate`` gives it."""
from __future__ import annotations

from alembic import context

config = context.config
connection = config.attributes["connection"]
names = config.attributes["names"]

context.configure(connection=connection, target_metadata=None, version_table=names.version_table,
                  version_table_schema=names.schema, transaction_per_migration=True)
with context.begin_transaction():
    context.run_migrations(names=names)

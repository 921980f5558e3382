"""The selections of answers, row by row: re-releases after data changes.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import mysql

#: a row's digest (Backend.row_digest): text, bytes on MariaDB/MySQL
ROW_KEY = sa.String(64).with_variant(mysql.VARBINARY(64), "mysql", "mariadb")

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade(names) -> None:
    s = names.schema
    op.create_table(
        names("selections"),
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("rows", sa.Integer, nullable=False),
        schema=s,
    )
    op.create_index(names("selections_table_at"), names("selections"), ["table_name", "at"], schema=s)
    op.create_table(
        names("selection_rows"),
        sa.Column("selection_id", sa.BigInteger, nullable=False),
        sa.Column("row_key", ROW_KEY, nullable=False),
        schema=s,
    )
    op.create_index(names("selection_rows_key"), names("selection_rows"), ["selection_id", "row_key"], schema=s)


def downgrade(names) -> None:
    s = names.schema
    op.drop_index(names("selection_rows_key"), table_name=names("selection_rows"), schema=s)
    op.drop_table(names("selection_rows"), schema=s)
    op.drop_index(names("selections_table_at"), table_name=names("selections"), schema=s)
    op.drop_table(names("selections"), schema=s)

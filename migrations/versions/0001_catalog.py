"""The catalog: policies (versioned), the release log, the audit log.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade(names) -> None:
    s = names.schema
    op.create_table(
        names("policies"),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("body", sa.Text, nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("applied_at", sa.DateTime, nullable=False),
        sa.Column("applied_by", sa.String(200), nullable=False),
        sa.UniqueConstraint("table_name", "version", name=names("policies_version")),
        schema=s,
    )
    op.create_table(
        names("releases"),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("front_end", sa.String(40), nullable=False),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("predicate", sa.Text),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("method", sa.String(40), nullable=False),
        sa.Column("parameters", sa.Text, nullable=False),
        sa.Column("rows_in", sa.Integer, nullable=False),
        sa.Column("rows_released", sa.Integer, nullable=False),
        sa.Column("rows_suppressed", sa.Integer, nullable=False),
        sa.Column("classes", sa.Integer, nullable=False),
        sa.Column("report", sa.Text, nullable=False),
        sa.Column("target", sa.String(200)),
        schema=s,
    )
    op.create_index(names("releases_table_at"), names("releases"), ["table_name", "at"], schema=s)
    op.create_table(
        names("audit"),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("front_end", sa.String(40), nullable=False),
        sa.Column("sql", sa.Text, nullable=False),
        sa.Column("decision", sa.String(20), nullable=False),
        sa.Column("table_name", sa.String(200)),
        sa.Column("method", sa.String(40)),
        sa.Column("construct", sa.String(200)),
        sa.Column("message", sa.Text),
        sa.Column("seconds", sa.Float),
        sa.Column("rows", sa.Integer),
        schema=s,
    )
    op.create_index(names("audit_at"), names("audit"), ["at"], schema=s)


def downgrade(names) -> None:
    s = names.schema
    op.drop_index(names("audit_at"), table_name=names("audit"), schema=s)
    op.drop_table(names("audit"), schema=s)
    op.drop_index(names("releases_table_at"), table_name=names("releases"), schema=s)
    op.drop_table(names("releases"), schema=s)
    op.drop_table(names("policies"), schema=s)

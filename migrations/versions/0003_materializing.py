"""Stored releases being made: the names a running ``materialize`` claims.

Where DDL commits by itself (MariaDB), a release's table, view and memory of released rows are
made one statement at a time; each name is claimed here first, and the claim is deleted in the
transaction that logs the release. A claim whose run is gone (its session lock is free) names
what that run left half-made; the next materialize of the same table removes it.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade(names) -> None:
    op.create_table(
        names("materializing"),
        sa.Column("name", sa.String(200), primary_key=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("run", sa.String(16), nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("at", sa.DateTime, nullable=False),
        schema=names.schema,
    )


def downgrade(names) -> None:
    op.drop_table(names("materializing"), schema=names.schema)

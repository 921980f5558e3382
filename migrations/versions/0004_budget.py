"""The ε budget ledger of differentially private answers (sqlanon/dp/, catalog/budget.py).

``dp_spends`` keeps every reservation (who, which table, ε, δ, when); ``dp_scopes`` holds one
row per protected table, which a reservation updates first: the row's lock serializes the
reservations of a table until their transaction ends, so that two concurrent queries cannot
both see the budget that only one of them may spend.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade(names) -> None:
    s = names.schema
    op.create_table(
        names("dp_scopes"),
        sa.Column("table_name", sa.String(200), primary_key=True),
        sa.Column("at", sa.DateTime, nullable=False),
        schema=s,
    )
    op.create_table(
        names("dp_spends"),
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("at", sa.DateTime, nullable=False),
        sa.Column("client", sa.String(200), nullable=False),
        sa.Column("table_name", sa.String(200), nullable=False),
        sa.Column("epsilon", sa.Float, nullable=False),
        sa.Column("delta", sa.Float, nullable=False),
        schema=s,
    )
    op.create_index(names("dp_spends_table_at"), names("dp_spends"), ["table_name", "at"], schema=s)


def downgrade(names) -> None:
    s = names.schema
    op.drop_index(names("dp_spends_table_at"), table_name=names("dp_spends"), schema=s)
    op.drop_table(names("dp_spends"), schema=s)
    op.drop_table(names("dp_scopes"), schema=s)

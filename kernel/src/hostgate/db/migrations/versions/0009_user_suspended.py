"""users: a suspended state besides delete

Revision ID: 0009_user_suspended
Revises: 0008_session_via
Create Date: 2026-12-07 10:00:00

A suspended account cannot sign in by any method until an administrator resumes
it; every existing account is active (``false``).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0009_user_suspended'
down_revision = '0008_session_via'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('users') as batch:
        batch.add_column(
            sa.Column('suspended', sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table('users') as batch:
        batch.drop_column('suspended')

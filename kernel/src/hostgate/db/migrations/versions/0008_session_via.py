"""sessions: the door a session came in by (``ssh`` for the SSH front door)

Revision ID: 0008_session_via
Revises: 0007_audit_count
Create Date: 2026-12-07 09:00:00

History, playback and search mark sessions opened through the SSH front door;
every older row came in through the browser app (``""``).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0008_session_via'
down_revision = '0007_audit_count'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('sessions') as batch:
        batch.add_column(sa.Column('via', sa.String(length=16), nullable=False, server_default=''))


def downgrade() -> None:
    with op.batch_alter_table('sessions') as batch:
        batch.drop_column('via')

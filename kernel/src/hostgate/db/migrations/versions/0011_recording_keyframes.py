"""sessions: the key frame index of relay (VNC) recordings

Revision ID: 0011_recording_keyframes
Revises: 0010_invites_onboarding
Create Date: 2026-12-07 12:00:00

One row per key frame of a gateway-recorded relay session: milliseconds since
the start and the plaintext offset of its sync record, so a player seeks by reading
from the nearest one.
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0011_recording_keyframes'
down_revision = '0010_invites_onboarding'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'recording_keyframes',
        sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
        sa.Column('session_id', sa.String(length=64), nullable=False),
        sa.Column('elapsed', sa.Float(), nullable=False),
        sa.Column('offset', sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('id'),
    )
    with op.batch_alter_table('recording_keyframes') as batch:
        batch.create_index('ix_recording_keyframes_session', ['session_id', 'elapsed'])


def downgrade() -> None:
    with op.batch_alter_table('recording_keyframes') as batch:
        batch.drop_index('ix_recording_keyframes_session')
    op.drop_table('recording_keyframes')

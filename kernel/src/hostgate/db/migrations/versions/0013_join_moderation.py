"""joining and moderation: who typed each command; connections that need a moderator

Revision ID: 0013_join_moderation
Revises: 0011_recording_keyframes
Create Date: 2026-12-07 12:00:00

A command typed while others had joined the session and could type says whose
keys it came from (a JSON list of usernames); every existing row is the owner's
(``NULL``). ``connections.moderation`` is ``none`` (every existing connection) or
``required``: a terminal session to it waits for a moderator.
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0013_join_moderation'
down_revision = '0011_recording_keyframes'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('session_commands') as batch:
        batch.add_column(sa.Column('typed_by', sa.Text(), nullable=True))
    with op.batch_alter_table('connections') as batch:
        batch.add_column(
            sa.Column('moderation', sa.String(length=16), nullable=False, server_default='none')
        )


def downgrade() -> None:
    with op.batch_alter_table('connections') as batch:
        batch.drop_column('moderation')
    with op.batch_alter_table('session_commands') as batch:
        batch.drop_column('typed_by')

"""session invitations: the owner's invitations to join a live terminal, kept in the database

Revision ID: 0016_session_invitations
Revises: 0015_action_rights
Create Date: 2026-12-07 18:30:00

``session_invitations`` replaces the invitations each node kept in memory: every
node sees them, they outlive a restart, and each is used once, expires, or is
revoked by the session's owner (services/sessions/invitations.py).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import hostgate.db.types


revision = '0016_session_invitations'
down_revision = '0015_action_rights'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'session_invitations',
        sa.Column('id', sa.String(length=64), primary_key=True),
        sa.Column('session_id', sa.String(length=64), nullable=False),
        sa.Column('owner_id', sa.String(length=64), nullable=False),
        sa.Column('owner_username', sa.String(length=200), nullable=False),
        sa.Column('user_id', sa.String(length=64), nullable=False),
        sa.Column('username', sa.String(length=200), nullable=False),
        sa.Column('mode', sa.String(length=16), nullable=False),
        sa.Column('connection_name', sa.String(length=200), nullable=False, server_default=''),
        sa.Column('protocol', sa.String(length=32), nullable=False, server_default=''),
        sa.Column('created_at', hostgate.db.types.UTCDateTime(), nullable=False),
        sa.Column('expires_at', hostgate.db.types.UTCDateTime(), nullable=False),
        sa.Column('used_at', hostgate.db.types.UTCDateTime(), nullable=True),
        sa.Column('revoked_at', hostgate.db.types.UTCDateTime(), nullable=True),
    )
    with op.batch_alter_table('session_invitations') as batch_op:
        batch_op.create_index('ix_session_invitations_session_id', ['session_id'])
        batch_op.create_index('ix_session_invitations_user_id', ['user_id'])


def downgrade() -> None:
    op.drop_table('session_invitations')

"""command rules: block, hold for approval or flag command lines typed in terminals

Revision ID: 0014_command_rules
Revises: 0013_join_moderation
Create Date: 2026-12-07 15:00:00

``command_rules`` holds the rules admins write (services/command_rules): a pattern
(exact, prefix, glob or regex), an action (block, approve, alert) and the
connections, groups, tags and roles it applies to (JSON lists; empty = all).
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import hostgate.db.types


revision = '0014_command_rules'
down_revision = '0013_join_moderation'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'command_rules',
        sa.Column('id', sa.String(length=64), primary_key=True),
        sa.Column('name', sa.String(length=200), nullable=False, unique=True),
        sa.Column('description', sa.String(length=1000), nullable=False, server_default=''),
        sa.Column('enabled', sa.Boolean(), nullable=False, server_default=sa.true()),
        sa.Column('action', sa.String(length=16), nullable=False),
        sa.Column('match', sa.String(length=16), nullable=False),
        sa.Column('pattern', sa.String(length=500), nullable=False),
        sa.Column('priority', sa.Integer(), nullable=False, server_default='100'),
        sa.Column('connection_ids', hostgate.db.types.JSONText(), nullable=False),
        sa.Column('group_ids', hostgate.db.types.JSONText(), nullable=False),
        sa.Column('tags', hostgate.db.types.JSONText(), nullable=False),
        sa.Column('role_ids', hostgate.db.types.JSONText(), nullable=False),
        sa.Column('created_at', hostgate.db.types.UTCDateTime(), nullable=False),
        sa.Column('updated_at', hostgate.db.types.UTCDateTime(), nullable=False),
    )


def downgrade() -> None:
    op.drop_table('command_rules')

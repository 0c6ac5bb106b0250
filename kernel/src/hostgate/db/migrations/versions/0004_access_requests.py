"""access requests: approval-required connections and time-boxed grants

Revision ID: 0004_access_requests
Revises: 0003_jump_hosts
Create Date: 2026-11-25 08:30:00
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import hostgate.db.types


revision = '0004_access_requests'
down_revision = '0003_jump_hosts'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('connections', schema=None) as batch_op:
        batch_op.add_column(
            sa.Column('approval_required', sa.Boolean(), nullable=False, server_default=sa.false())
        )
    op.create_table('access_requests',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('connection_id', sa.String(length=64), nullable=False),
    sa.Column('reason', sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=False),
    sa.Column('minutes', sa.Integer(), nullable=False),
    sa.Column('status', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('created_at', hostgate.db.types.UTCDateTime(), nullable=False),
    sa.Column('decided_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('decided_at', hostgate.db.types.UTCDateTime(), nullable=True),
    sa.Column('note', sqlmodel.sql.sqltypes.AutoString(length=1000), nullable=False),
    sa.Column('starts_at', hostgate.db.types.UTCDateTime(), nullable=True),
    sa.Column('ends_at', hostgate.db.types.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['connection_id'], ['connections.id'], ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('access_requests', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_access_requests_connection_id'), ['connection_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_access_requests_status'), ['status'], unique=False)
        batch_op.create_index(batch_op.f('ix_access_requests_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    op.drop_table('access_requests')
    with op.batch_alter_table('connections', schema=None) as batch_op:
        batch_op.drop_column('approval_required')

"""personal API tokens

Revision ID: 0002_api_tokens
Revises: 0001_initial
Create Date: 2026-11-25 07:45:00
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import hostgate.db.types


revision = '0002_api_tokens'
down_revision = '0001_initial'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('api_tokens',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('name', sqlmodel.sql.sqltypes.AutoString(length=100), nullable=False),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('prefix', sqlmodel.sql.sqltypes.AutoString(length=16), nullable=False),
    sa.Column('permissions', hostgate.db.types.JSONText(), nullable=False),
    sa.Column('created_at', hostgate.db.types.UTCDateTime(), nullable=False),
    sa.Column('expires_at', hostgate.db.types.UTCDateTime(), nullable=False),
    sa.Column('last_used_at', hostgate.db.types.UTCDateTime(), nullable=True),
    sa.Column('last_used_ip', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('revoked_at', hostgate.db.types.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_tokens_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('api_tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_tokens_user_id'))
    op.drop_table('api_tokens')

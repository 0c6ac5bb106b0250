"""jump hosts: a connection may go through another stored SSH connection

Revision ID: 0003_jump_hosts
Revises: 0002_api_tokens
Create Date: 2026-11-25 08:05:00
"""
from __future__ import annotations

import sqlalchemy as sa
from alembic import op


revision = '0003_jump_hosts'
down_revision = '0002_api_tokens'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('connections', schema=None) as batch_op:
        batch_op.add_column(sa.Column('jump_host_id', sa.String(length=64), nullable=True))
        batch_op.create_index(batch_op.f('ix_connections_jump_host_id'), ['jump_host_id'], unique=False)
        batch_op.create_foreign_key(
            'fk_connections_jump_host_id', 'connections', ['jump_host_id'], ['id'], ondelete='SET NULL'
        )


def downgrade() -> None:
    with op.batch_alter_table('connections', schema=None) as batch_op:
        batch_op.drop_constraint('fk_connections_jump_host_id', type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_connections_jump_host_id'))
        batch_op.drop_column('jump_host_id')

"""users: invite links and "must change password at first sign-in"

Revision ID: 0010_invites_onboarding
Revises: 0009_user_suspended
Create Date: 2026-12-07 12:00:00

``user_invites`` holds single-use links (only their SHA-256) that let a new user
set their own password; ``users.must_change_password`` sends a user whose
password an administrator set to a change-password step before anything else.
Every existing account keeps its password as it is (``false``).
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op

import hostgate.db.types

revision = '0010_invites_onboarding'
down_revision = '0009_user_suspended'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('users') as batch:
        batch.add_column(
            sa.Column(
                'must_change_password', sa.Boolean(), nullable=False, server_default=sa.false()
            )
        )
    op.create_table('user_invites',
    sa.Column('id', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('user_id', sa.String(length=64), nullable=False),
    sa.Column('token_hash', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=False),
    sa.Column('created_by', sqlmodel.sql.sqltypes.AutoString(length=64), nullable=True),
    sa.Column('created_at', hostgate.db.types.UTCDateTime(), nullable=False),
    sa.Column('expires_at', hostgate.db.types.UTCDateTime(), nullable=False),
    sa.Column('used_at', hostgate.db.types.UTCDateTime(), nullable=True),
    sa.Column('revoked_at', hostgate.db.types.UTCDateTime(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id'),
    sa.UniqueConstraint('token_hash')
    )
    with op.batch_alter_table('user_invites', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_user_invites_user_id'), ['user_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('user_invites', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_user_invites_user_id'))
    op.drop_table('user_invites')
    with op.batch_alter_table('users') as batch:
        batch.drop_column('must_change_password')

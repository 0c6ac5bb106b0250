"""per-action rights: a connection's action switches; every existing role keeps its rights

Revision ID: 0015_action_rights
Revises: 0014_command_rules
Create Date: 2026-12-07 15:00:00

``connections.actions`` is a JSON object of per-action switches (upload, download,
delete, copy, paste); ``{}`` (every existing connection) allows everything. The five
new role permissions (``files.upload``, ``files.download``, ``files.delete``,
``clipboard.copy``, ``clipboard.paste``) are granted to every role that exists, so
nobody loses what they could do before.
"""
from __future__ import annotations

import json

import sqlalchemy as sa
from alembic import op


revision = '0015_action_rights'
down_revision = '0014_command_rules'
branch_labels = None
depends_on = None

NEW_PERMISSIONS = (
    'files.upload', 'files.download', 'files.delete', 'clipboard.copy', 'clipboard.paste'
)


def _roles(change: str) -> None:
    bind = op.get_bind()
    roles = sa.table('roles', sa.column('id', sa.String), sa.column('permissions', sa.Text))
    for role_id, stored in bind.execute(sa.select(roles.c.id, roles.c.permissions)).all():
        names = list(json.loads(stored or '[]'))
        if change == 'grant':
            names += [p for p in NEW_PERMISSIONS if p not in names]
        else:
            names = [p for p in names if p not in NEW_PERMISSIONS]
        bind.execute(
            roles.update()
            .where(roles.c.id == role_id)
            .values(permissions=json.dumps(names, separators=(',', ':')))
        )


def upgrade() -> None:
    with op.batch_alter_table('connections') as batch:
        batch.add_column(sa.Column('actions', sa.Text(), nullable=False, server_default='{}'))
    _roles('grant')


def downgrade() -> None:
    _roles('revoke')
    with op.batch_alter_table('connections') as batch:
        batch.drop_column('actions')

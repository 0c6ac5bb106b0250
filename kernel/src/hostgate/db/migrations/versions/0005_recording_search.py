"""recording search: the index of commands and terminal output, full text per engine

Revision ID: 0005_recording_search
Revises: 0004_access_requests
Create Date: 2026-11-25 11:00:00

SQLite: an external-content FTS5 table over ``recording_search`` kept in step by
triggers; besides the text it indexes each entry's scope, its session's user and
connection as tokens (``u<hex> c<hex>``), so user/connection filters are part of
the MATCH. PostgreSQL: a generated ``tsvector`` column (the ``simple``
configuration over the text with every run of non-alphanumeric characters made a
space, which is how FTS5's unicode61 tokenizer splits words) and a GIN index.
"""
from __future__ import annotations

import sqlalchemy as sa
import sqlmodel
from alembic import op


revision = '0005_recording_search'
down_revision = '0004_access_requests'
branch_labels = None
depends_on = None

def _scope(row: str) -> str:
    """The scope tokens of a ``sessions`` row: ``u<hex user id> c<hex connection id>``."""
    return f"'u' || hex({row}.user_id) || ' c' || hex(coalesce({row}.connection_id, ''))"


# the FTS5 table indexes, besides the text, the scope of each entry's session (its
# user and connection as single tokens), so a filtered search is one MATCH; the
# content is a view joining each entry to its session, which 'rebuild' reads
SQLITE_FTS = (
    "CREATE VIEW recording_search_scoped AS SELECT e.id AS id, "
    f"{_scope('s')} AS scope, e.text AS text "
    "FROM recording_search e JOIN sessions s ON s.id = e.session_id",
    "CREATE VIRTUAL TABLE recording_search_fts USING fts5("
    "scope, text, content='recording_search_scoped', content_rowid='id', "
    "tokenize='unicode61 remove_diacritics 0')",
    "CREATE TRIGGER recording_search_ai AFTER INSERT ON recording_search BEGIN "
    "INSERT INTO recording_search_fts(rowid, scope, text) "
    f"SELECT new.id, {_scope('s')}, new.text FROM sessions s WHERE s.id = new.session_id; END",
    "CREATE TRIGGER recording_search_ad AFTER DELETE ON recording_search BEGIN "
    "INSERT INTO recording_search_fts(recording_search_fts, rowid, scope, text) "
    f"SELECT 'delete', old.id, {_scope('s')}, old.text FROM sessions s "
    "WHERE s.id = old.session_id; END",
    "CREATE TRIGGER recording_search_au AFTER UPDATE ON recording_search BEGIN "
    "INSERT INTO recording_search_fts(recording_search_fts, rowid, scope, text) "
    f"SELECT 'delete', old.id, {_scope('s')}, old.text FROM sessions s "
    "WHERE s.id = old.session_id; "
    "INSERT INTO recording_search_fts(rowid, scope, text) "
    f"SELECT new.id, {_scope('s')}, new.text FROM sessions s WHERE s.id = new.session_id; END",
    # a session's entries leave the index while the session still says their scope
    "CREATE TRIGGER sessions_search_bd BEFORE DELETE ON sessions BEGIN "
    "DELETE FROM recording_search WHERE session_id = old.id; END",
    # a session whose user or connection changes: its entries are indexed again
    "CREATE TRIGGER sessions_search_bu BEFORE UPDATE OF user_id, connection_id ON sessions "
    "WHEN old.user_id IS NOT new.user_id OR old.connection_id IS NOT new.connection_id BEGIN "
    "INSERT INTO recording_search_fts(recording_search_fts, rowid, scope, text) "
    f"SELECT 'delete', e.id, {_scope('old')}, e.text FROM recording_search e "
    "WHERE e.session_id = old.id; END",
    "CREATE TRIGGER sessions_search_au AFTER UPDATE OF user_id, connection_id ON sessions "
    "WHEN old.user_id IS NOT new.user_id OR old.connection_id IS NOT new.connection_id BEGIN "
    "INSERT INTO recording_search_fts(rowid, scope, text) "
    f"SELECT e.id, {_scope('new')}, e.text FROM recording_search e "
    "WHERE e.session_id = new.id; END",
)

POSTGRES_FTS = (
    "ALTER TABLE recording_search ADD COLUMN document tsvector GENERATED ALWAYS AS "
    "(to_tsvector('simple'::regconfig, "
    "regexp_replace(lower(text), '[^[:alnum:]]+', ' ', 'g'))) STORED",
    "CREATE INDEX ix_recording_search_document ON recording_search USING gin (document)",
)


def upgrade() -> None:
    op.create_table('recording_search',
    sa.Column('id', sa.BigInteger().with_variant(sa.Integer(), 'sqlite'), nullable=False),
    sa.Column('session_id', sa.String(length=64), nullable=False),
    sa.Column('kind', sqlmodel.sql.sqltypes.AutoString(length=8), nullable=False),
    sa.Column('offset_ms', sa.Integer(), nullable=False),
    sa.Column('text', sqlmodel.sql.sqltypes.AutoString(length=4000), nullable=False),
    sa.Column('marks', sqlmodel.sql.sqltypes.AutoString(length=2000), nullable=False, server_default=''),
    sa.ForeignKeyConstraint(['session_id'], ['sessions.id'], ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id')
    )
    with op.batch_alter_table('recording_search', schema=None) as batch_op:
        batch_op.create_index('ix_recording_search_session', ['session_id', 'kind'], unique=False)
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_FTS if dialect == 'sqlite' else POSTGRES_FTS:
        op.execute(statement)
    # the commands logged so far are searchable at once
    op.execute(
        "INSERT INTO recording_search (session_id, kind, offset_ms, text, marks) "
        "SELECT session_id, 'command', elapsed, command, '' FROM session_commands "
        "WHERE command <> '[password]' AND session_id IN (SELECT id FROM sessions "
        "WHERE recording_state IN ('recording', 'complete', 'stopped'))"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == 'sqlite':
        for name in (
            'recording_search_ai', 'recording_search_ad', 'recording_search_au',
            'sessions_search_bd', 'sessions_search_bu', 'sessions_search_au',
        ):
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        op.execute("DROP TABLE IF EXISTS recording_search_fts")
        op.execute("DROP VIEW IF EXISTS recording_search_scoped")
    op.drop_table('recording_search')

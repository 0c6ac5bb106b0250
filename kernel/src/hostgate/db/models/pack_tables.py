"""Tables the kernel's migrations made for features that became default packs.

Each pack maps its tables itself; the kernel's models, loaded without packs, leave
them out, and schema comparisons skip them. The recording search index
(``recording_search``, the ``recsearch`` pack) also has an engine-specific
full-text part no model knows: the migration adds an FTS5 table kept in step by
triggers on SQLite, and a generated ``tsvector`` column with a GIN index on
PostgreSQL (``SEARCH_OBJECTS`` names them).
"""

from __future__ import annotations

SEARCH_OBJECTS = frozenset(
    {
        "recording_search_fts",
        "recording_search_fts_data",
        "recording_search_fts_idx",
        "recording_search_fts_docsize",
        "recording_search_fts_config",
        "recording_search_fts_content",
        "recording_search_scoped",
        "ix_recording_search_document",
        "document",
    }
)
"""Tables, indexes and columns of the full-text part that only the migration knows."""

PACK_TABLES = frozenset(
    {
        "access_requests",
        "notification_channels",
        "notification_rules",
        "notification_log",
        "notification_digest_items",
        "recording_search",
    }
)
"""Tables the kernel's migrations made before their feature became a default pack: each
pack maps its tables itself (``hostgate_access.models``, ``hostgate_notifications.models``,
``hostgate_recsearch.models``),
so the kernel's models, loaded without packs, leave them out and schema comparisons skip
them."""


def include_in_comparison(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Alembic's ``include_object``: leave the migration-only full-text objects out.

    The tables default packs map themselves (``PACK_TABLES``) stay out too, with their
    indexes.
    """
    table = name if type_ == "table" else getattr(getattr(obj, "table", None), "name", None)
    if table in PACK_TABLES:
        return False
    return not (reflected and name in SEARCH_OBJECTS)

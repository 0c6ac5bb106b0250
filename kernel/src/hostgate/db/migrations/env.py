"""Alembic environment: runs on the connection the kernel hands it."""

from __future__ import annotations

from alembic import context
from hostgate.db.models import metadata
from hostgate.db.models.pack_tables import include_in_comparison
from sqlalchemy import create_engine

config = context.config


def run() -> None:
    connection = config.attributes.get("connection")
    if connection is None:
        url = config.get_main_option("sqlalchemy.url") or "sqlite://"
        with create_engine(url).connect() as conn:
            context.configure(
                connection=conn,
                target_metadata=metadata,
                render_as_batch=True,
                include_object=include_in_comparison,
            )
            with context.begin_transaction():
                context.run_migrations()
        return
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=True,
        include_object=include_in_comparison,
    )
    with context.begin_transaction():
        context.run_migrations()


run()

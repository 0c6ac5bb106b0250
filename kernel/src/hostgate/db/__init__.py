"""Storage: tables, engine, migrations."""

"""CLI commands: each module exposes ``register(subparsers)`` and is found automatically."""

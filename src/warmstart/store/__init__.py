"""The warmstart database: schema, migrations and queries (SQLAlchemy Core)."""

from warmstart.store.store import SessionFilter, Store, safe_url

__all__ = ["SessionFilter", "Store", "safe_url"]

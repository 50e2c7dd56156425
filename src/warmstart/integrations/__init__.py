"""Integrations: the ``warm_session`` tool any agent framework can expose (Hermes, MCP, ...)."""

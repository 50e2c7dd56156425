"""One router module per resource: confirm, audit, events, sessions, health, ui."""

"""warmstart: give tool-calling LLM agents experience from turn zero."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

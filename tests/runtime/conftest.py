"""Runtime tests use the OpenAI double fixtures registered in ``tests/conftest.py`` and its
autouse fixture that clears endpoint, key and model settings from the environment."""

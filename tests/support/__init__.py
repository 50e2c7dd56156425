"""Test support shared by every test package: the OpenAI double and its fixtures."""

"""``python -m warmstart`` runs the CLI."""

from warmstart.cli import main

main()

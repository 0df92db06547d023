"""``python -m webrank`` runs the command line."""

from webrank.cli import run

run()

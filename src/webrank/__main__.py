"""``python -m webrank`` runs the command line."""

from webrank.console import main

main()

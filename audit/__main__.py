"""``python -m audit``: the same as the ``audit`` command."""
from .cli import main

main()

"""``python -m lowrank``: the ``lowrank`` command (see lowrank.book.cli)."""
from .book.cli import main

raise SystemExit(main())

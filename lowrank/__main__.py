"""``python -m lowrank``: the ``lowrank`` command (see lowrank.cli)."""
from .cli import main

raise SystemExit(main())

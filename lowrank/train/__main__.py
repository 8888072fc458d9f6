"""``python -m lowrank.train``: see :func:`lowrank.train.command.main`."""
from .command import main

raise SystemExit(main())

"""``python -m lowrank.experiments.head_size_training``: grow chapter 04's budget store (see
:func:`.budget.main`). The command lives here rather than in ``budget`` because the package imports
``budget``, and running an already imported module as ``__main__`` makes Python warn."""
from .budget import main

raise SystemExit(main())

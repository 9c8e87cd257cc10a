"""``python -m langchain_tiered_memory.cli``: the ``tiered-memory`` command."""

import sys

from . import main

sys.exit(main())

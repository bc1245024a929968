"""``python -m handoff_files``: the same CLI as the ``handoff`` script."""

from __future__ import annotations

import sys

from handoff_files.cli.start import main

sys.exit(main())

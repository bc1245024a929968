"""The steps agent with the bug a restart-kill test exists to catch: it never restores, so each start begins again.

It saves as :mod:`steps_agent` does, but starts every run from step 1, as an agent does whose
loader failed quietly or was never called: after a kill it redoes the steps it had saved. Under
no kills it looks correct, which is why the bug survives ordinary tests.
"""

from __future__ import annotations

import sys

from steps_agent import arguments, do_steps, open_store, say


def main(argv: list[str] | None = None) -> int:
    """Do every step from the first, whatever the thread already records; returns the exit status."""
    args = arguments(argv)
    store = open_store()
    say("RESUMED GEN 0 DONE 0")  # the bug: no store.restore(), so the steps already done are forgotten
    do_steps(store, [], args.steps, args.delay)
    return 0


if __name__ == "__main__":
    sys.exit(main())

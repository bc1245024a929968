"""The ``handoff`` command's entry point: ``handoff --version`` answered before anything else is imported.

The version line needs neither argparse nor the library: importing them (and ``typing``, ``re``,
``pathlib`` with them) is most of a run's start-up, ~20 ms. Any other command line goes to
:func:`handoff_files.cli.main.main`, which parses and runs it.
"""

from __future__ import annotations

import sys

__all__ = ["main"]


def main() -> int:
    """Run the ``handoff`` command with ``sys.argv``; its exit code."""
    if sys.argv[1:] == ["--version"]:
        from handoff_files.foundation.version import __version__  # noqa: PLC0415 -- one string, nothing else

        try:
            sys.stdout.write(f"handoff {__version__}\n")
            sys.stdout.flush()
        except OSError:
            pass  # the full command says so as it does for any output it cannot write (`> /dev/full`: exit 1)
        else:
            return 0
    from handoff_files.cli.main import main as run  # noqa: PLC0415 -- every other command line

    return run()

"""The command line's exit codes (docs/cli-json.md lists them for scripts)."""

from __future__ import annotations

from typing import Final

__all__ = ["EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_UNFINISHED"]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1
#: A save committed its generation, but a copy after the commit point was left unwritten.
EXIT_UNFINISHED: Final = 3
#: Interrupted (Ctrl-C): 128 + SIGINT, as a shell reports it.
EXIT_INTERRUPTED: Final = 130

"""The package's version: one string, importable without importing anything else."""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: importing the version imports nothing (type checkers read it as true)
if TYPE_CHECKING:
    from typing import Final

__all__ = ["__version__"]

#: The version of handoff-files (``handoff_files.__version__``).
__version__: Final = "0.1.0"

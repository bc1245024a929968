"""The package's version: one string, importable without importing anything else."""

from __future__ import annotations

from typing import Final

__all__ = ["__version__"]

#: The version of handoff-files (``handoff_files.__version__``).
__version__: Final = "0.1.0"

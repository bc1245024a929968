"""The pytest plugin: a restart-kill fixture for agents built on handoff-files (placeholder, being written)."""

from __future__ import annotations

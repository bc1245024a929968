"""Step 2.0 → 2.1: the version alone (2.1 adds ``seal.signature``, which a 2.0 document never has).

A sealed 2.0 file is never migrated: the model reads it as it stands, since its seal covers its
own ``schema_version``. This step runs when an older (0.8, 1.0) document is migrated in memory
through 2.0 to the version this library writes; such a document has no seal to keep.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

SOURCE: Final = "2.0"
TARGET: Final = "2.1"


def upgrade(document: Mapping[Any, Any]) -> dict[Any, Any]:
    """Return *document* as 2.1: a copy with its version changed (the migration's notes kept)."""
    return {**document, "schema_version": TARGET}

"""Content: what an agent passes to ``save()``, checked and turned into the five layers in JSON form."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import pydantic

from handoff_files.format.model import Handoff, HandoffContent
from handoff_files.format.wording import describe_errors
from handoff_files.foundation.collector import collector_paused
from handoff_files.foundation.errors import HandoffValidationError

__all__ = ["ENVELOPE", "dump_layers", "layers_of"]

#: The keys the store fills; content passed to ``save()`` may not carry them.
ENVELOPE: Final = ("schema_version", "agent_id", "thread_id", "generation", "created_at", "parent", "lineage", "seal")


def layers_of(content: Handoff | HandoffContent | Mapping[str, Any], path: Path) -> dict[str, Any]:
    """Validate the content of a save and return its layers in JSON mode."""
    with collector_paused():  # validation and the dump allocate a container per message and item
        return _layers_of(content, path)


def _layers_of(content: Handoff | HandoffContent | Mapping[str, Any], path: Path) -> dict[str, Any]:
    if isinstance(content, Handoff):
        return dump_layers(content.content())
    if isinstance(content, HandoffContent):
        return dump_layers(content)
    if not isinstance(content, Mapping):
        msg = f"save() takes a Handoff or a mapping of the five layers, not {type(content).__name__}"
        raise HandoffValidationError(path, msg)
    envelope = sorted(set(content) & set(ENVELOPE))
    if envelope:
        msg = f"content holds envelope fields {', '.join(envelope)}: the store fills those; pass only the layers"
        raise HandoffValidationError(path, msg)
    try:
        model = HandoffContent.model_validate(dict(content))
    except pydantic.ValidationError as exc:
        msg = f"not valid handoff content: {describe_errors(exc)}"
        raise HandoffValidationError(path, msg) from exc
    return dump_layers(model)


def dump_layers(content: HandoffContent) -> dict[str, Any]:
    return content.model_dump(mode="json", exclude={"context"} if content.context is None else None)

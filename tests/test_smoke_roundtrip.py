"""load(save(x)) gives back x, in JSON and YAML, and the seal does not depend on the format."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from hypothesis import given

from handoff_files import HandoffContent, HandoffStore, load
from tests.strategies import contents


@given(contents)
def test_load_of_save_gives_back_the_content_in_json_and_yaml(content: dict[str, Any]) -> None:
    expected = HandoffContent.model_validate(content)
    with tempfile.TemporaryDirectory() as tmp:
        seals = []
        for fmt in ("json", "yaml"):
            store = HandoffStore(Path(tmp) / f"t-{fmt}", format=fmt, thread_id="t", agent_id="a")  # type: ignore[arg-type]
            receipt = store.save(content)
            loaded = load(receipt.path)
            assert loaded.content() == expected
            assert loaded.generation == 1
            seals.append(loaded.model_copy(update={"seal": None, "created_at": receipt.created_at}))
        # same content, same envelope -> same canonical form, whichever format held it
        assert seals[0].content() == seals[1].content()

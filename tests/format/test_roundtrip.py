"""load(save(x)) gives back x in JSON and YAML, and a seal verifies whichever format holds the content."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any, Literal

import orjson
import pytest
from hypothesis import given

from handoff_files import HandoffContent, HandoffStore, load
from handoff_files.format.codec import detect_format, render
from tests.strategies import contents

FORMATS: tuple[Literal["json", "yaml"], ...] = ("json", "yaml")


@given(contents)
def test_load_of_save_gives_back_the_content_in_json_and_yaml(content: dict[str, Any]) -> None:
    expected = HandoffContent.model_validate(content)
    with tempfile.TemporaryDirectory() as tmp:
        for fmt in FORMATS:
            receipt = HandoffStore(Path(tmp) / f"t-{fmt}", format=fmt).save(content)
            loaded = load(receipt.path)
            assert detect_format(receipt.path.read_bytes()) == fmt
            assert loaded.content() == expected
            assert (loaded.generation, str(loaded.seal)) == (1, receipt.checksum)


@given(contents)
def test_a_seal_made_in_one_format_verifies_in_the_other(content: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pairs: tuple[tuple[Literal["json", "yaml"], Literal["json", "yaml"]], ...] = (
            ("json", "yaml"),
            ("yaml", "json"),
        )
        for source, target in pairs:
            receipt = HandoffStore(Path(tmp) / f"from-{source}", format=source).save(content)
            document = load(receipt.path).model_dump(mode="json", exclude_none=False)
            # re-render the very same values in the other format, seal untouched
            raw = orjson.loads(orjson.dumps(_as_written(receipt.path)))
            converted = Path(tmp) / f"converted-{source}.{target}"
            converted.write_bytes(render(raw, target))
            again = load(converted)
            assert str(again.seal) == receipt.checksum
            assert again.model_dump(mode="json") == document


def _as_written(path: Path) -> dict[str, Any]:
    from handoff_files.format.codec import parse

    return parse(path.read_bytes(), path)


@pytest.mark.parametrize("fmt", [pytest.param(f, id=f) for f in FORMATS])
def test_generations_chain_through_parent_seals(tmp_path: Path, fmt: Literal["json", "yaml"]) -> None:
    store = HandoffStore(tmp_path / "t", format=fmt, keep=5)
    receipts = [store.save({"narrative": f"step {i}"}) for i in range(1, 5)]
    assert [r.generation for r in receipts] == [1, 2, 3, 4]
    history = {h.generation: h for h in (load(p) for p in sorted((tmp_path / "t" / "history").iterdir()))}
    assert sorted(history) == [1, 2, 3, 4]
    assert history[1].parent is None
    for generation in (2, 3, 4):
        assert history[generation].parent == receipts[generation - 2].checksum
    assert load(store.primary) == history[4]


def test_text_of_several_lines_is_a_literal_block_in_yaml_and_reads_back_as_written(tmp_path: Path) -> None:
    """A story of several lines reads in YAML as a person writes it; text a block cannot hold stays quoted."""
    story = "First line.\nSecond line, naïve café.\n\nA paragraph after a blank line.\n"
    receipt = HandoffStore(tmp_path / "t", format="yaml").save(
        {"narrative": story, "warnings": [{"text": "trailing space \nnext"}]}
    )
    text = receipt.path.read_text(encoding="utf-8")
    assert "narrative: |\n  First line.\n  Second line, naïve café.\n\n  A paragraph after a blank line.\n" in text
    assert '"trailing space \\nnext"' in text
    loaded = load(receipt.path)
    assert (loaded.narrative, loaded.warnings[0].text) == (story, "trailing space \nnext")


def test_the_yaml_block_style_leaves_ruamels_own_representer_alone() -> None:
    from ruamel.yaml import YAML
    from ruamel.yaml.compat import StringIO

    render({"narrative": "a\nb\n"}, "yaml")
    out = StringIO()
    YAML(typ="safe", pure=True).dump({"x": "a\nb\n"}, out)
    assert out.getvalue() == '{x: "a\\nb\\n"}\n', "ruamel's own SafeRepresenter was changed for every caller"

"""Every truncation and every single-bit flip of a sealed file is detected: never loaded as different content."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal

import pytest

from handoff_files import HandoffError, HandoffStore, UnsealedEditError, load

Format = Literal["json", "yaml"]

# U+FEFF inside text (a pasted file's byte-order mark) is written by YAML as a \uFEFF escape, so
# the YAML file holds both raw UTF-8 and a \u escape for the flips to land in
SMALL: Final[dict[str, Any]] = {
    "narrative": "\ufeffCafé tables migrated — naïve retry loop removed ✓",
    "state": {"data": {"retries": 3, "owner": "Zoë"}},
}
LARGE: Final[dict[str, Any]] = {
    "narrative": "Löwe und Bär — étape ✓ 日本. " * 500,
    "state": {
        "data": {
            "items": [{"id": i, "name": f"item-{i} ✓", "score": i / 7, "ok": i % 2 == 0} for i in range(550)],
        }
    },
    "decisions": [{"decision": f"decision {i}", "reason": f"because {i} ≥ {i - 1}"} for i in range(50)],
}


@dataclass
class Damaged:
    """One sealed file, and the tally of what loading damaged copies of it gave."""

    path: Path
    data: bytes
    expected: dict[str, Any]
    outcomes: Counter[str] = field(default_factory=Counter)
    wrong: list[str] = field(default_factory=list)

    @classmethod
    def sealed(cls, directory: Path, fmt: Format, content: dict[str, Any]) -> Damaged:
        primary = HandoffStore(directory / fmt, format=fmt).save(content).path
        data = primary.read_bytes()
        return cls(directory / f"damaged.{fmt}", data, load(primary).model_dump())

    def check(self, data: bytes, what: str) -> None:
        """Load *data* from a file written now (as a copy or a checkout leaves it) and tally the outcome.

        The damaged file is on its own, with the file times of now: whatever they are, damage is never
        offered as a person's edit.
        """
        self.path.write_bytes(data)
        try:
            handoff = load(self.path)
        except UnsealedEditError as exc:
            self.outcomes[type(exc).__name__] += 1
            offered = {} if exc.handoff is None else exc.handoff.model_dump()
            changed = sorted(key for key in self.expected if offered.get(key) != self.expected[key])
            self.wrong.append(f"{what}: offered as a person's edit with {', '.join(changed)} changed ({exc.reason})")
            return
        except HandoffError as exc:
            self.outcomes[type(exc).__name__] += 1
            return
        except Exception as exc:  # the property under test: nothing but a HandoffError escapes
            self.outcomes["other exception"] += 1
            self.wrong.append(f"{what}: {type(exc).__name__}: {exc}")
            return
        if handoff.model_dump() == self.expected:
            self.outcomes["identical content"] += 1
        else:
            self.outcomes["different content"] += 1
            self.wrong.append(f"{what}: loaded as different content")

    def truncate(self, length: int) -> None:
        self.check(self.data[:length], f"truncated to {length} of {len(self.data)} bytes")

    def flip(self, index: int, bit: int) -> None:
        damaged = bytearray(self.data)
        damaged[index] ^= 1 << bit
        context = self.data[max(index - 12, 0) : index + 12]
        self.check(bytes(damaged), f"bit {bit} of byte {index} flipped (near {context!r})")

    def report(self, label: str) -> str:
        checked = sum(self.outcomes.values())
        tally = ", ".join(f"{name} {count}" for name, count in self.outcomes.most_common())
        summary = f"{label}: {len(self.data)} bytes, {checked} damaged copies: {tally}"
        print(f"\n{summary}")  # the counts, for the record: shown with -s
        return summary

    def assert_all_detected(self, label: str) -> None:
        summary = self.report(label)
        shown = "\n".join(self.wrong[:30])
        assert not self.wrong, f"{summary}\n{len(self.wrong)} not detected, first ones:\n{shown}"


@pytest.mark.parametrize(
    "fmt", [pytest.param("json", id="json"), pytest.param("yaml", id="yaml", marks=pytest.mark.slow)]
)
def test_every_truncation_and_bit_flip_of_a_small_sealed_file_is_detected(tmp_path: Path, fmt: Format) -> None:
    damaged = Damaged.sealed(tmp_path, fmt, SMALL)
    assert 600 <= len(damaged.data) <= 1500
    for length in range(len(damaged.data)):
        damaged.truncate(length)
    for index in range(len(damaged.data)):
        for bit in range(8):
            damaged.flip(index, bit)
    assert sum(damaged.outcomes.values()) == 9 * len(damaged.data)
    damaged.assert_all_detected(f"small {fmt}")


@pytest.mark.parametrize(
    ("fmt", "truncations", "flips"),
    [
        pytest.param("json", 300, 2000, id="json", marks=pytest.mark.slow),  # make test: every flip of the small file
        # ruamel builds a 100 KB YAML tree in ~0.1 s (C parser, Python tree): a sample here, the full count in make slow
        pytest.param("yaml", 15, 15, id="yaml-sample"),
        pytest.param("yaml", 300, 2000, id="yaml-full", marks=pytest.mark.slow),
    ],
)
def test_sampled_truncations_and_bit_flips_of_a_large_sealed_file_are_detected(
    tmp_path: Path, fmt: Format, truncations: int, flips: int
) -> None:
    damaged = Damaged.sealed(tmp_path, fmt, LARGE)
    assert len(damaged.data) >= 64_000
    rng = random.Random(20240611)
    # always the ends (an empty file, a file missing only its last byte), then a seeded sample
    lengths = [0, len(damaged.data) - 1, *rng.sample(range(1, len(damaged.data) - 1), truncations - 2)]
    for length in sorted(lengths):
        damaged.truncate(length)
    for _ in range(flips):
        damaged.flip(rng.randrange(len(damaged.data)), rng.randrange(8))
    assert sum(damaged.outcomes.values()) == truncations + flips
    damaged.assert_all_detected(f"large {fmt}")

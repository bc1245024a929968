"""The signing bench (issue 22) runs, and its rows compare each primitive, and what it adds to a real save
and restore, with its floor and its goal."""

from __future__ import annotations

from pathlib import Path

from bench import bench_signing
from bench.timing import Sample


def test_a_quick_run_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "signing.md"
    assert bench_signing.main(["--quick", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| sign (adds to a 1 KB save) |" in text
    assert "| verify (adds to a 1 KB load) |" in text
    assert "| save: signing_key=False vs a key |" in text
    assert "| restore (fresh store): unsigned vs signed, 20 allowed_signers |" in text
    assert "smoke run" in text


def test_the_verdict_follows_the_goal() -> None:
    medians = {
        "sign": 50e-6,
        "floor:sign": 25e-6,
        "save": 1e-3,
        "verify": 150e-6,
        "floor:verify": 100e-6,
        "load": 0.5e-3,
    }
    sign, verify = bench_signing.rows(medians)
    assert sign[1:6] == ["0.050", "0.025", "2.00", "<= 0.1", "MET"]
    assert verify[1:6] == ["0.150", "0.100", "1.50", "<= 0.1", "MISSED"]
    assert sign[7] == "5.0%"
    assert verify[7] == "30.0%"


def test_the_added_time_is_the_signed_op_less_the_unsigned_one() -> None:
    medians = {
        "sign": 50e-6,
        "floor:sign": 25e-6,
        "verify": 100e-6,
        "floor:verify": 80e-6,
        "save": 1e-3,
        "save:signed": 1.05e-3,
        "restore": 0.3e-3,
        "restore:signed": 0.8e-3,
        "floor:save": 80e-6,
        "floor:restore": 125e-6,
    }
    save, restore = bench_signing.added_rows(medians, {"save": 60e-6, "restore": 480e-6})
    # a signed save signs twice (its seal and its state.json); the added work's floor is its own case
    assert save[1:] == ["1.000", "1.050", "1.05", "0.050", "0.060", "0.50", "1.00", "0.080", "0.62", "<= 0.1", "MET"]
    restored = ["0.300", "0.800", "2.67", "0.500", "0.480", "5.00", "6.25", "0.125", "4.00", "<= 0.1", "MISSED"]
    assert restore[1:] == restored


def test_the_paired_view_is_the_median_of_round_differences() -> None:
    unsigned = Sample("save", (1.0, 2.0, 3.0))
    signed = Sample("save:signed", (1.5, 2.1, 5.0))
    assert bench_signing.paired_added(signed, unsigned) == 0.5

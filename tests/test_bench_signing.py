"""The signing bench (issue 22) runs, and its rows compare each primitive with its floor and its goal."""

from __future__ import annotations

from pathlib import Path

from bench import bench_signing


def test_a_quick_run_writes_the_table(tmp_path: Path) -> None:
    out = tmp_path / "signing.md"
    assert bench_signing.main(["--quick", "--out", str(out)]) == 0
    text = out.read_text()
    assert "| sign (adds to a 1 KB save) |" in text
    assert "| verify (adds to a 1 KB load) |" in text
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

"""Hostile and odd inputs: each once escaped as the wrong error, hung, or let a bad save through."""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from handoff_files import (
    HandoffError,
    HandoffParseError,
    HandoffStore,
    HandoffValidationError,
    SealError,
    load,
)
from handoff_files.cli.main import main

CONTENT = {"narrative": "Working.", "priorities": [{"task": "go on", "urgency": "first"}]}


def test_a_save_the_loader_could_not_read_back_is_refused_and_nothing_is_written(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    store.save(CONTENT)
    before = {p: p.read_bytes() for p in thread_dir.rglob("*.json")}
    with pytest.raises(HandoffValidationError, match="over the 16,777,216-byte limit"):
        store.save({"state": {"data": {"blob": "x" * (17 * 1024 * 1024)}}})
    assert {p: p.read_bytes() for p in thread_dir.rglob("*.json")} == before
    assert HandoffStore(thread_dir).restore().generation == 1


def test_huge_digits_in_a_damaged_primary_do_not_push_the_generation_past_64_bits(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir, keep=1)
    store.save(CONTENT)
    store.primary.write_text('{"generation": 9223372036854775807, "broken', encoding="utf-8")
    receipt = HandoffStore(thread_dir).save(CONTENT)
    assert receipt.generation == 2
    assert load(receipt.path).generation == 2


def test_a_non_hex_digest_is_a_seal_mismatch_and_restore_falls_back(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    store.save(CONTENT)
    document = json.loads(store.primary.read_text(encoding="utf-8"))
    document["seal"]["digest"] = "é" * 64
    store.primary.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(SealError):
        load(store.primary)
    assert HandoffStore(thread_dir).restore().source == "history"
    assert HandoffStore(thread_dir).save(CONTENT).generation == 2


@pytest.mark.parametrize("depth", [pytest.param(n, id=f"{n}-levels") for n in (65, 255, 300, 1000)])
def test_json_nested_between_our_limit_and_orjsons_is_a_parse_error(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "deep.json"
    path.write_text('{"a": ' + "[" * depth + "]" * depth + "}", encoding="utf-8")
    with pytest.raises(HandoffParseError, match="nested deeper"):
        load(path)


def test_yaml_aliases_to_a_long_string_cannot_expand_the_document(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    # within YAML's bounds (1 MiB, 64 aliases), yet 60 uses of a 300 KB string would weigh 18 MB
    lines = ["schema_version: '2.0'", "state:", "  data:", f"    a: &s {'x' * 300_000}", "    list:"]
    lines += ["    - *s"] * 60
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    started = time.monotonic()
    with pytest.raises(HandoffParseError, match="expands past"):
        load(path)
    assert time.monotonic() - started < 10


def test_a_fifo_in_place_of_the_primary_does_not_hang_restore(
    thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    store = HandoffStore(thread_dir)
    store.save(CONTENT)
    store.primary.unlink()
    os.mkfifo(store.primary)
    code = textwrap.dedent(
        f"""
        from handoff_files import HandoffStore
        r = HandoffStore({str(thread_dir)!r}).restore()
        print(r.source, r.generation)
        """
    )
    done = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, env=subprocess_env, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["history", "1"]


def test_a_symlinked_history_folder_is_refused_not_written_through(thread_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    thread_dir.mkdir(mode=0o700)
    (thread_dir / "history").symlink_to(outside)
    with pytest.raises(HandoffError, match="symbolic link"):
        HandoffStore(thread_dir).save(CONTENT)
    assert list(outside.iterdir()) == []


def test_a_name_too_long_is_a_handoff_error_and_one_cli_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = tmp_path / ("x" * 300) / "thread"
    with pytest.raises(HandoffError):
        HandoffStore(deep).restore()
    for argv in (["show", str(deep)], ["history", str(deep)], ["validate", str(deep)]):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1, err
        assert "Traceback" not in err


def test_a_newline_in_a_key_named_by_an_error_stays_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content = tmp_path / "content.json"
    content.write_text(json.dumps({"state": {"bad\nkey": 1}}), encoding="utf-8")
    assert main(["save", str(tmp_path / "t1"), str(content)]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "bad\\nkey" in err


def test_the_first_save_fsyncs_the_new_thread_directory_into_its_parent(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """Under strace, the parent of a new thread directory gets an fsync (skipped where strace is missing)."""
    import shutil

    strace = shutil.which("strace")
    if strace is None:
        pytest.skip("strace is not installed here")
    thread = tmp_path / "parent" / "thread"
    thread.parent.mkdir()
    code = f"from handoff_files import HandoffStore; HandoffStore({str(thread)!r}).save({{'narrative': 'x'}})"
    trace = tmp_path / "trace"
    done = subprocess.run(
        [strace, "-f", "-e", "trace=openat,fsync", "-o", str(trace), python, "-c", code],
        capture_output=True,
        text=True,
        env=subprocess_env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    opened: dict[str, str] = {}
    synced = set()
    for line in trace.read_text(encoding="utf-8").splitlines():
        if "openat(" in line and "O_DIRECTORY" in line and "= " in line:
            fd = line.rsplit("= ", 1)[1].split()[0]
            opened[fd] = line.split('"')[1]
        elif "fsync(" in line:
            fd = line.split("fsync(", 1)[1].split(")")[0]
            if fd in opened:
                synced.add(opened[fd])
    assert str(thread.parent) in synced
    assert str(thread) in synced

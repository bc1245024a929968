"""The handoff CLI: each subcommand through main(), errors as one line with exit 1, and the installed script."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files import HandoffStore, load
from handoff_files.cli.main import build_parser, main
from tests.conftest import ROOT

CONTENT = {
    "narrative": "Ported half the importer. The date bug is understood.",
    "state": {"active_tasks": ["port the importer"], "blocked_tasks": ["deploy"], "data": {"ported": 12}},
    "priorities": [{"task": "port the rest", "urgency": "first"}, {"task": "tidy", "urgency": "if_time_permits"}],
    "warnings": [{"text": "dates in the old data are local time", "severity": "high"}],
    "decisions": [{"decision": "fix the parser", "reason": "data is right", "status": "deferred"}],
}


def one_error_line(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0]


def test_init_creates_a_private_thread_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = tmp_path / "t1"
    assert main(["init", str(thread)]) == 0
    assert "thread ready" in capsys.readouterr().out
    assert (thread.stat().st_mode & 0o777) == 0o700
    assert (thread / "history").is_dir()


@pytest.mark.parametrize("fmt", [pytest.param("json", id="json"), pytest.param("yaml", id="yaml")])
def test_save_from_a_file_then_show_renders_the_layers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    content = tmp_path / "content.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    thread = tmp_path / "t1"
    assert main(["save", str(thread), str(content), "--format", fmt]) == 0
    assert "saved generation 1" in capsys.readouterr().out
    assert main(["show", str(thread)]) == 0
    out = capsys.readouterr().out
    for text in (
        "NARRATIVE",
        "Ported half the importer",
        "WARNINGS",
        "[high] dates",
        "PRIORITIES",
        "1. port the rest",
        "STATE",
        "blocked (1)",
        "DECISIONS",
        "[deferred] fix the parser",
        "from: primary",
    ):
        assert text in out
    # narrative before warnings before priorities before state before decisions: the briefing order
    positions = [out.index(h) for h in ("NARRATIVE", "WARNINGS", "PRIORITIES", "STATE", "DECISIONS")]
    assert positions == sorted(positions)


def test_save_reads_yaml_from_stdin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    monkeypatch.setattr(
        sys, "stdin", io.TextIOWrapper(io.BytesIO(b"narrative: from stdin\nwarnings:\n  - text: careful\n"))
    )
    thread = tmp_path / "t1"
    assert main(["save", str(thread), "-", "--json"]) == 0
    receipt = json.loads(capsys.readouterr().out)
    assert receipt["generation"] == 1
    assert load(thread / "handoff.json").narrative == "from stdin"


def test_validate_exits_1_with_one_line_per_bad_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = HandoffStore(tmp_path / "good").save(CONTENT).path
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": "2.0", "a": 1, "a": 2}', encoding="utf-8")
    missing = tmp_path / "missing.json"
    assert main(["validate", str(good)]) == 0
    assert f"ok {good}" in capsys.readouterr().out
    assert main(["validate", str(good), str(bad), str(missing)]) == 1
    captured = capsys.readouterr()
    err_lines = captured.err.strip().splitlines()
    assert len(err_lines) == 2
    assert err_lines[0].startswith(f"handoff: {bad}: ")
    assert "duplicate key" in err_lines[0]
    assert err_lines[1].startswith(f"handoff: {missing}: ")
    assert f"ok {good}" in captured.out


def test_validate_json_reports_each_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = HandoffStore(tmp_path / "good").save(CONTENT).path
    assert main(["validate", "--json", str(good), str(tmp_path / "nope.json")]) == 1
    results = json.loads(capsys.readouterr().out)
    assert [r["ok"] for r in results] == [True, False]


def test_seal_accepts_a_human_edit_as_the_next_generation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = tmp_path / "t1"
    store = HandoffStore(thread)
    first = store.save(CONTENT)
    text = first.path.read_text(encoding="utf-8").replace("Ported half the importer.", "Ported ALL of the importer.")
    first.path.write_text(text, encoding="utf-8")
    os.utime(first.path, (first.created_at.timestamp() + 60, first.created_at.timestamp() + 60))
    assert main(["validate", str(first.path)]) == 1
    one_error_line(capsys.readouterr().err, "edited after sealing", "handoff seal")
    assert main(["seal", str(first.path)]) == 0
    out = capsys.readouterr().out
    assert "sealed generation 2" in out
    assert "displaced" in out
    handoff = load(first.path)
    assert handoff.generation == 2
    assert handoff.narrative.startswith("Ported ALL")
    assert handoff.parent == first.checksum
    # the person's own file is kept, not thrown away
    assert any(p.name.startswith("displaced-") for p in (thread / "history").iterdir())
    assert main(["seal", str(thread)]) == 0
    assert "already sealed" in capsys.readouterr().out


def test_history_lists_generations_newest_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = tmp_path / "t1"
    store = HandoffStore(thread, keep=2)
    for _ in range(4):
        store.save(CONTENT)
    assert main(["history", str(thread)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert [line.split()[0] for line in lines] == ["4*", "3"]
    assert main(["history", str(thread), "--json"]) == 0
    entries = json.loads(capsys.readouterr().out)
    assert [(e["generation"], e["current"]) for e in entries] == [(4, True), (3, False)]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        pytest.param(["show", "{tmp}/nowhere"], "no such file or thread directory", id="show-missing"),
        pytest.param(["init", "{tmp}/%%%"], "no valid id can be made from the folder name", id="init-bad-name"),
        pytest.param(["save", "{tmp}/t1", "{tmp}/content-nan.json"], "NaN", id="save-nan"),
        pytest.param(["save", "{tmp}/t1", "{tmp}/content-tag.yaml"], "python/object", id="save-yaml-tag"),
        pytest.param(["save", "{tmp}/t1", "{tmp}/content-envelope.json"], "envelope fields", id="save-envelope"),
        pytest.param(["seal", "{tmp}/nowhere/handoff.json"], "no such file", id="seal-missing"),
        pytest.param(["history", "{tmp}/%%%"], "no such file or thread directory", id="history-missing"),
    ],
)
def test_errors_are_one_line_on_stderr_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], needle: str
) -> None:
    (tmp_path / "content-nan.json").write_text('{"state": {"energy_level": NaN}}', encoding="utf-8")
    (tmp_path / "content-tag.yaml").write_text("narrative: !!python/object/apply:os.system [ls]\n", encoding="utf-8")
    (tmp_path / "content-envelope.json").write_text('{"generation": 5, "narrative": "x"}', encoding="utf-8")
    (tmp_path / "bad name").mkdir()
    assert main([a.format(tmp=tmp_path) for a in argv]) == 1
    one_error_line(capsys.readouterr().err, "handoff: ", needle)


def test_every_subcommand_has_help_and_is_in_the_readme(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    names = list(subparsers.choices)
    assert names
    for name in names:
        with pytest.raises(SystemExit) as exit_info:
            main([name, "--help"])
        assert exit_info.value.code == 0
        assert capsys.readouterr().out.startswith("usage: handoff " + name)
        assert re.search(rf"handoff {name}\b", readme), f"`handoff {name}` is not in the README"


def test_installed_script_and_python_m_run_the_cli(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("handoff")
    assert script.exists(), "the `handoff` console script is not installed in this environment"
    thread = tmp_path / "t1"
    HandoffStore(thread).save(CONTENT)
    for argv in ([str(script)], [sys.executable, "-m", "handoff_files"]):
        done = subprocess.run([*argv, "show", str(thread)], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        assert "Ported half the importer" in done.stdout
        failed = subprocess.run([*argv, "show", str(tmp_path / "nowhere")], capture_output=True, text=True, check=False)
        assert failed.returncode == 1
        one_error_line(failed.stderr, "no such file or thread directory")


BAD_FILES = [
    pytest.param(b'{"schema_version": "2.0", ', "invalid JSON", id="malformed-json"),
    pytest.param(b"narrative: [unclosed\n", "invalid YAML", id="malformed-yaml"),
    pytest.param(
        b'{"schema_version": "2.0", "narrative": "a", "narrative": "b"}', "duplicate key", id="duplicate-keys"
    ),
    pytest.param(b'{"schema_version": "2.0", "state": {"energy_level": NaN}}', "NaN", id="nan"),
    pytest.param(b"schema_version: '2.0'\nnarrative: !!python/object/apply:os.system [id]\n", "python", id="yaml-tag"),
    pytest.param(b'{"a": ' * 5000 + b"1" + b"}" * 5000, "nested deeper", id="deep-nesting"),
    pytest.param(b'{"schema_version": "2.0", "narrative": "\xff\xfe"}', "UTF-8", id="invalid-utf8"),
    pytest.param(None, "over the", id="50-MB"),
]


@pytest.mark.parametrize(("data", "needle"), BAD_FILES)
def test_bad_files_are_one_line_on_stderr_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], data: bytes | None, needle: str
) -> None:
    path = tmp_path / "bad-handoff"
    if data is None:
        with path.open("wb") as handle:  # sparse: 50 MB on paper, nothing on disk
            handle.truncate(50 * 1024 * 1024)
    else:
        path.write_bytes(data)
    for argv in (["validate", str(path)], ["show", str(path)]):
        assert main(argv) == 1
        one_error_line(capsys.readouterr().err, str(path), needle)


def test_a_path_traversal_thread_id_is_refused_by_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    content = tmp_path / "content.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    for argv in (["init", f"{tmp_path}/.."], ["save", f"{tmp_path}/../..", str(content)]):
        assert main(argv) == 1
        one_error_line(capsys.readouterr().err, "no valid id can be made from the folder name '..'")


def test_import_and_export_move_sw4rm_context_bytes_through_a_thread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    context = (
        b'{"conversation_history":[{"content":"hi, Zo\xc3\xab","role":"user"}],"metadata":{},"tool_state":{"k":1}}'
    )
    source = tmp_path / "context.bin"
    source.write_bytes(context)
    thread = tmp_path / "t1"
    assert main(["import", "--from", "sw4rm", str(thread), str(source)]) == 0
    assert "imported generation 1" in capsys.readouterr().out
    assert main(["export-context", "--to", "sw4rm", str(thread)]) == 0
    assert capsys.readouterr().out.encode("utf-8") == context + b"\n"
    out = tmp_path / "out.bin"
    assert main(["export-context", "--to", "sw4rm", str(thread), "-o", str(out)]) == 0
    assert out.read_bytes() == context
    bad = tmp_path / "bad.bin"
    bad.write_bytes(b"[1, 2]")
    assert main(["import", "--from", "sw4rm", str(thread), str(bad)]) == 1
    one_error_line(capsys.readouterr().err, str(bad), "Failed to deserialize HandoffContext")
    assert HandoffStore(thread).restore().generation == 1

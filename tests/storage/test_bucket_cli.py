"""The CLI on a thread on object storage: ``handoff save|show|history|brief|acknowledge s3://…``, as a user types it.

Each command runs as a real process against the SeaweedFS server (tests/storage/conftest.py), with
the standard AWS environment the fixtures set; what a bucket thread cannot do yet says so in one
line, exit 1, never a traceback.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files.storage import BucketStorage
from tests.storage.conftest import child_env

ROOT = Path(__file__).resolve().parents[2]


def _handoff(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return _run_with({}, *argv, stdin=stdin)


CONTENT = json.dumps(
    {
        "narrative": "fixing the importer",
        "state": {"data": {"files": 3}},
        "priorities": [{"task": "run the tests", "urgency": "first"}],
    }
)


def test_save_show_history_brief_acknowledge_on_a_bucket(bucket_url: str) -> None:
    first = _handoff("save", bucket_url, "-", "--thread-id", "importer-fix", stdin=CONTENT)
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith(f"saved generation 1 to {bucket_url}/history/00000001.json")
    assert _handoff("save", bucket_url, stdin=CONTENT).returncode == 0
    shown = _handoff("show", bucket_url)
    assert shown.returncode == 0, shown.stderr
    assert "generation 2" in shown.stdout
    assert f"from: history ({bucket_url}/history/00000002.json)" in shown.stdout
    as_json = json.loads(_handoff("show", bucket_url, "--json").stdout)
    assert as_json["path"] == f"{bucket_url}/history/00000002.json"
    assert as_json["handoff"]["state"]["data"] == {"files": 3}
    assert "generation 1" in _handoff("show", bucket_url, "--generation", "1").stdout
    history = _handoff("history", bucket_url, "--json")
    assert [(e["generation"], e["current"], e["path"]) for e in json.loads(history.stdout)] == [
        (2, True, f"{bucket_url}/history/00000002.json"),
        (1, False, f"{bucket_url}/history/00000001.json"),
    ]
    briefing = _handoff("brief", bucket_url)
    assert briefing.returncode == 0, briefing.stderr
    code = re.search(r"the code ([A-Z0-9]{4}-[A-Z0-9]{4})", briefing.stdout)
    assert code is not None
    assert f"handoff acknowledge {bucket_url} {code.group(1)}" in briefing.stdout
    wrong = _handoff("acknowledge", bucket_url, "AAAA-AAAA")
    assert wrong.returncode == 1
    assert "not the acknowledgement code" in wrong.stderr
    assert _handoff("acknowledge", bucket_url, code.group(1)).returncode == 0


@pytest.mark.parametrize(
    "command", [["log", "--follow"], ["seal"], ["show", "--generation", "9"], ["validate"], ["edit"]]
)
def test_what_a_bucket_thread_cannot_do_says_so_in_one_line(bucket_url: str, command: list[str]) -> None:
    assert _handoff("save", bucket_url, "-", "--thread-id", "importer-fix", stdin=CONTENT).returncode == 0
    done = _handoff(*command[:1], bucket_url, *command[1:])
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"handoff: {bucket_url}")


def test_trust_reset_forgets_a_bucket_threads_pin(bucket_url: str, tmp_path: Path) -> None:
    key = tmp_path / "key"
    assert _handoff("keys", "create", str(key)).returncode == 0
    public = key.with_name("key.pub").read_text(encoding="utf-8").split()
    config = tmp_path / "config" / "handoff-files"
    config.mkdir(parents=True)
    (config / "allowed_signers").write_text(f"me@example.com {public[0]} {public[1]}\n", encoding="utf-8")
    env = {"XDG_CONFIG_HOME": str(tmp_path / "config"), "HANDOFF_FILES_KEY": str(tmp_path / "state" / "ack.key")}
    signed = _run_with(env, "save", bucket_url, "-", "--thread-id", "t1", "--sign-with", str(key), stdin=CONTENT)
    assert signed.returncode == 0, signed.stderr
    shown = _run_with(env, "show", bucket_url)
    assert "signed by me@example.com" in shown.stdout or "me@example.com" in shown.stdout, shown.stdout
    reset = _run_with(env, "trust", bucket_url, "--reset")
    assert reset.returncode == 0, reset.stderr
    assert reset.stdout.startswith(f"{bucket_url} is no longer pinned")
    refused = _run_with(env, "trust", bucket_url)
    assert refused.returncode == 2
    assert "not a URL" in refused.stderr


def _run_with(extra: dict[str, str], *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = child_env() | {"PYTHONPATH": str(ROOT)} | extra
    return subprocess.run(
        [sys.executable, "-m", "handoff_files", *argv],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_verify_walks_a_bucket_thread_and_names_a_damaged_generation(bucket_url: str) -> None:
    for _ in range(3):
        assert _handoff("save", bucket_url, "-", "--thread-id", "importer-fix", stdin=CONTENT).returncode == 0
    clean = _handoff("verify", bucket_url, "--json")
    assert clean.returncode == 0, clean.stderr
    told = json.loads(clean.stdout)
    assert told["ok"] is True
    assert told["generations"][0]["path"] == f"{bucket_url}/history/00000003.json"
    BucketStorage(bucket_url).create("history/00000004.json", b'{"not": "a handoff"}')
    damaged = _handoff("verify", bucket_url)
    assert damaged.returncode == 1
    assert "   4  history/00000004.json  BAD:" in damaged.stdout
    assert _handoff("verify", bucket_url + "-typo").returncode == 1


def test_the_hooks_refuse_a_bucket_thread_and_write_nothing(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = _handoff("install", "claude-code", "--project", str(project), "--thread", "s3://bucket/team/t1")
    assert done.returncode == 1
    assert "a URL, not a folder" in done.stderr
    assert list(project.iterdir()) == []
    event = '{"hook_event_name": "SessionStart"}'
    hook = _handoff("hook", "claude-code", "--thread", "s3://bucket/team/t1", stdin=event)
    assert hook.returncode == 1
    assert "a URL, not a folder" in hook.stderr


def test_log_tells_a_bucket_threads_story_and_names_a_planted_event(bucket_url: str) -> None:
    assert _handoff("save", bucket_url, "-", "--thread-id", "importer-fix", stdin=CONTENT).returncode == 0
    assert _handoff("save", bucket_url, stdin=CONTENT).returncode == 0
    code = re.search(r"the code ([A-Z0-9]{4}-[A-Z0-9]{4})", _handoff("brief", bucket_url).stdout)
    assert code is not None
    assert _handoff("acknowledge", bucket_url, code.group(1)).returncode == 0
    BucketStorage(bucket_url).create("journal/00000000000000000001-planted.json", b'{"event": 7}')
    log = _handoff("log", bucket_url, "--json")
    assert log.returncode == 0, log.stderr
    told = json.loads(log.stdout)
    assert [(e["event"], e["generation"]) for e in told["entries"]] == [("saved", 1), ("saved", 2), ("resumed", 2)]
    assert told["entries"][2]["code"] == "right"
    assert any("planted.json: not an event the library writes" in p for p in told["problems"])
    assert re.search(r"saved +gen 2", _handoff("log", bucket_url).stdout)


def test_the_inbox_commands_on_a_bucket(bucket_url: str) -> None:
    """``handoff inbox s3://… request|list|accept|complete|status``, as two agents on two machines type them."""
    asked = _handoff("inbox", bucket_url, "request", "--from", "alpha", "--to", "beta", "--reason", "take the importer")
    assert asked.returncode == 0, asked.stderr
    listed = json.loads(_handoff("inbox", bucket_url, "list", "--json").stdout)
    [request] = listed["requests"]
    assert (request["status"], request["reason"], listed["problems"]) == ("PENDING", "take the importer", [])
    short = request["handoff_id"][:8]
    assert short in _handoff("inbox", bucket_url, "list").stdout
    accepted = _handoff("inbox", bucket_url, "accept", short)
    assert accepted.returncode == 0, accepted.stderr
    assert "ACCEPTED" in accepted.stdout
    again = _handoff("inbox", bucket_url, "accept", short)  # the other machine, a moment later
    assert again.returncode == 1
    assert again.stderr.count("\n") == 1
    assert again.stderr.startswith(f"handoff: {bucket_url}/requests/{request['handoff_id']}.json: cannot accept")
    assert "it is ACCEPTED (since" in again.stderr
    assert _handoff("inbox", bucket_url, "complete", short).returncode == 0
    assert "COMPLETED" in _handoff("inbox", bucket_url, "status", short).stdout
    assert BucketStorage(bucket_url).list("") == [f"requests/{request['handoff_id']}.json"]


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["--shared", "list"], "a bucket's access is its policy's"),
        (["accept", "0123"], "no handoff request in this inbox has an id starting with 0123"),
    ],
)
def test_the_inbox_on_a_bucket_refuses_in_one_line(bucket_url: str, argv: list[str], words: str) -> None:
    done = _handoff("inbox", bucket_url, *argv)
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1
    assert words in done.stderr
    assert "Traceback" not in done.stderr

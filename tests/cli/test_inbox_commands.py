"""`handoff inbox DIR list|request|accept|reject|complete|status`: a thin shell over HandoffInbox."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.compat.sw4rm import HandoffStatus
from handoff_files.inbox.lifecycle import HandoffInbox


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    """An inbox folder, not yet created: the first request creates it."""
    return tmp_path / "inbox"


def run(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> str:
    """Run the CLI; check its exit code; return stdout (stderr must be empty on success, one line on failure)."""
    assert main(list(argv)) == code
    out, err = capsys.readouterr()
    assert err.count("\n") == (0 if code == 0 else 1), err
    return out


def run_json(capsys: pytest.CaptureFixture[str], *argv: str, code: int = 0) -> Any:
    return json.loads(run(capsys, *argv, code=code))


def request(capsys: pytest.CaptureFixture[str], inbox: Path, *extra: str, to: str = "beta") -> str:
    """`request` alpha → *to*; return the new id."""
    record = run_json(
        capsys, "inbox", str(inbox), "request", "--from", "alpha", "--to", to, "--reason", "x", *extra, "--json"
    )
    return str(record["handoff_id"])


def test_request_accept_complete_each_print_the_request_and_change_the_file(
    inbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = run(capsys, "inbox", str(inbox), "request", "--from", "alpha", "--to", "beta", "--reason", "needs SQL")
    handoff_id = out.split()[1].rstrip(":")
    assert out.startswith(f"handoff {handoff_id}: PENDING\n")
    assert "alpha → beta, priority 5" in out
    assert "reason: needs SQL" in out
    assert "accepted" not in out
    out = run(capsys, "inbox", str(inbox), "accept", handoff_id)
    assert out.startswith(f"handoff {handoff_id}: ACCEPTED\n")
    assert "  accepted: " in out
    assert run_json(capsys, "inbox", str(inbox), "complete", handoff_id, "--json")["status"] == "COMPLETED"
    assert HandoffInbox(inbox).get_handoff_status(handoff_id) is HandoffStatus.COMPLETED
    assert run(capsys, "inbox", str(inbox), "status", handoff_id).startswith(f"handoff {handoff_id}: COMPLETED\n")


def test_list_shows_pending_requests_by_default_and_every_one_with_all(
    inbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    to_beta = request(capsys, inbox)
    to_gamma = request(capsys, inbox, to="gamma")
    refused = request(capsys, inbox)
    run(capsys, "inbox", str(inbox), "reject", refused, "--reason", "busy")
    lines = run(capsys, "inbox", str(inbox), "list").splitlines()
    assert [line.split()[:2] for line in lines] == [[to_beta, "PENDING"], [to_gamma, "PENDING"]]
    assert "alpha → beta" in lines[0]
    assert [line.split()[0] for line in run(capsys, "inbox", str(inbox), "list", "--agent", "beta").splitlines()] == [
        to_beta
    ]
    listed = run_json(capsys, "inbox", str(inbox), "list", "--agent", "beta", "--all", "--json")
    assert [(r["handoff_id"], r["status"]) for r in listed["requests"]] == [(to_beta, "PENDING"), (refused, "REJECTED")]
    assert listed["problems"] == []


def test_list_of_an_inbox_not_yet_created_says_so_and_creates_nothing(
    inbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(capsys, "inbox", str(inbox), "list") == "(no requests)\n"
    assert not inbox.exists()


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["inbox", "--json", "{inbox}", "list"], id="before-DIR"),
        pytest.param(["inbox", "{inbox}", "list", "--json"], id="after-ACTION"),
    ],
)
def test_json_is_given_wherever_the_flag_stands(
    inbox: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    handoff_id = request(capsys, inbox)
    listed = run_json(capsys, *(arg.format(inbox=inbox) for arg in argv))
    assert [r["handoff_id"] for r in listed["requests"]] == [handoff_id]


def test_a_request_carries_the_descriptor_file_capabilities_priority_and_timeout(
    tmp_path: Path, inbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    HandoffStore(tmp_path / "alpha").save({"narrative": "half done"})
    blobs = str(tmp_path / "blobs")
    run(capsys, "export", str(tmp_path / "alpha"), "--to", "beta", "--blobs", blobs, "-o", str(tmp_path / "d.json"))
    argv = [
        "--descriptor",
        str(tmp_path / "d.json"),
        "--require",
        "sql",
        "python",
        "--priority",
        "1",
        "--timeout",
        "60",
    ]
    handoff_id = request(capsys, inbox, *argv)
    record = HandoffInbox(inbox).get_handoff(handoff_id)
    assert record is not None
    assert record.descriptor is not None
    assert record.descriptor.source == "alpha:1"
    assert (sorted(record.capabilities_required), record.priority) == (["python", "sql"], 1)
    assert record.expires_at is not None
    assert (record.expires_at - record.created_at).total_seconds() == 60
    shown = run(capsys, "inbox", str(inbox), "status", handoff_id)
    assert "checkpoint: alpha:1 (" in shown
    assert "requires: python, sql" in shown
    assert "expires: " in shown


def test_a_rejection_needs_a_reason_and_shows_it(inbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    handoff_id = request(capsys, inbox)
    with pytest.raises(SystemExit) as usage:
        main(["inbox", str(inbox), "reject", handoff_id])
    assert usage.value.code == 2
    capsys.readouterr()
    out = run(capsys, "inbox", str(inbox), "reject", handoff_id, "--reason", "not my field")
    assert out.startswith(f"handoff {handoff_id}: REJECTED\n")
    assert "rejected because: not my field" in out


@pytest.mark.parametrize(
    ("action", "words"),
    [
        pytest.param(["accept"], "it is ACCEPTED", id="accept-twice"),
        pytest.param(["reject", "--reason", "late"], "it is ACCEPTED", id="reject-accepted"),
        pytest.param(["status", "0" * 32], "no handoff request", id="status-unknown"),
        pytest.param(["accept", "0" * 32], "not found", id="accept-unknown"),
        pytest.param(["complete", "../x"], "32 lowercase hex", id="bad-id"),
    ],
)
def test_a_refused_action_is_one_line_on_stderr_and_exit_1(
    inbox: Path, capsys: pytest.CaptureFixture[str], action: list[str], words: str
) -> None:
    handoff_id = request(capsys, inbox)
    run(capsys, "inbox", str(inbox), "accept", handoff_id)
    verb, *rest = action
    target = [handoff_id] if not rest or rest[0].startswith("--") else []
    assert main(["inbox", str(inbox), verb, *target, *rest]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("handoff: ")
    assert err.count("\n") == 1
    assert words in err
    assert HandoffInbox(inbox).get_handoff_status(handoff_id) is HandoffStatus.ACCEPTED


def test_with_a_registry_a_request_is_routed_or_refused_by_the_gate(
    tmp_path: Path, inbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = tmp_path / "agents.json"
    agents = {"alpha": {"scope": ["sql"]}, "beta": {"capabilities": ["python"]}, "gamma": {"capabilities": ["sql"]}}
    registry.write_text(json.dumps({"agents": agents}), encoding="utf-8")
    base = ["inbox", str(inbox), "request", "--from", "alpha", "--reason", "x", "--registry", str(registry), "--json"]
    routed = run_json(capsys, *base, "--require", "sql")
    assert (routed["to_agent"], routed["status"]) == ("gamma", "PENDING")
    assert main([*base, "--to", "beta", "--require", "sql"]) == 1
    out, err = capsys.readouterr()
    assert err.startswith("handoff: ")
    assert err.endswith("refused by the capability gate: beta lacks sql; nothing stored\n")
    record = json.loads(out)
    assert record["status"] == "REJECTED"
    assert "refused by the capability gate" in record["rejection_reason"]
    assert [r.handoff_id for r in HandoffInbox(inbox).list_handoffs()] == [routed["handoff_id"]]


def test_a_damaged_request_file_is_listed_as_a_note_not_hidden(inbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = request(capsys, inbox)
    bad = request(capsys, inbox)
    path = inbox / "requests" / f"{bad}.json"
    path.write_bytes(path.read_bytes()[:20])
    lines = run(capsys, "inbox", str(inbox), "list").splitlines()
    assert lines[0].split()[0] == good
    assert lines[1].startswith("note: skipped a damaged request: ")
    assert str(path) in lines[1]
    listed = run_json(capsys, "inbox", str(inbox), "list", "--json")
    assert [r["handoff_id"] for r in listed["requests"]] == [good]
    assert len(listed["problems"]) == 1

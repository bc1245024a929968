"""`handoff inbox DIR list|request|accept|reject|complete|status`: a thin shell over HandoffInbox."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
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
    assert [line.split()[:2] for line in lines] == [[to_beta[:8], "PENDING"], [to_gamma[:8], "PENDING"]]
    assert "alpha → beta" in lines[0]
    assert [line.split()[0] for line in run(capsys, "inbox", str(inbox), "list", "--agent", "beta").splitlines()] == [
        to_beta[:8]
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


def test_a_request_whose_descriptor_file_is_bad_names_that_file_and_stores_nothing(
    tmp_path: Path, inbox: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    descriptor = tmp_path / "d.json"
    descriptor.write_text('{"descriptor_version": "9.9"}', encoding="utf-8")
    argv = ["inbox", str(inbox), "request", "--from", "alpha", "--to", "beta", "--reason", "x"]
    assert main([*argv, "--descriptor", str(descriptor)]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"handoff: {descriptor}: descriptor_version '9.9' is not one this library reads")
    assert not (inbox / "requests").exists() or not any((inbox / "requests").iterdir())


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
        pytest.param(["status", "5f0"], "4 to 32 lowercase hex digits", id="prefix-too-short"),
        pytest.param(
            ["status", "ffff"], "no handoff request in this inbox has an id starting with ffff", id="no-match"
        ),
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
    assert lines[0].split()[0] == good[:8]
    assert lines[1].startswith("note: skipped a damaged request: ")
    assert str(path) in lines[1]
    listed = run_json(capsys, "inbox", str(inbox), "list", "--json")
    assert [r["handoff_id"] for r in listed["requests"]] == [good]
    assert len(listed["problems"]) == 1


# -- the shell as a person runs it: `python -m handoff_files inbox ...` ----------------------------------


def shell(python: str, env: dict[str, str], *argv: str, code: int = 0) -> subprocess.CompletedProcess[str]:
    """Run ``python -m handoff_files ARGV`` in a child; check its exit code (and one stderr line if it failed)."""
    done = subprocess.run(
        [python, "-m", "handoff_files", *argv], capture_output=True, text=True, env=env, check=False, timeout=60
    )
    assert done.returncode == code, (done.stdout, done.stderr)
    assert done.stderr.count("\n") == (0 if code == 0 else 1), done.stderr
    return done


def test_list_shows_the_most_urgent_request_first_then_the_oldest_and_its_help_says_so(
    inbox: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """Lower is more urgent: priority 1 comes before priority 5, and of equal priority the older first."""
    lifecycle = HandoffInbox(inbox)
    made = [
        lifecycle.request_handoff("alpha", "beta", name, priority=p).handoff_id
        for name, p in [("five-old", 5), ("one-old", 1), ("five-new", 5), ("one-new", 1)]
    ]
    lifecycle.accept_handoff(made[0])
    listed = shell(python, subprocess_env, "inbox", str(inbox), "list").stdout.splitlines()
    assert [line.split()[-1] for line in listed] == ["one-old", "one-new", "five-new"]
    every = shell(python, subprocess_env, "inbox", str(inbox), "list", "--all").stdout.splitlines()
    assert [line.split()[-1] for line in every] == ["one-old", "one-new", "five-old", "five-new"]
    as_json = json.loads(shell(python, subprocess_env, "inbox", str(inbox), "list", "--all", "--json").stdout)
    assert [r["reason"] for r in as_json["requests"]] == ["one-old", "one-new", "five-old", "five-new"]
    helped = shell(python, subprocess_env, "inbox", str(inbox), "list", "--help").stdout
    assert "most urgent (lowest priority) first, then oldest" in " ".join(helped.split())


def test_list_shows_short_ids_and_json_the_full_ones(inbox: Path, python: str, subprocess_env: dict[str, str]) -> None:
    made = [HandoffInbox(inbox).request_handoff("alpha", "beta", "x").handoff_id for _ in range(3)]
    listed = shell(python, subprocess_env, "inbox", str(inbox), "list").stdout.splitlines()
    shown = [line.split()[0] for line in listed]
    assert sorted(shown) == sorted(full[:8] for full in made)  # 8 digits tell three uuids apart (but 1 in 10^8)
    assert not re.search("[0-9a-f]{32}", "\n".join(listed))
    as_json = json.loads(shell(python, subprocess_env, "inbox", str(inbox), "list", "--json").stdout)
    assert sorted(r["handoff_id"] for r in as_json["requests"]) == sorted(made)


def test_every_command_that_takes_an_id_takes_a_unique_prefix_of_it(
    inbox: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    lifecycle = HandoffInbox(inbox)
    taken, refused = (lifecycle.request_handoff("alpha", "beta", "x").handoff_id for _ in range(2))
    if taken[:4] == refused[:4]:  # 1 in 65,536: four digits would not tell them apart
        pytest.skip("the two random ids share their first four digits")
    out = shell(python, subprocess_env, "inbox", str(inbox), "accept", taken[:4]).stdout
    assert out.startswith(f"handoff {taken}: ACCEPTED\n")  # the full id, once it is found
    out = shell(python, subprocess_env, "inbox", str(inbox), "complete", taken[:9]).stdout
    assert out.startswith(f"handoff {taken}: COMPLETED\n")
    out = shell(python, subprocess_env, "inbox", str(inbox), "status", taken[:6]).stdout
    assert out.startswith(f"handoff {taken}: COMPLETED\n")
    out = shell(python, subprocess_env, "inbox", str(inbox), "reject", refused[:8], "--reason", "busy").stdout
    assert out.startswith(f"handoff {refused}: REJECTED\n")
    assert lifecycle.get_handoff_status(refused) is HandoffStatus.REJECTED


def test_an_ambiguous_prefix_is_refused_naming_every_candidate_and_changes_nothing(
    inbox: Path, python: str, subprocess_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    lifecycle = HandoffInbox(inbox)
    twins = ["5f0c1a2b" + "0" * 24, "5f0c9999" + "0" * 24]
    for twin in twins:
        monkeypatch.setattr(uuid, "uuid4", lambda twin=twin: uuid.UUID(hex=twin))
        lifecycle.request_handoff("alpha", "beta", "x")
    monkeypatch.undo()
    for verb in ("accept", "complete", "status"):
        err = shell(python, subprocess_env, "inbox", str(inbox), verb, "5f0c", code=1).stderr
        assert err.startswith("handoff: ")
        assert "5f0c is ambiguous" in err
        assert all(twin in err for twin in twins)
    assert [lifecycle.get_handoff_status(twin) for twin in twins] == [HandoffStatus.PENDING] * 2
    out = shell(python, subprocess_env, "inbox", str(inbox), "accept", "5f0c1").stdout
    assert out.startswith(f"handoff {twins[0]}: ACCEPTED\n")
    listed = shell(python, subprocess_env, "inbox", str(inbox), "list", "--all").stdout.splitlines()
    assert sorted(line.split()[0] for line in listed) == ["5f0c1a2b", "5f0c9999"]


@pytest.mark.parametrize("json_flag", [pytest.param([], id="text"), pytest.param(["--json"], id="json")])
def test_a_request_the_gate_refuses_shows_no_id_says_why_and_that_it_was_not_stored(
    tmp_path: Path, inbox: Path, python: str, subprocess_env: dict[str, str], json_flag: list[str]
) -> None:
    """Nothing was stored, so there is no id to accept or look up: none is printed, and the reason names the gap."""
    registry = tmp_path / "agents.json"
    agents = {"alpha": {"scope": ["sql"]}, "beta": {"capabilities": ["python"]}}
    registry.write_text(json.dumps({"agents": agents}), encoding="utf-8")
    argv = ["--from", "alpha", "--to", "beta", "--reason", "needs SQL", "--require", "sql", "--registry", str(registry)]
    done = shell(python, subprocess_env, "inbox", str(inbox), "request", *argv, *json_flag, code=1)
    assert done.stderr.endswith(": refused by the capability gate: beta lacks sql; nothing stored\n")
    assert not re.search("[0-9a-f]{8}", done.stdout + done.stderr)
    if json_flag:
        record = json.loads(done.stdout)
        assert record["handoff_id"] is None
        assert (record["status"], record["refused_by"]) == ("REJECTED", "capability-gate")
        assert record["rejection_reason"] == "refused by the capability gate: beta lacks sql"
    else:
        head, *rest = done.stdout.splitlines()
        assert head == "not stored: refused by the capability gate: beta lacks sql"
        assert "  asked: alpha → beta, priority 5, requires sql" in rest
        assert "  reason given: needs SQL" in rest
    assert HandoffInbox(inbox).list_handoffs() == []


UTC_TEXT = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\dZ"


def test_inbox_times_end_in_z_as_every_other_time_does(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    from tests.cli.shell import handoff

    inbox = tmp_path / "inbox"
    made = handoff(
        "inbox",
        inbox,
        "request",
        "--from",
        "alpha",
        "--to",
        "beta",
        "--reason",
        "x",
        "--timeout",
        "600",
        env=subprocess_env,
    )
    assert made.returncode == 0, made.stderr
    handoff_id = made.stdout.split()[1].rstrip(":")
    shown = handoff("inbox", inbox, "status", handoff_id, env=subprocess_env).stdout
    assert re.search(rf"  created: {UTC_TEXT}\n", shown), shown
    assert re.search(rf"  expires: {UTC_TEXT}\n", shown), shown
    assert " UTC" not in shown
    listed = handoff("inbox", inbox, "list", env=subprocess_env).stdout
    assert re.search(rf"PENDING .* {UTC_TEXT}  expires {UTC_TEXT}  x$", listed.strip()), listed
    assert handoff("inbox", inbox, "accept", handoff_id, env=subprocess_env).returncode == 0
    again = handoff("inbox", inbox, "reject", handoff_id, "--reason", "late", env=subprocess_env)
    assert again.returncode == 1
    assert re.search(r"it is ACCEPTED \(since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\)", again.stderr), again.stderr
    assert "+00:00" not in again.stderr


def test_a_hand_written_refused_by_is_refused_as_damage_not_shown_as_the_gate_s_refusal(
    inbox: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """The inbox never writes refused_by: a file carrying it (a forged gate refusal) is damage, said in one line."""
    lifecycle = HandoffInbox(inbox)
    handoff_id = lifecycle.request_handoff("alpha", "beta", "x").handoff_id
    lifecycle.reject_handoff(handoff_id, "busy")
    path = inbox / "requests" / f"{handoff_id}.json"
    path.write_text(json.dumps({**json.loads(path.read_bytes()), "refused_by": "capability-gate"}, indent=2))
    done = shell(python, subprocess_env, "inbox", str(inbox), "status", handoff_id, code=1)
    assert done.stdout == ""
    assert str(path) in done.stderr
    assert "refused_by" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_request_file_with_one_flipped_bit_is_refused_in_one_line_naming_the_file(
    inbox: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """'gen 2 needs SQL' flipped to 'gen 3 needs SQL' is a valid request: the seal refuses it, as a user sees."""
    lifecycle = HandoffInbox(inbox)
    good = lifecycle.request_handoff("alpha", "beta", "fine").handoff_id
    bad = lifecycle.request_handoff("alpha", "beta", "gen 2 needs SQL").handoff_id
    path = inbox / "requests" / f"{bad}.json"
    path.write_bytes(path.read_bytes().replace(b"gen 2", b"gen 3"))
    for command in ("status", "accept"):
        err = shell(python, subprocess_env, "inbox", str(inbox), command, bad, code=1).stderr
        assert str(path) in err
        assert "does not match its seal" in err
        assert "damaged or edited" in err
    listed = _loose(python, subprocess_env, "inbox", str(inbox), "list")
    lines = listed.stdout.splitlines()
    assert lines[0].split()[0] == good[:8]
    assert lines[1].startswith("note: skipped a damaged request: ")
    assert str(path) in lines[1]
    assert b"gen 3" in path.read_bytes()  # the refused accept wrote nothing


def _loose(python: str, env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    """Run ``python -m handoff_files ARGV``, which must succeed, and may say something on stderr (a logged note)."""
    done = subprocess.run(
        [python, "-m", "handoff_files", *argv], capture_output=True, text=True, env=env, check=False, timeout=60
    )
    assert done.returncode == 0, (done.stdout, done.stderr)
    return done


def test_a_request_file_from_before_the_seal_is_read_with_a_note_on_stderr(
    inbox: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    handoff_id = HandoffInbox(inbox).request_handoff("alpha", "beta", "old").handoff_id
    path = inbox / "requests" / f"{handoff_id}.json"
    path.write_text(json.dumps({k: v for k, v in json.loads(path.read_bytes()).items() if k != "seal"}, indent=2))
    done = _loose(python, subprocess_env, "inbox", str(inbox), "status", handoff_id)
    assert done.stdout.startswith(f"handoff {handoff_id}: PENDING\n")
    assert done.stderr.count("\n") == 1
    assert str(path) in done.stderr
    assert "no seal" in done.stderr


def test_a_damaged_request_is_told_once_not_on_stderr_as_well(inbox: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """In a real process (pytest's log capture would hide the library's warning going to stderr)."""
    bad = request(capsys, inbox)
    (inbox / "requests" / f"{bad}.json").write_bytes(b"garbage")
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "inbox", str(inbox), "list", "--all"],
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.count("skipped a damaged request") == 1

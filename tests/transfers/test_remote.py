"""FsspecBlobStore: S3 through s3fs against moto's server on 127.0.0.1, other fsspec filesystems, the local store."""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import socket
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import s3fs

from handoff_files import HandoffStore
from handoff_files.foundation.errors import (
    BlobError,
    BlobIntegrityError,
    BlobNotFoundError,
    DescriptorError,
    HandoffError,
)
from handoff_files.transfers.adopt import adopt_checkpoint
from handoff_files.transfers.blobs import LocalBlobStore, blob_path, sha256_hex
from handoff_files.transfers.descriptor import Descriptor
from handoff_files.transfers.export import handoff_checkpoint
from handoff_files.transfers.remote import FsspecBlobStore, redact_url
from tests.transfers.test_transfer import _five_layers, _layers, _listing

# not us-east-1: s3fs creates a bucket with a LocationConstraint of the region, which S3 refuses for us-east-1
REGION = "eu-west-1"
SECRET = "testing-secret"  # noqa: S105 (a fake credential, for the local server only)
# fake credentials, and no proxy for 127.0.0.1: nothing these tests do may reach real AWS or leave the machine
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": SECRET,
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": os.devnull,
    "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    "AWS_EC2_METADATA_DISABLED": "true",
    "NO_PROXY": "127.0.0.1,localhost",
    "no_proxy": "127.0.0.1,localhost",
}
SCRUBBED = (
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)
# fail in seconds, not minutes, when a test's endpoint does not answer
FAST_FAIL = {"connect_timeout": 1, "retries": {"max_attempts": 1}}
_REQUEST_LINE = re.compile(r'"(?:\x1b\[[0-9;]*m)*([A-Z]+) (/[^ ?]*)\S* HTTP/')


def _fake_env(base: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in base.items() if k not in SCRUBBED}
    env.update(FAKE_AWS_ENV)
    return env


def _options(endpoint: str, **config: Any) -> dict[str, Any]:
    return {
        "key": "testing",
        "secret": SECRET,
        "client_kwargs": {"endpoint_url": endpoint, "region_name": REGION},
        "config_kwargs": {"connect_timeout": 5, "read_timeout": 30, **config},
    }


@dataclass
class MotoServer:
    """moto's standalone S3 server, a subprocess on 127.0.0.1: an HTTP endpoint as real as a remote one."""

    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def options(self, **config: Any) -> dict[str, Any]:
        return _options(self.endpoint, **config)

    def requests(self, method: str | None = None, key: str | None = None) -> int:
        """How many requests (of *method*, for *key*) the server logged; werkzeug logs each before answering it."""
        lines = self.log.read_text(encoding="utf-8", errors="replace").splitlines()
        found = [m.groups() for m in map(_REQUEST_LINE.search, lines) if m]
        return sum(1 for m, k in found if method in (None, m) and key in (None, k.removeprefix("/")))

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def start_moto(log: Path) -> MotoServer:
    """Start moto's server on a free port of 127.0.0.1 (``-p 0``), read the port from its log, wait until it answers."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**_fake_env(dict(os.environ)), "PYTHONUNBUFFERED": "1"},
        )
    deadline = time.monotonic() + 30
    try:
        while not (found := re.search(r"Running on http://127\.0\.0\.1:(\d+)", log.read_text(errors="replace"))):
            assert process.poll() is None, f"moto's server exited: {log.read_text(errors='replace')}"
            assert time.monotonic() < deadline, "moto's server did not start in 30 s"
            time.sleep(0.05)
        server = MotoServer(process, int(found.group(1)), log)
        while True:
            with contextlib.suppress(OSError):
                connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=2)
                connection.request("GET", "/")
                if connection.getresponse().status == 200:
                    connection.close()
                    return server
            assert time.monotonic() < deadline, "moto's server did not answer in 30 s"
            time.sleep(0.05)
    except BaseException:
        process.kill()
        process.wait(timeout=10)
        raise


@pytest.fixture(scope="session")
def moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoServer]:
    """One S3 server for the session (a start costs about a second); each test gets its own bucket."""
    server = start_moto(tmp_path_factory.mktemp("moto") / "server.log")
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _fake_aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and no proxies while each test runs, so no code path can reach real AWS."""
    for name in SCRUBBED:
        monkeypatch.delenv(name, raising=False)
    for name, value in FAKE_AWS_ENV.items():
        monkeypatch.setenv(name, value)


@dataclass
class Bucket:
    """A fresh bucket on the test server, an independent client to inspect and tamper with it, and stores on it."""

    server: MotoServer
    name: str
    admin: Any  # s3fs.S3FileSystem: s3fs ships no type hints

    def store(self, **options: Any) -> FsspecBlobStore:
        return FsspecBlobStore(f"s3://{self.name}/blobs", **self.server.options(), **options)

    def key(self, blob_id: str, suffix: str = "") -> str:
        return f"{self.name}/blobs/{blob_path(blob_id)}{suffix}"

    def stored_keys(self) -> list[str]:
        return sorted(self.admin.find(self.name))


@pytest.fixture
def bucket(moto: MotoServer) -> Bucket:
    """A bucket of its own for each test, created by a client that is not the store under test."""
    admin = s3fs.S3FileSystem(skip_instance_cache=True, **moto.options())
    name = f"t-{uuid.uuid4().hex[:16]}"
    admin.mkdir(name)
    return Bucket(moto, name, admin)


@pytest.fixture
def source(tmp_path: Path) -> HandoffStore:
    """A thread with two sealed generations, the second large enough to be stored compressed."""
    store = HandoffStore(tmp_path / "alpha")
    store.save(_layers(1))
    store.save(_layers(2, 150_000))
    return store


def test_put_get_and_exists_round_trip_over_s3_in_the_shared_layout(bucket: Bucket) -> None:
    store = bucket.store()
    data = b"a sealed handoff, say"
    blob_id = store.put(data)
    assert blob_id == sha256_hex(data)
    assert store.get(blob_id) == data
    assert store.exists(blob_id)
    assert not store.exists(sha256_hex(b"never stored"))
    assert bucket.stored_keys() == [bucket.key(blob_id)]


def test_blobs_past_the_threshold_are_stored_compressed_over_s3(bucket: Bucket) -> None:
    store = bucket.store(compress_over=1000)
    small, large = b"a" * 1000, bytes(range(256)) * 4
    small_id, large_id = store.put(small), store.put(large)
    assert bucket.stored_keys() == sorted([bucket.key(small_id), bucket.key(large_id, ".zz")])
    assert zlib.decompress(bucket.admin.cat_file(bucket.key(large_id, ".zz"))) == large
    assert (store.get(small_id), store.get(large_id)) == (small, large)
    assert store.exists(large_id)


def test_putting_the_same_bytes_twice_uploads_them_once(bucket: Bucket) -> None:
    store = bucket.store()
    data = b"once is enough"
    assert store.put(data) == store.put(data) == bucket.store().put(data)
    key = bucket.key(sha256_hex(data))
    assert bucket.server.requests("PUT", key) == 1
    bucket.admin.pipe_file(key, data)  # the count sees a second upload when there is one
    assert bucket.server.requests("PUT", key) == 2


def test_a_missing_blob_is_blob_not_found_over_s3(bucket: Bucket) -> None:
    store = bucket.store()
    with pytest.raises(BlobNotFoundError, match="no blob"):
        store.get(sha256_hex(b"never stored"))


@pytest.mark.parametrize("blob_id", [pytest.param("../../etc/passwd", id="a path"), pytest.param("A" * 64, id="upper")])
def test_blob_ids_that_are_not_sha256_never_reach_the_store(bucket: Bucket, blob_id: str) -> None:
    store = bucket.store()
    before = bucket.server.requests()
    for call in (store.get, store.exists):
        with pytest.raises(BlobError, match="64 lowercase hex digits"):
            call(blob_id)
    assert bucket.server.requests() == before


def test_an_oversized_blob_is_refused_before_it_is_downloaded(bucket: Bucket) -> None:
    data = os.urandom(5000)
    blob_id = bucket.store().put(data)
    key = bucket.key(blob_id)
    heads = bucket.server.requests("HEAD", key)
    with pytest.raises(BlobError, match="5,000 bytes, over the 4,000-byte limit: refused before downloading"):
        bucket.store(max_bytes=4000).get(blob_id)
    assert (bucket.server.requests("HEAD", key), bucket.server.requests("GET", key)) == (heads + 1, 0)
    assert bucket.store().get(blob_id) == data  # and the count sees a download when there is one
    assert bucket.server.requests("GET", key) == 1


def test_a_compressed_blob_that_inflates_past_the_cap_is_refused(bucket: Bucket) -> None:
    bomb = b"\0" * (8 << 20)
    blob_id = sha256_hex(bomb)
    bucket.admin.pipe_file(bucket.key(blob_id, ".zz"), zlib.compress(bomb, 9))
    with pytest.raises(BlobError, match="inflates past the 1,048,576-byte cap"):
        bucket.store(max_bytes=1 << 20).get(blob_id)


@contextlib.contextmanager
def _wrong_endpoint(tmp_path: Path) -> Iterator[FsspecBlobStore]:
    """A port nothing listens on: connections are refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield FsspecBlobStore("s3://held/blobs", **_options(f"http://127.0.0.1:{port}", **FAST_FAIL))


@contextlib.contextmanager
def _stopped_server(tmp_path: Path) -> Iterator[FsspecBlobStore]:
    """A store that held a blob, then its server stopped: the same store must not now report the blob absent."""
    server = start_moto(tmp_path / "stopped.log")
    try:
        admin = s3fs.S3FileSystem(skip_instance_cache=True, **server.options())
        admin.mkdir("held")
        store = FsspecBlobStore("s3://held/blobs", **server.options(**FAST_FAIL))
        assert store.get(store.put(b"held")) == b"held"
    finally:
        server.stop()
    yield store


@contextlib.contextmanager
def _silent_server(tmp_path: Path) -> Iterator[FsspecBlobStore]:
    """A port that accepts connections (the kernel's backlog) but never answers: only a timeout ends the wait."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(16)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        yield FsspecBlobStore("s3://held/blobs", **_options(url, **{**FAST_FAIL, "read_timeout": 0.2}))


@pytest.mark.parametrize(
    ("unreachable", "calls"),
    [
        pytest.param(_wrong_endpoint, "get exists put adopt", id="wrong endpoint"),
        pytest.param(_stopped_server, "get exists put adopt", id="server stopped"),
        # s3fs tries a timed-out request five times (not configurable per store): one call shows the wait is bounded
        pytest.param(_silent_server, "exists", id="server never answers"),
    ],
)
def test_an_unreachable_store_is_an_error_never_empty(
    source: HandoffStore,
    tmp_path: Path,
    unreachable: Callable[[Path], contextlib.AbstractContextManager[FsspecBlobStore]],
    calls: str,
) -> None:
    blob_id = sha256_hex(b"held")
    descriptor = handoff_checkpoint(source, blobs=LocalBlobStore(tmp_path / "local"))
    with unreachable(tmp_path) as store:
        attempts: dict[str, Callable[[], object]] = {
            "get": lambda: store.get(blob_id),
            "exists": lambda: store.exists(blob_id),
            "put": lambda: store.put(b"held"),
            "adopt": lambda: adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=store),
        }
        for call in calls.split():
            started = time.monotonic()
            with pytest.raises(BlobError) as caught:
                attempts[call]()
            assert type(caught.value) is BlobError, f"{call}: {caught.value!r}"  # not BlobNotFoundError
            assert "127.0.0.1" in str(caught.value)
            assert SECRET not in str(caught.value)
            assert time.monotonic() - started < 10, call
    assert _listing(tmp_path / "beta-1") == []


def test_export_adopt_restore_over_s3_gives_the_same_five_layers_with_lineage(
    source: HandoffStore, bucket: Bucket, tmp_path: Path
) -> None:
    exporter, adopter = bucket.store(), bucket.store()  # each side opens the store on its own
    descriptor = handoff_checkpoint(source, blobs=exporter, to_agent="beta", summary="take over the port")
    assert bucket.stored_keys() == [bucket.key(descriptor.blob_id, ".zz")]  # generation 2 is past the threshold
    result = adopt_checkpoint(descriptor.to_json(), tmp_path / "beta-1", blobs=adopter)
    adopted = HandoffStore(tmp_path / "beta-1")
    assert _five_layers(adopted) == _five_layers(source)
    assert result.verified
    assert (result.adopted_from, result.new_thread_id, result.receipt.generation) == ("alpha:2", "beta-1", 1)
    lineage = adopted.restore().handoff.lineage.adopted_from
    assert lineage is not None
    assert (lineage.thread_id, lineage.generation, lineage.blob_id, lineage.blob_sha256) == (
        "alpha",
        2,
        descriptor.blob_id,
        descriptor.blob_sha256,
    )
    assert [e.event for e in adopted.journal.entries()[0]] == ["document", "adopted"]  # a journal-first save


_EXPORTER = """
import json, sys
from handoff_files import HandoffStore
from handoff_files.transfers.remote import FsspecBlobStore
from handoff_files.transfers.export import handoff_checkpoint
thread, url, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
store = HandoffStore(thread)
store.save(json.loads(sys.stdin.read()))
print(handoff_checkpoint(store, blobs=FsspecBlobStore(url, **options), to_agent="beta").to_json())
"""
_ADOPTER = """
import json, sys
from handoff_files.transfers.remote import FsspecBlobStore
from handoff_files.transfers.adopt import adopt_checkpoint
thread, url, options = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
result = adopt_checkpoint(sys.stdin.read(), thread, blobs=FsspecBlobStore(url, **options))
print(result.verified, result.new_thread_id, result.adopted_from)
"""


def test_round_trip_over_s3_across_two_processes_and_two_directories(
    bucket: Bucket, tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    """One process saves and exports to S3; another, given the descriptor and the endpoint, adopts elsewhere."""
    env = _fake_env(subprocess_env)
    url, options = f"s3://{bucket.name}/blobs", json.dumps(bucket.server.options())
    alpha, beta = tmp_path / "site-a" / "alpha", tmp_path / "site-b" / "beta"
    exported = subprocess.run(
        [python, "-c", _EXPORTER, str(alpha), url, options],
        input=json.dumps(_layers(3, 150_000)),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert exported.returncode == 0, exported.stderr
    descriptor = Descriptor.model_validate_json(exported.stdout)
    assert bucket.stored_keys() == [bucket.key(descriptor.blob_id, ".zz")]
    adopted = subprocess.run(
        [python, "-c", _ADOPTER, str(beta), url, options],
        input=exported.stdout,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert adopted.returncode == 0, adopted.stderr
    assert adopted.stdout.split() == ["True", "beta", "alpha:1"]
    assert _five_layers(HandoffStore(beta)) == _five_layers(HandoffStore(alpha))
    lineage = HandoffStore(beta).restore().handoff.lineage.adopted_from
    assert lineage is not None
    assert (lineage.thread_id, lineage.generation, lineage.blob_sha256) == ("alpha", 1, descriptor.blob_sha256)


def _flip_one_byte(bucket: Bucket, blob_id: str) -> None:
    [key] = [k for k in bucket.stored_keys() if blob_id in k]
    data = bytearray(bucket.admin.cat_file(key))
    if key.endswith(".zz"):  # change the content, not the compression: recompress a changed payload
        data = bytearray(zlib.decompress(bytes(data)))
        data[len(data) // 2] ^= 0x01
        bucket.admin.pipe_file(key, zlib.compress(bytes(data)))
    else:
        data[len(data) // 2] ^= 0x01
        bucket.admin.pipe_file(key, bytes(data))


def _changed_byte(generation: int) -> Callable[[Bucket, HandoffStore], dict[str, Any]]:
    def tamper(bucket: Bucket, source: HandoffStore) -> dict[str, Any]:
        descriptor = handoff_checkpoint(source, blobs=bucket.store(), generation=generation)
        _flip_one_byte(bucket, descriptor.blob_id)
        return descriptor.model_dump(mode="json")

    return tamper


def _swapped(bucket: Bucket, source: HandoffStore) -> dict[str, Any]:
    store = bucket.store()
    first = handoff_checkpoint(source, blobs=store, generation=1)
    second = handoff_checkpoint(source, blobs=store, generation=2)
    # generation 1's object now holds generation 2's bytes: a valid, sealed, other blob
    bucket.admin.pipe_file(bucket.key(first.blob_id), store.get(second.blob_id))
    return first.model_dump(mode="json")


def _another_hash(bucket: Bucket, source: HandoffStore) -> dict[str, Any]:
    descriptor = handoff_checkpoint(source, blobs=bucket.store()).model_dump(mode="json")
    descriptor["blob_sha256"] = sha256_hex(b"something else")
    return descriptor


def _no_hash(bucket: Bucket, source: HandoffStore) -> dict[str, Any]:
    descriptor = handoff_checkpoint(source, blobs=bucket.store()).model_dump(mode="json")
    del descriptor["blob_sha256"]
    return descriptor


@pytest.mark.parametrize(
    ("tamper", "refusal"),
    [
        pytest.param(_changed_byte(1), (BlobIntegrityError, "sha256 is"), id="one changed byte, raw blob"),
        pytest.param(_changed_byte(2), (BlobIntegrityError, "sha256 is"), id="one changed byte, compressed blob"),
        pytest.param(_swapped, (BlobIntegrityError, "the descriptor says"), id="swapped blob"),
        pytest.param(_another_hash, (BlobIntegrityError, "the descriptor says"), id="another hash"),
        pytest.param(_no_hash, (DescriptorError, "has no blob_sha256"), id="missing hash"),
    ],
)
def test_tampering_over_s3_is_refused_and_the_target_stays_untouched(
    source: HandoffStore,
    bucket: Bucket,
    tmp_path: Path,
    tamper: Callable[[Bucket, HandoffStore], dict[str, Any]],
    refusal: tuple[type[HandoffError], str],
) -> None:
    error, message = refusal
    descriptor = tamper(bucket, source)
    with pytest.raises(error, match=message):
        adopt_checkpoint(descriptor, tmp_path / "beta-1", blobs=bucket.store())
    assert _listing(tmp_path / "beta-1") == []


@pytest.mark.parametrize(
    "as_url",
    [pytest.param(lambda p: f"file://{p}", id="file URL"), pytest.param(str, id="plain path")],
)
@pytest.mark.parametrize(
    "data", [pytest.param(b"small", id="raw"), pytest.param(bytes(range(256)) * 500, id="compressed")]
)
def test_local_and_fsspec_stores_read_each_others_blobs(
    tmp_path: Path, as_url: Callable[[Path], str], data: bytes
) -> None:
    local = LocalBlobStore(tmp_path / "written-locally")
    remote = FsspecBlobStore(as_url(tmp_path / "written-locally"))
    blob_id = local.put(data)
    assert remote.exists(blob_id)
    assert remote.get(blob_id) == data
    assert remote.put(data) == blob_id
    writer = FsspecBlobStore(as_url(tmp_path / "written-by-fsspec"))
    assert writer.put(data) == blob_id
    assert LocalBlobStore(tmp_path / "written-by-fsspec").get(blob_id) == data
    assert _listing(tmp_path / "written-by-fsspec") == _listing(tmp_path / "written-locally")


def test_a_local_store_that_cannot_be_looked_into_is_an_error_never_empty(tmp_path: Path) -> None:
    """fsspec's own ``exists`` says False here (it takes any error as "absent"); the store must not."""
    (tmp_path / "not-a-folder").write_bytes(b"")
    store = FsspecBlobStore(tmp_path / "not-a-folder")
    for call in (store.exists, store.get):
        with pytest.raises(BlobError, match="cannot look into the blob store: NotADirectoryError") as caught:
            call(sha256_hex(b"x"))
        assert type(caught.value) is BlobError


def test_a_fifo_where_a_blob_should_be_is_refused_not_waited_on(tmp_path: Path) -> None:
    blob_id = sha256_hex(b"x")
    fifo = tmp_path / "blobs" / blob_path(blob_id)
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    with pytest.raises(BlobError, match="not a blob"):
        FsspecBlobStore(tmp_path / "blobs").get(blob_id)


def test_other_filesystems_write_a_temp_name_then_move_it(tmp_path: Path) -> None:
    """memory:// stands for SFTP and the like (no atomic single write): the blob arrives whole, no temp stays."""
    root = f"memory://{tmp_path.name}-{uuid.uuid4().hex}"
    store = FsspecBlobStore(root, compress_over=1000)
    small, large = b"s" * 10, b"l" * 2000
    ids = [store.put(small), store.put(large), store.put(small)]
    assert ids == [sha256_hex(small), sha256_hex(large), sha256_hex(small)]
    assert (store.get(ids[0]), store.get(ids[1])) == (small, large)
    assert store.exists(ids[1])
    fs = store._fs  # the filesystem fsspec made, to list what is stored there
    names = sorted(path.rsplit("/", 1)[1] for path in fs.find(root))
    assert names == sorted([ids[0], f"{ids[1]}.zz"])


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        pytest.param("s3://bucket/prefix", "s3://bucket/prefix", id="nothing to hide"),
        pytest.param("sftp://ann:hunter2@host:2222/blobs", "sftp://host:2222/blobs", id="user and password"),
        pytest.param("s3://bucket/p?access_key=k&secret=s", "s3://bucket/p", id="query string"),
        pytest.param("simplecache::s3://ann:pw@b/p?x=1", "simplecache::s3://b/p", id="chained"),
    ],
)
def test_urls_are_shown_without_credentials(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_repr_names_the_url_but_no_storage_option() -> None:
    store = FsspecBlobStore("s3://bucket/blobs", **_options("http://127.0.0.1:9"))
    assert repr(store) == "FsspecBlobStore('s3://bucket/blobs')"
    assert SECRET not in repr(store)


def test_an_unknown_filesystem_is_a_blob_error() -> None:
    with pytest.raises(BlobError, match="cannot open this blob store"):
        FsspecBlobStore("no-such-protocol://x/y")


@pytest.mark.parametrize(
    ("modules", "imported"),
    [
        pytest.param(
            "handoff_files, handoff_files.transfers.blobs, handoff_files.transfers.export, "
            "handoff_files.transfers.adopt, handoff_files.transfers.handover",
            [],
            id="restore and transfer",
        ),
        pytest.param("handoff_files.transfers.remote", ["fsspec"], id="the remote store itself"),
    ],
)
def test_only_the_remote_store_imports_fsspec(
    python: str, subprocess_env: dict[str, str], modules: str, imported: list[str]
) -> None:
    code = f"import sys, {modules}; print(sorted({{m.split('.')[0] for m in sys.modules}} & {{'fsspec', 's3fs'}}))"
    out = subprocess.run([python, "-c", code], env=subprocess_env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == repr(imported)

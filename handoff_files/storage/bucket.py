"""The seam on an S3-compatible bucket, through ``obstore`` (the ``[s3]`` extra): conditional writes as headers.

- **create** is ``PUT`` with ``If-None-Match: *`` (obstore's ``mode="create"``): the store refuses
  a second create of one key with 412, told as :class:`~handoff_files.foundation.errors.ObjectExistsError`;
- **replace** is ``PUT`` with ``If-Match: <etag>`` (``mode={"e_tag": …}``): 412 when the object
  changed, told as :class:`~handoff_files.foundation.errors.ObjectChangedError`;
- **read** is one ``GET``: its size is checked against the limit before its body is read, and
  the body is read no further than the limit whatever the size said.

Credentials, region and endpoint come from the standard AWS environment (``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION``, ``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP=true`` for a
plain-HTTP endpoint such as a local test server), never from the URL, and are never written to a
file, an error or a log. Requests are bounded in time (:data:`TIMEOUT`, retried for at most
:data:`RETRY_FOR`), so a store that does not answer fails the call instead of hanging it.

Which stores qualify: those with strong read-after-write and list-after-write consistency and
conditional ``PUT`` (S3 since 2024 for ``If-None-Match``, and ``If-Match``; SeaweedFS, as tested here).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import re
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, Final, NoReturn

from handoff_files.foundation.errors import (
    HandoffError,
    HandoffNotFoundError,
    HandoffTooLargeError,
    ObjectChangedError,
    ObjectExistsError,
    StorageUnavailableError,
)
from handoff_files.storage.seam import Stored, check_data, check_key, under

if TYPE_CHECKING:
    from obstore.store import S3Store

__all__ = ["RETRY_FOR", "TIMEOUT", "BucketStorage", "parse_url"]

#: one request's time limit, and how long a failing request is retried before the call fails
TIMEOUT: Final = dt.timedelta(seconds=30)
RETRY_FOR: Final = dt.timedelta(seconds=20)
_BUCKET: Final = re.compile(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]")
_HIDDEN: Final = "s3://…"  # a URL that held credentials is never shown
_INSTALL: Final = "object storage needs the s3 extra: pip install 'handoff-files[s3]'"


def parse_url(url: str) -> tuple[str, str]:
    """The bucket and the prefix (no leading or trailing ``/``) of ``s3://bucket/prefix``.

    :raises HandoffError: if it is not such a URL, or carries credentials (they come from the environment).
    """
    if not url.startswith("s3://"):
        raise HandoffError(_shown(url), "not an s3:// URL")
    rest = url.removeprefix("s3://")
    bucket, _, prefix = rest.partition("/")
    if "@" in bucket or ":" in bucket:
        msg = "credentials never go in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in the environment"
        raise HandoffError(_HIDDEN, msg)
    if not _BUCKET.fullmatch(bucket):
        raise HandoffError(_shown(url), f"not a bucket name: {bucket[:70]!r} (3 to 63 of a-z, 0-9, '.', '-')")
    prefix = prefix.strip("/")
    if prefix:
        check_key(prefix, _shown(url))
    return bucket, prefix


def _shown(url: str) -> str:
    """*url* as an error names it: what follows ``@`` in its host part only, cut short."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    host = host.rpartition("@")[2]
    return (f"{scheme}{sep}{host}{slash}{path}" if sep else url)[:200]


class BucketStorage:
    """Objects under ``s3://bucket/prefix``: the root is the prefix, a key is the rest of the object's name."""

    def __init__(self, url: str, *, store: S3Store | None = None) -> None:
        """:param store: an obstore ``S3Store`` made by the caller (its own credentials, options); by
        default one from the AWS environment, for the bucket and prefix of *url*."""
        self.bucket, self.prefix = parse_url(url)
        self._url = f"s3://{self.bucket}/{self.prefix}".rstrip("/")
        try:
            import obstore  # noqa: PLC0415 -- the optional extra, loaded only for a bucket
            from obstore.store import S3Store  # noqa: PLC0415
        except ImportError:
            raise HandoffError(self._url, _INSTALL) from None
        self._obs: Any = obstore
        if store is None:
            # given client options replace those obstore reads from the environment: AWS_ALLOW_HTTP is read here
            endpoint = os.environ.get("AWS_ENDPOINT_URL", "")
            if endpoint and not endpoint.startswith(("http://", "https://")):  # obstore would panic at the request
                msg = f"AWS_ENDPOINT_URL must be a URL such as http://127.0.0.1:8333, not {endpoint[:80]!r}"
                raise HandoffError(self._url, msg)
            allow_http = os.environ.get("AWS_ALLOW_HTTP", "").strip().lower() in {"true", "1", "yes"}
            with _request(self._url, "open"):  # the client refuses some settings at once (one credential of two)
                store = S3Store(
                    self.bucket,
                    prefix=self.prefix or None,
                    client_options={
                        "timeout": TIMEOUT,
                        "connect_timeout": dt.timedelta(seconds=5),
                        "allow_http": allow_http,
                    },
                    retry_config={"max_retries": 3, "retry_timeout": RETRY_FOR},
                )
        self._store = store

    def __repr__(self) -> str:
        return f"BucketStorage({self._url!r})"

    @property
    def where(self) -> str:
        """``s3://bucket/prefix``."""
        return self._url

    def read(self, key: str, *, limit: int) -> Stored:
        """See :meth:`~handoff_files.storage.seam.Storage.read`."""
        stored = self._get(key, limit, None)
        assert stored is not None  # noqa: S101 -- only a conditional GET answers "not modified"
        return stored

    def read_changed(self, key: str, etag: str, *, limit: int) -> Stored | None:
        """See :meth:`~handoff_files.storage.seam.Storage.read_changed`: ``If-None-Match``, a 304 without a body."""
        return self._get(key, limit, etag)

    def _get(self, key: str, limit: int, unless: str | None) -> Stored | None:
        """One ``GET`` of *key* (with ``If-None-Match: unless`` when given: None for a 304)."""
        named = self._named(key)
        with _request(named, "read"):
            try:
                options = {} if unless is None else {"options": {"if_none_match": unless}}
                got = self._obs.get(self._store, key, **options)
                data = _body(got, named, limit)
            except FileNotFoundError:
                raise HandoffNotFoundError(named, "no such object") from None
            except self._obs.exceptions.NotModifiedError:
                return None
        return Stored(data, _etag(got.meta.get("e_tag"), named))

    def create(self, key: str, data: bytes) -> str:
        """See :meth:`~handoff_files.storage.seam.Storage.create`."""
        named = self._named(key)
        data = check_data(data, named)
        with _request(named, "create"):
            try:
                put = self._obs.put(self._store, key, data, mode="create")
            except self._obs.exceptions.AlreadyExistsError:
                raise ObjectExistsError(named, "already exists: another writer created it first") from None
        return _etag(put.get("e_tag"), named)

    def replace(self, key: str, data: bytes, etag: str) -> str:
        """See :meth:`~handoff_files.storage.seam.Storage.replace`."""
        named = self._named(key)
        data = check_data(data, named)
        exceptions = self._obs.exceptions
        with _request(named, "replace"):
            try:
                put = self._obs.put(self._store, key, data, mode={"e_tag": etag})
            except (exceptions.PreconditionError, exceptions.AlreadyExistsError):
                raise ObjectChangedError(named, f"changed since it was read (it was at {etag})") from None
            except FileNotFoundError:
                raise ObjectChangedError(named, f"is gone: it was at {etag} when read") from None
        return _etag(put.get("e_tag"), named)

    def list(self, prefix: str = "") -> list[str]:
        """See :meth:`~handoff_files.storage.seam.Storage.list`."""
        start = prefix.rpartition("/")[0]
        if start:
            check_key(start, self._url)
        with _request(self._url, "list"):
            pages = self._obs.list(self._store, prefix=start or None, chunk_size=1000)
            keys = (str(meta["path"]) for page in pages for meta in page)
            return under(_valid(keys), prefix)

    def remove(self, key: str) -> None:
        """See :meth:`~handoff_files.storage.seam.Storage.remove`."""
        named = self._named(key)
        with _request(named, "remove"), contextlib.suppress(FileNotFoundError):
            self._obs.delete(self._store, key)

    def _named(self, key: str) -> str:
        return f"{self._url}/{check_key(key, self._url)}"


def _body(got: Any, named: str, limit: int) -> bytes:
    """A GET's body, refused unread past *limit* by its size, and cut off past it whatever the size said."""
    size = got.meta["size"]
    if size > limit:
        raise HandoffTooLargeError(named, f"{size} bytes, more than the {limit} read")
    chunks, read = [], 0
    for chunk in got.stream(min_chunk_size=1 << 16):
        chunks.append(bytes(chunk))
        read += len(chunk)
        if read > limit:
            raise HandoffTooLargeError(named, f"more than the {limit} bytes read (its size said {size})")
    return b"".join(chunks)


def _valid(keys: Any) -> Any:
    """The listed names that are keys this library writes (another program's objects are passed over)."""
    for key in keys:
        try:
            yield check_key(str(PurePosixPath(key)), "")
        except HandoffError:
            continue


def _etag(etag: object, named: str) -> str:
    if not isinstance(etag, str) or not etag:
        raise HandoffError(named, "the store gave no etag: it cannot make the conditional writes a thread needs")
    return etag


def _failed(named: str, what: str, exc: BaseException) -> NoReturn:
    """Raise for a failed request: its kind and the first line of its message, no more; a setting that cannot
    work (no such bucket, no credentials, plain HTTP not allowed, an endpoint that is not a URL) as a plain
    HandoffError saying what to change, anything else as StorageUnavailableError (worth trying again)."""
    full = str(exc)
    first = full.strip().splitlines()[0] if full.strip() else type(exc).__name__
    said = f"cannot {what} it: {type(exc).__name__}: {first[:300]}"
    if _panicked(exc):  # obstore's Rust side gave up: an endpoint that is not a URL
        msg = f"cannot {what} it: AWS_ENDPOINT_URL must be a URL such as http://127.0.0.1:8333 ({first[:200]})"
        raise HandoffError(named, msg) from None
    for mark, why in _SETTINGS:
        if mark in full:
            raise HandoffError(named, f"cannot {what} it: {why}") from exc
    if "error sending request" in full:  # no answer at all: connection refused, no such host, TLS to plain HTTP
        endpoint = os.environ.get("AWS_ENDPOINT_URL") or "AWS's own endpoint (AWS_ENDPOINT_URL is not set)"
        said = f"cannot {what} it: no answer from {endpoint[:120]} (is the store running, and the endpoint right?)"
    raise StorageUnavailableError(named, said) from exc


#: what a store's reply says when a setting cannot work, and what to tell the user: never worth a retry
_SETTINGS: Final = (
    ("NoSuchBucket", "no such bucket at this endpoint (NoSuchBucket): check the URL's bucket and AWS_ENDPOINT_URL"),
    ("builder error", "the client refused its settings: a plain-http endpoint needs AWS_ALLOW_HTTP=true"),
    (
        "169.254.169.254",
        "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE); none came from the "
        "environment, so the client asked the instance metadata service",
    ),
    ("AccessDenied", "access denied (AccessDenied): these credentials may not do this in this bucket"),
    ("Missing AccessKeyId", "AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is not: set both, or neither"),
    ("MissingSecretAccessKey", "AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is not: set both, or neither"),
    ("InvalidAccessKeyId", "the access key is not known to the store (InvalidAccessKeyId): check AWS_ACCESS_KEY_ID"),
    ("SignatureDoesNotMatch", "the secret key does not match (SignatureDoesNotMatch): check AWS_SECRET_ACCESS_KEY"),
)


@contextlib.contextmanager
def _request(named: str, what: str) -> Iterator[None]:
    """Around one request: a HandoffError passes; any other failure of the client (obstore's errors, a panic
    of its Rust side) is told as :func:`_failed` tells it, naming *named*; KeyboardInterrupt and the like pass."""
    try:
        yield
    except HandoffError:
        raise
    except Exception as exc:  # obstore's errors share no base but Exception
        _failed(named, what, exc)
    except BaseException as exc:
        if not _panicked(exc):
            raise
        _failed(named, what, exc)


def _panicked(exc: BaseException) -> bool:
    """Whether *exc* is obstore's Rust side panicking (pyo3's PanicException derives from BaseException)."""
    return type(exc).__name__ == "PanicException"

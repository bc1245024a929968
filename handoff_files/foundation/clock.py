"""The clock: timezone-aware UTC times, written the one way every file of a thread writes them."""

from __future__ import annotations

import datetime as dt
from typing import Literal

__all__ = ["file_stamp", "iso_z", "utc_now"]

Timespec = Literal["auto", "seconds", "milliseconds", "microseconds"]


def utc_now() -> dt.datetime:
    """The current time, timezone-aware, in UTC."""
    return dt.datetime.now(dt.UTC)


def iso_z(moment: dt.datetime | None = None, *, timespec: Timespec = "milliseconds") -> str:
    """*moment* (default: now) as ISO 8601 text in UTC with a ``Z``: ``2026-11-23T19:18:03.123Z``."""
    moment = utc_now() if moment is None else moment.astimezone(dt.UTC)
    return moment.isoformat(timespec=timespec).replace("+00:00", "Z")


def file_stamp(moment: dt.datetime | None = None) -> str:
    """*moment* (default: now) in UTC as a file-name-safe stamp: ``20261123T191803123456Z``."""
    moment = utc_now() if moment is None else moment.astimezone(dt.UTC)
    return moment.strftime("%Y%m%dT%H%M%S%fZ")

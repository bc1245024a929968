"""The one fake in the inbox tests: time, which advances only when a test moves it."""

from __future__ import annotations

import datetime as dt


class Clock:
    """The inbox's clock, moved by hand so expiry is exact and instant."""

    def __init__(self) -> None:
        self.now = dt.datetime(2030, 1, 2, 3, 4, 5, tzinfo=dt.UTC)

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += dt.timedelta(seconds=seconds)

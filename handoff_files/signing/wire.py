"""SSH's wire encoding (RFC 4251 §5): ``uint32`` and ``string``, written and read with bounds.

Everything read here comes from a file someone else may have written: a length is checked against
what is left before anything is sliced, and a reader that is not used up is refused.
"""

from __future__ import annotations

import struct
from typing import Final

__all__ = ["Reader", "WireError", "string", "uint32"]

_UINT32: Final = struct.Struct(">I")


class WireError(ValueError):
    """The bytes are not what the encoding says (cut short, too long, or with bytes left over)."""


def uint32(value: int) -> bytes:
    """``uint32``: four bytes, big-endian."""
    return _UINT32.pack(value)


def string(value: bytes | str) -> bytes:
    """``string``: a ``uint32`` length, then the bytes (a ``str`` as UTF-8)."""
    data = value.encode() if isinstance(value, str) else value
    return _UINT32.pack(len(data)) + data


class Reader:
    """Reads ``uint32``, ``string`` and raw bytes from *data*, front to back."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._at = 0

    def raw(self, count: int) -> bytes:
        """The next *count* bytes."""
        if count > len(self._data) - self._at:
            msg = f"cut short: {count} bytes wanted, {len(self._data) - self._at} left"
            raise WireError(msg)
        value = self._data[self._at : self._at + count]
        self._at += count
        return value

    def uint32(self) -> int:
        """The next ``uint32``."""
        value: int = _UINT32.unpack(self.raw(4))[0]
        return value

    def string(self) -> bytes:
        """The next ``string``'s bytes."""
        return self.raw(self.uint32())

    def text(self) -> str:
        """The next ``string``, as UTF-8 text."""
        try:
            return self.string().decode()
        except UnicodeDecodeError as exc:
            msg = "a name that is not UTF-8"
            raise WireError(msg) from exc

    def end(self) -> None:
        """Refuse bytes left over."""
        if self._at != len(self._data):
            msg = f"{len(self._data) - self._at} bytes left over"
            raise WireError(msg)

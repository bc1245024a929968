"""The hostile corpus: every kind of bad input derived from real sealed generations, and the one verdict rule.

Inputs are made from files the library itself wrote (a thread of three generations, JSON or YAML):
truncations, bit flips, duplicate keys, NaN/Infinity, huge integers, deep nesting, invalid UTF-8,
byte-order marks, YAML tags, merge keys, anchors and a billion laughs, large files, and the
filesystem shapes an attacker can leave (FIFO, 8 GiB sparse file, symlink and hard link to an
outside file, a directory). ``tests/hostile_run.py`` feeds each one to an entry point in a child
process; ``tests/test_hostile_corpus.py`` checks each verdict.

The verdict rule, one for every entry point: an input is read back *equal* to a generation the
library wrote (the damage was a no-op, or the reader went round it), *refused* with a
``HandoffError`` naming the file, or *recovered* to an older verified generation with the damage
reported. Anything else (another exception, a crash, a hang, content no verified generation had,
a recovery that says nothing) is a failure.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

#: Verdicts the rule allows.
ALLOWED: Final = frozenset({"equal", "refused", "recovered"})

MB: Final = 1000 * 1000
#: The JSON size limit (docs/format.md "Limits"): a file one byte over it is refused before parsing.
MAX_JSON_BYTES: Final = 16 * 1024 * 1024

Mutate = Callable[[bytes], bytes]


@dataclass(frozen=True)
class Hostile:
    """One input: bytes derived from the target's original bytes, or a filesystem shape put in its place."""

    name: str
    mutate: Mutate | None = None  # None: *shape* says what to place
    shape: str = ""  # "fifo", "sparse", "symlink", "hardlink", "directory"


# -- damage that keeps the rest of the file ---------------------------------------------------------


def truncate(at: int) -> Mutate:
    """Keep the first *at* bytes (negative: drop that many from the end)."""
    return lambda data: data[:at]


def cut(fraction: float) -> Mutate:
    """Keep that *fraction* of the file."""
    return lambda data: data[: int(len(data) * fraction)]


def flip(positions: tuple[int, ...], bits: tuple[int, ...]) -> Mutate:
    """Flip one bit at each position (taken modulo the length, so one list fits every file)."""

    def mutate(data: bytes) -> bytes:
        out = bytearray(data)
        for position, bit in zip(positions, bits, strict=True):
            if out:
                out[position % len(out)] ^= 1 << bit
        return bytes(out)

    return mutate


def _replace(old: bytes, new: bytes) -> Mutate:
    """Replace the first *old* (a mutation that finds nothing to replace is a no-op: its verdict is ``equal``)."""
    return lambda data: data.replace(old, new, 1)


def _value_end(data: bytes, begin: int) -> int:
    """Where the JSON or flow value starting at *begin* ends: its matching bracket, or the end of its scalar."""
    if data[begin : begin + 1] not in (b"[", b"{"):
        end = begin
        while end < len(data) and data[end : end + 1] not in b",}\n":
            end += 1
        return end
    depth, in_string, end = 0, False, begin
    while end < len(data):
        char = data[end : end + 1]
        if in_string:
            in_string = char != b'"'
        elif char == b'"':
            in_string = True
        elif char in b"[{":
            depth += 1
        elif char in b"]}":
            depth -= 1
            if depth == 0:
                return end + 1
        end += 1
    return end


def _replace_value(key: bytes, value: bytes) -> Mutate:
    """Give *key*'s first occurrence the raw *value*: in JSON (``"key": v``), YAML flow or YAML block alike."""

    def mutate(data: bytes) -> bytes:
        for prefix in (b'"' + key + b'": ', b'"' + key + b'":', key + b": "):
            start = data.find(prefix)
            if start >= 0:
                begin = start + len(prefix)
                return data[:begin] + value + data[_value_end(data, begin) :]
        lines = data.split(b"\n")
        for i, line in enumerate(lines):
            if line.strip() == key + b":":  # a YAML block value: the lines indented deeper are its value
                indent = len(line) - len(line.lstrip())
                end = i + 1
                while end < len(lines) and len(lines[end]) - len(lines[end].lstrip()) > indent:
                    end += 1
                return b"\n".join([*lines[:i], line + b" " + value, *lines[end:]])
        return data

    return mutate


def _duplicate_first_key(data: bytes) -> bytes:
    """The first member again: in JSON ``{"k": v, "k": v, …``; in YAML its line twice."""
    if data.lstrip().startswith(b"{"):
        first_line = next(line for line in data.splitlines() if b'":' in line)
        return data.replace(first_line, first_line + b"\n" + first_line, 1)
    line = next(line for line in data.splitlines() if line and not line.startswith(b"#"))
    return data.replace(line + b"\n", line + b"\n" + line + b"\n", 1)


def _utf16(bom: str) -> Mutate:
    return lambda data: data.decode("utf-8", "replace").encode(bom)


def _whole(text: bytes) -> Mutate:
    """Replace the whole file."""
    return lambda _data: text


def _billion_laughs() -> bytes:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n']
    lines += [f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi", strict=True)]
    return "".join(lines).encode()


def _pad(size: int) -> Mutate:
    """Trailing spaces to *size* bytes: whitespace does not count in the seal, so under the limit this is a no-op."""
    return lambda data: data + b" " * max(0, size - len(data))


def _deep(opening: bytes, closing: bytes, levels: int) -> Mutate:
    return _replace_value(b"data", opening * levels + closing * levels)


STRUCTURAL: Final[tuple[Hostile, ...]] = (
    Hostile("empty", _whole(b"")),
    Hostile("nul-bytes", _whole(b"\0" * 4096)),
    Hostile("duplicate-key", _duplicate_first_key),
    Hostile("flip-in-text", _replace(b"gen 2", b"gen 3")),  # one bit ("2" 0x32, "3" 0x33): a valid, different text
    Hostile("nan", _replace_value(b"energy_level", b"NaN")),
    Hostile("yaml-nan", _replace_value(b"energy_level", b".nan")),
    Hostile("infinity", _replace_value(b"energy_level", b"-Infinity")),
    Hostile("yaml-inf", _replace_value(b"energy_level", b".inf")),
    Hostile("int-2-64", _replace_value(b"error_count", b"18446744073709551616")),
    Hostile("int-5000-digits", _replace_value(b"error_count", b"1" + b"0" * 5000)),
    Hostile("float-1e300-in-an-integer", _replace_value(b"error_count", b"1e300")),
    Hostile("float-1e400-overflows-to-infinity", _replace_value(b"energy_level", b"1e400")),
    Hostile("int-in-data-5000-digits", _replace_value(b"data", b"[" + b"9" * 5000 + b"]")),
    Hostile("deep-list-100000", _deep(b"[", b"]", 100_000)),
    Hostile("deep-object-50000", _deep(b'{"a":', b"}", 50_000)),
    Hostile("deep-list-lines-4000", _replace_value(b"data", b"\n" + b"  [\n" * 4000 + b"  ]\n" * 4000)),
    Hostile("deep-document-100000", _whole(b"[" * 100_000 + b"]" * 100_000)),
    Hostile("invalid-utf8-ff", _replace(b"gen", b"g\xffn")),
    Hostile("invalid-utf8-overlong", _replace(b"gen", b"g\xc0\xafn")),
    Hostile("invalid-utf8-truncated-sequence", _replace(b"gen", b"g\xe2\x82n")),
    Hostile("lone-surrogate-escape", _replace(b"gen", b"g\\ud800n")),
    Hostile("bom-utf8", lambda data: b"\xef\xbb\xbf" + data),
    Hostile("bom-utf16-le", _utf16("utf-16")),  # Python's utf-16 writes a BOM in native (little-endian) order
    Hostile("utf16-be", _utf16("utf-16-be")),
    Hostile("utf32", _utf16("utf-32")),
    Hostile("yaml-tag-python-object", _replace_value(b"narrative", b'!!python/object/apply:os.system ["true"]')),
    Hostile("yaml-tag-python-name", _replace_value(b"narrative", b"!!python/name:os.system")),
    Hostile("yaml-tag-binary", _replace_value(b"narrative", b"!!binary aGVsbG8=")),
    Hostile("yaml-tag-local", _replace_value(b"narrative", b"!custom gen 2")),
    Hostile("yaml-document-tag", _whole(b"--- !!python/object:builtins.dict {}\n")),
    Hostile("yaml-merge-key", _whole(b"base: &b {narrative: injected}\n<<: *b\nschema_version: '2.0'\n")),
    Hostile("yaml-merge-into-state", _replace_value(b"data", b"{<<: {n: 99}}")),
    Hostile("yaml-anchor-alias", _replace_value(b"data", b"&x {n: 2, m: *x}")),
    Hostile("billion-laughs", _whole(_billion_laughs())),
    Hostile("two-documents", lambda data: data + b"\n---\n" + data),
    Hostile("json-trailing-garbage", lambda data: data + b"\n}{"),
    Hostile("yaml-in-json-file", _whole(b"schema_version: '2.0'\nnarrative: injected\n")),
    Hostile("padded-1MB", _pad(MB)),
    Hostile("over-json-limit", _pad(MAX_JSON_BYTES + 1)),
)

SHAPES: Final[tuple[Hostile, ...]] = tuple(
    Hostile(shape, shape=shape) for shape in ("fifo", "sparse", "symlink", "hardlink", "directory")
)


def _text_data(size: int) -> Mutate:
    """``data`` holding one string of *size* bytes (built when applied: importing the corpus stays cheap)."""

    def mutate(data: bytes) -> bytes:
        return _replace_value(b"data", b'{"x": "' + b"y" * size + b'"}')(data)

    return mutate


def _list_data(items: int) -> Mutate:
    """``data`` holding a list of *items* zeros."""

    def mutate(data: bytes) -> bytes:
        return _replace_value(b"data", b"[" + b"0," * items + b"0]")(data)

    return mutate


#: What ``make slow`` adds: the large files (each built only when applied).
LARGE: Final[tuple[Hostile, ...]] = (
    Hostile("padded-16MB", _pad(16 * MB)),
    Hostile("data-16MB", _text_data(16 * MB)),
    Hostile("padded-50MB", _pad(50 * MB)),
    Hostile("list-50MB", _list_data(25 * MB)),
)


def random_damage(seed: int, count: int) -> Iterator[Hostile]:
    """*count* truncations and bit flips (single and multiple), the same for the same *seed*.

    Positions are fractions of the file's length, so one sample fits files of any size.
    """
    rng = random.Random(seed)
    for i in range(count):
        kind = i % 3
        if kind == 0:
            fraction = rng.random()
            yield Hostile(f"truncate-{seed}-{i}", cut(fraction))
        else:
            flips = 1 if kind == 1 else rng.randint(2, 8)
            positions = tuple(rng.randrange(1 << 30) for _ in range(flips))
            bits = tuple(rng.randrange(8) for _ in range(flips))
            yield Hostile(f"flip{flips}-{seed}-{i}", flip(positions, bits))


def corpus(*, seeds: range, per_seed: int, large: bool) -> list[Hostile]:
    """The corpus: every structural input and shape, fixed truncations, and *per_seed* random ones per seed."""
    fixed = [Hostile(f"truncate-at-{at}", truncate(at)) for at in (1, 2, 10, 100, -1, -2, -10)]
    inputs = [*STRUCTURAL, *SHAPES, *fixed, *(LARGE if large else ())]
    for seed in seeds:
        inputs.extend(random_damage(seed, per_seed))
    return inputs


def by_name(inputs: list[Hostile]) -> dict[str, Hostile]:
    """The inputs by name (names are unique)."""
    named = {hostile.name: hostile for hostile in inputs}
    assert len(named) == len(inputs), "duplicate input names"
    return named

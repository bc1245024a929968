"""The codec: strict parsing of handoff bytes (JSON or YAML, told apart by content) and rendering back."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
from collections.abc import Generator, Mapping
from typing import Any, Final, Literal

import orjson

from handoff_files.format.bounds import (
    MAX_YAML_BYTES,
    MAX_YAML_NODES,
    YamlShape,
    check_yaml_bytes,
    collector_paused,
    count_values,
    json_depth,
    json_skeleton,
    too_deep,
)
from handoff_files.format.model import MAX_DEPTH
from handoff_files.format.tree import check_tree, kind
from handoff_files.foundation.errors import HandoffParseError, HandoffTooLargeError, HandoffValidationError

__all__ = ["MAX_FILE_BYTES", "Format", "detect_format", "parse", "parse_json", "render"]

Format = Literal["json", "yaml"]

#: Largest file the loader reads. A handoff is a working summary; 16 MiB is far past any real one.
#: A YAML file has tighter bounds (:mod:`handoff_files.format.bounds`).
MAX_FILE_BYTES: Final = 16 * 1024 * 1024

_RENDERED: Final = "<rendered>"  # the "path" named when our own rendering fails its check

_FIRST_CHAR: Final = re.compile(rb"[ \t\r\n]*(.)", re.DOTALL)
# in orjson's 2-space rendering every newline is structural and indentation is 2 x depth
_TOO_DEEP_LINE: Final = b"\n" + b" " * (2 * (MAX_DEPTH + 1))
_LONG_DIGITS: Final = re.compile(rb"\d{19}")

YAML_HEADER: Final = (
    "# handoff-files handoff. Edit freely: an edit breaks the seal on purpose, and\n"
    "# `handoff seal PATH` makes the edited file the next sealed generation.\n"
)


def detect_format(data: bytes) -> Format:
    """Tell JSON from YAML by content: a document whose first non-blank byte is ``{`` is JSON."""
    match = _FIRST_CHAR.match(data)
    return "json" if match is not None and match.group(1) == b"{" else "yaml"


def parse(data: bytes, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Parse *data* strictly into a JSON-mode mapping.

    JSON: duplicate keys, NaN/Infinity, integers beyond 64 bits and nesting past
    :data:`~handoff_files.format.model.MAX_DEPTH` are refused. YAML: safe loading only (no tags that
    build objects), duplicate keys refused; its size, values, nesting, anchors and aliases are
    bounded (:mod:`handoff_files.format.bounds`) before any tree is built; its timestamps become
    ISO strings.

    :param data: the file's bytes.
    :param path: named in errors.
    :returns: the top-level mapping.
    :raises HandoffParseError: for any of the above, or invalid UTF-8, or a top level that is not a mapping.
    :raises HandoffTooLargeError: past :data:`MAX_FILE_BYTES`, or a YAML file past
        :data:`~handoff_files.format.bounds.MAX_YAML_BYTES`.
    """
    _check_bytes(data, path, MAX_FILE_BYTES)
    with collector_paused():  # a parse makes only new, acyclic containers: no collection is needed
        document = _parse_json(data, path) if detect_format(data) == "json" else _parse_yaml(data, path)
    if not isinstance(document, dict):
        msg = f"expected a mapping at the top level, found {kind(document)}"
        raise HandoffParseError(path, msg)
    return document


def parse_json(data: bytes, path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES) -> Any:
    """Parse JSON bytes strictly: the one reader for every JSON byte that enters from outside.

    Handoff files, ``state.json``, journal lines, descriptors, inbox records and SW4RM context
    bytes all come through here, so the same rules hold at every entry point: duplicate keys,
    NaN/Infinity, integers beyond 64 bits, nesting past :data:`~handoff_files.format.model.MAX_DEPTH`,
    invalid UTF-8, a byte-order mark and more than *limit* bytes are refused.

    :param data: the bytes (one file, one journal line …).
    :param path: named in errors.
    :param limit: the most bytes accepted.
    :returns: the parsed value (any JSON type; callers check the shape they expect).
    :raises HandoffParseError: for any of the above.
    :raises HandoffTooLargeError: past *limit*.
    """
    _check_bytes(data, path, limit, what="invalid JSON: the text ")
    with collector_paused():
        return _parse_json(data, path)


def _check_bytes(data: bytes, path: str | os.PathLike[str], limit: int, *, what: str = "file ") -> None:
    if len(data) > limit:
        msg = f"file is {len(data):,} bytes, over the {limit:,}-byte limit"
        raise HandoffTooLargeError(path, msg)
    if data.startswith(b"\xef\xbb\xbf"):
        msg = f"{what}starts with a UTF-8 byte-order mark; save it as UTF-8 without BOM"
        raise HandoffParseError(path, msg)


def _parse_json(data: bytes, path: str | os.PathLike[str]) -> Any:
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        # orjson's messages are terse; the strict stdlib parse explains NaN, duplicates and bad bytes better
        _parse_json_strict(data, path)
        msg = f"invalid JSON: {exc}"
        raise HandoffParseError(path, msg) from exc
    try:
        rendered = orjson.dumps(document, option=orjson.OPT_INDENT_2)
        # byte-identical to its own rendering, indented (our files) or compact (our journal lines):
        # no duplicate keys were dropped and no big integer was rounded to a float
        ours = data in (rendered, rendered + b"\n") or data.rstrip(b"\n") == orjson.dumps(document)
    except orjson.JSONEncodeError:
        # orjson writes less depth than it reads (254 vs 1024 levels): the strict road says why
        return _parse_json_strict(data, path)
    if ours or _nothing_hidden(data, rendered):
        # only the depth is left to check: in the indented rendering, indentation is 2 x depth
        if _TOO_DEEP_LINE in rendered:
            raise HandoffParseError(path, too_deep())
        return document
    # a duplicated key or a long number: the slow, fully checked road says which and where
    return _parse_json_strict(data, path)


def _nothing_hidden(data: bytes, rendered: bytes) -> bool:
    """Whether orjson's tree holds all that *data* (JSON written by someone else) says.

    orjson refuses all the strict road refuses but two things, which it reads quietly: a duplicated
    key (it keeps the last) and an integer past 64 bits (it reads a float). Every key written is in
    the tree if both hold as many keys; a run of 19 digits could be such an integer. Linear, C-speed
    passes: 16 MiB of empty lists took 16 s on the strict road, which builds and walks a second tree.
    """
    written = json_skeleton(data)
    return _LONG_DIGITS.search(written) is None and written.count(b":") == json_skeleton(rendered).count(b":")


def _reject_constant(name: str) -> Any:
    msg = f"{name} is not JSON (NaN and Infinity are refused)"
    raise ValueError(msg)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            msg = f"duplicate key {key!r}"
            raise ValueError(msg)
        result[key] = value
    return result


def _parse_json_strict(data: bytes, path: str | os.PathLike[str]) -> Any:
    # the stdlib parser recurses per level up to sys.getrecursionlimit(), which a host may raise
    # past what the C stack holds (orjson stops at 1,024 levels, and falls back to here): measure
    # the depth first; a value at MAX_DEPTH sits inside MAX_DEPTH + 1 brackets if it is a container
    if json_depth(data) > MAX_DEPTH + 1:
        raise HandoffParseError(path, too_deep())
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"invalid UTF-8 at byte {exc.start}"
        raise HandoffParseError(path, msg) from exc
    try:
        document = json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        # some of the stdlib's messages end in "at" ("Unterminated string starting at"): say it once
        msg = f"invalid JSON: {exc.msg.removesuffix(' at')} at line {exc.lineno} column {exc.colno}"
        raise HandoffParseError(path, msg) from exc
    except ValueError as exc:
        msg = f"invalid JSON: {exc}"
        raise HandoffParseError(path, msg) from exc
    except RecursionError as exc:
        raise HandoffParseError(path, too_deep()) from exc
    check_tree(document, path, yaml=False, expands_to=MAX_FILE_BYTES)
    return document


def _parse_yaml(data: bytes, path: str | os.PathLike[str]) -> Any:
    # imported here: a JSON thread's restart never pays for ruamel.yaml
    from ruamel.yaml import YAML  # noqa: PLC0415
    from ruamel.yaml.error import YAMLError  # noqa: PLC0415

    check_yaml_bytes(data, path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        msg = f"invalid UTF-8 at byte {exc.start}"
        raise HandoffParseError(path, msg) from exc
    try:
        # the C parser always: its tree building recurses once per level, so the shape (depth,
        # values, anchors, aliases) is read from its event stream first, which builds nothing
        _check_yaml_shape(text, path)
        document = YAML(typ="safe", pure=False).load(text)
    except HandoffParseError:
        raise
    except YAMLError as exc:
        msg = f"invalid YAML: {_yaml_problem(exc)}"
        raise HandoffParseError(path, msg) from exc
    except Exception as exc:
        # ruamel's constructors raise bare ValueError, KeyError, AssertionError … on values such
        # as `2024-02-30` or `!!bool maybe`: whatever they raise, it is this file's parse error
        msg = f"invalid YAML value: {type(exc).__name__}: {exc}"
        raise HandoffParseError(path, msg) from exc
    return check_tree(document, path, yaml=True, expands_to=MAX_FILE_BYTES)


def _yaml_problem(exc: Exception) -> str:
    """ruamel's message on one line, where it is as "at line L, column C", without its note.

    The note is advice to ruamel's API users ("To suppress this check see: https://yaml.dev/…"), and
    a mark names the parsed text, not the file (``in "<unicode string>"``): neither helps a person.
    """
    from ruamel.yaml.error import MarkedYAMLError  # noqa: PLC0415 -- see _parse_yaml

    if not isinstance(exc, MarkedYAMLError):
        return " ".join(str(exc).split())
    context, problem = exc.context_mark, exc.problem_mark
    parts = [exc.context, _at(context) if context is not None and _place(context) != _place(problem) else None]
    said = " ".join(part for part in parts if part)
    found = " ".join(part for part in (exc.problem, _at(problem)) if part)
    return " ".join(": ".join(part for part in (said, found) if part).split())


def _place(mark: Any) -> tuple[int, int] | None:
    return None if mark is None else (mark.line, mark.column)


def _at(mark: Any) -> str | None:
    return None if mark is None else f"at line {mark.line + 1}, column {mark.column + 1}"


def _check_yaml_shape(text: str, path: str | os.PathLike[str]) -> None:
    """Read YAML's parse events, building nothing, and refuse at the first bound passed.

    libyaml's event parser keeps its state on the heap (no recursion) and is stopped within a few
    thousand events by :class:`~handoff_files.format.bounds.YamlShape`; only a file within every
    bound reaches the tree builder, whose recursion is then at most MAX_DEPTH levels deep.
    """
    from ruamel.yaml.events import (  # noqa: PLC0415 -- see _parse_yaml
        AliasEvent,
        CollectionEndEvent,
        CollectionStartEvent,
        DocumentStartEvent,
        NodeEvent,
    )

    shape = YamlShape(path)
    documents = 0
    with contextlib.closing(_yaml_events(text)) as events:
        for event in events:
            if isinstance(event, NodeEvent):
                alias = isinstance(event, AliasEvent)  # an alias's "anchor" is the name it refers to
                mark = event.start_mark
                shape.node(
                    line=mark.line, column=mark.column, anchor=not alias and event.anchor is not None, alias=alias
                )
                if isinstance(event, CollectionStartEvent):
                    shape.depth += 1
            elif isinstance(event, CollectionEndEvent):
                shape.depth -= 1
            elif isinstance(event, DocumentStartEvent):
                documents += 1
                if documents > 1:
                    return  # the load refuses a second document, having built only the first


def _yaml_events(text: str) -> Generator[Any, None, None]:
    """The parse events of *text*, from libyaml's parser alone (a YAML instance costs 10x more to set up)."""
    try:
        # the C extension's class, re-exported untyped (mypy sees no export); imported here as in _parse_yaml
        from ruamel.yaml.cyaml import CParser  # type: ignore[attr-defined]  # noqa: PLC0415
    except ImportError:  # no C extension (PyPy): the pure parser's events, no slower than its load
        from ruamel.yaml import YAML  # noqa: PLC0415 -- see _parse_yaml

        yield from YAML(typ="safe", pure=True).parse(text)
        return
    parser = CParser(text)
    try:
        while parser.check_event():
            yield parser.get_event()
    finally:
        parser.dispose()


def render(document: Mapping[str, Any], fmt: Format) -> bytes:
    """Render a JSON-mode mapping as the bytes of a handoff file.

    JSON is orjson's 2-space indentation in the mapping's own order plus a final newline (the
    loader's fast path recognises exactly this); YAML is block style with a header comment.

    :raises HandoffValidationError: YAML for content past YAML's bounds (values or bytes), which
        the loader would refuse to read back.
    :raises HandoffParseError: YAML for content it cannot hold faithfully.
    """
    if fmt == "json":
        return orjson.dumps(document, option=orjson.OPT_INDENT_2) + b"\n"
    plain = dict(document)
    # counted before rendering: ruamel's emitter costs as much per value as its parser
    if count_values(plain, MAX_YAML_NODES) > MAX_YAML_NODES:
        msg = f"content holds more than {MAX_YAML_NODES:,} values, more than a YAML file may hold; save it as JSON"
        raise HandoffValidationError(_RENDERED, msg)
    # YAML folds some characters (NEL, LS, PS, a lone CR) into line breaks when it reads them
    # back; render, re-read, and fall back to ASCII escapes when the text did not survive
    for allow_unicode in (True, False):
        data = _render_yaml(plain, allow_unicode=allow_unicode)
        if len(data) > MAX_YAML_BYTES:
            msg = f"content renders to {len(data):,} bytes of YAML, over the {MAX_YAML_BYTES:,}-byte limit for YAML"
            msg += "; save it as JSON"
            raise HandoffValidationError(_RENDERED, msg)
        if _parse_yaml(data, _RENDERED) == plain:
            return data
    msg = "content cannot be represented faithfully in YAML; save it as JSON"
    raise HandoffParseError(_RENDERED, msg)


@functools.cache
def _representer() -> type[Any]:
    """ruamel's safe representer, but text of several lines (a story, an armored signature) is a
    literal block, as a person writes it. The emitter still quotes any text a block cannot hold, and
    render() re-reads what it wrote. A subclass: ruamel's own class, shared with the caller's code,
    is left as it is."""
    from ruamel.yaml.representer import SafeRepresenter  # noqa: PLC0415 -- see _parse_yaml

    def text(representer: SafeRepresenter, value: str) -> Any:
        style = "|" if "\n" in value.rstrip("\n") else None
        return representer.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    class BlockText(SafeRepresenter):
        pass

    BlockText.add_representer(str, text)
    return BlockText


def _render_yaml(document: dict[str, Any], *, allow_unicode: bool) -> bytes:
    from ruamel.yaml import YAML  # noqa: PLC0415 -- see _parse_yaml

    yaml = YAML(typ="safe", pure=False)
    yaml.default_flow_style = False
    # keep the writer's key order (envelope first): ruamel sorts by default; the attribute is untyped
    setattr(yaml, "sort_base_mapping_type_on_output", False)  # noqa: B010
    yaml.allow_unicode = allow_unicode
    yaml.width = 100
    yaml.Representer = _representer()
    buffer = io.StringIO()
    buffer.write(YAML_HEADER)
    yaml.dump(document, buffer)
    return buffer.getvalue().encode("utf-8")

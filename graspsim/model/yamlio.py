"""Reading model YAML safely, keeping line numbers, so every model error can name its file and line.

Model files may come from anywhere, so reading them is bounded:

* only regular files are read (not FIFOs, devices such as ``/dev/zero``, directories), at most
  :data:`MAX_MODEL_BYTES`; the file must be UTF-8 text;
* nesting is limited to :data:`MAX_DEPTH` levels and the document, with every alias expanded, to
  :data:`MAX_NODES` nodes ("billion laughs"); an alias inside the node it names is refused;
* plain scalars are read by the YAML 1.2 core schema, not PyYAML's YAML 1.1: ``yes``/``no``/``on``/
  ``off`` and ``1:30`` (base 60) stay strings, ``1e-3`` is a number; hexadecimal, octal and
  zero-padded integers (``0x10``, ``0o17``, ``010``) stay strings, so a number field refuses them
  with a hint instead of reading a value the author did not mean; ``<<`` merge keys and tags other
  than YAML's standard ones are refused.

No error message quotes the file's content (beyond a key or a character that is named), so pointing
a model at a file that is not a model (``/etc/passwd``) does not print it.
"""
from __future__ import annotations

import math
import os
import re
import stat
from pathlib import Path

import yaml

from ..errors import ModelError

#: largest model file read (bytes); shipped robots, objects and worlds are under 10 kB
MAX_MODEL_BYTES = 1 << 20
#: deepest nesting of mappings and lists (the deepest model field is 7 levels down)
MAX_DEPTH = 32
#: most nodes in a document, counting each alias as the nodes it stands for
MAX_NODES = 200_000

_Parser = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader   # libyaml: ~20x faster

CORE = "tag:yaml.org,2002:"
_NULL = re.compile(r"^(?:~|null|Null|NULL|)$")
_BOOL = {"true": True, "True": True, "TRUE": True, "false": False, "False": False, "FALSE": False}
_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$")
_FLOAT = re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$")
_INF = re.compile(r"^[-+]?\.(?:inf|Inf|INF)$")
_NAN = re.compile(r"^\.(?:nan|NaN|NAN)$")


class YMap(dict):
    """A YAML mapping (dict) that remembers its own line and the line of each key (1-based)."""

    line: int = 0
    key_lines: dict

    def line_of(self, key) -> int:
        return self.key_lines.get(key, self.line)


class YList(list):
    """A YAML sequence (list) that remembers its own line and each item's line (1-based)."""

    line: int = 0
    item_lines: list

    def line_of(self, i: int) -> int:
        return self.item_lines[i] if 0 <= i < len(self.item_lines) else self.line


def read_regular_file(path: str | Path, limit: int, what: str = "file") -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes.

    Raises :class:`ModelError` (naming the file, never its content) for a missing file, a name the
    system refuses (too long, NUL), a FIFO, device or directory, or a file above the limit.  A FIFO
    is never opened (opening one blocks until a writer comes), a device never read.
    """
    p = str(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise ModelError(f"{what} not found", file=p) from None
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot read {what}: {_os_reason(e)}", file=p) from None
    _check_regular(st, p, limit, what)
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except (OSError, ValueError) as e:
        raise ModelError(f"cannot read {what}: {_os_reason(e)}", file=p) from None
    try:
        _check_regular(os.fstat(fd), p, limit, what)      # the file opened is the file checked
        chunks, n = [], 0
        while n <= limit:
            b = os.read(fd, min(1 << 20, limit + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
    except OSError as e:
        raise ModelError(f"cannot read {what}: {_os_reason(e)}", file=p) from None
    finally:
        os.close(fd)
    if n > limit:
        raise ModelError(f"{what} is larger than the {_size(limit)} limit", file=p)
    return b"".join(chunks)


def _check_regular(st: os.stat_result, p: str, limit: int, what: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise ModelError(f"expected a {what}, found a directory", file=p)
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode)
                or stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "not a regular file")
        raise ModelError(f"expected a {what}, found {kind}; only regular files are read", file=p)
    if st.st_size > limit:
        raise ModelError(f"{what} is larger than the {_size(limit)} limit ({_size(st.st_size)})", file=p)


def _os_reason(e: Exception) -> str:
    if isinstance(e, ValueError):        # e.g. "embedded null byte"
        return "the file name contains a NUL character"
    return (e.strerror or type(e).__name__).lower() if isinstance(e, OSError) else type(e).__name__


def _size(n: int) -> str:
    return f"{n / (1 << 20):.3g} MiB" if n >= 1 << 20 else f"{n / 1024:.3g} KiB" if n >= 1024 else f"{n} bytes"


def load_yaml(path: str | Path):
    """Read a model YAML file into :class:`YMap` / :class:`YList` / scalars (see the module docstring).

    Raises :class:`ModelError` naming the file and line for an unreadable, oversized, malformed or
    hostile file.
    """
    path = str(Path(path))
    raw = read_regular_file(path, MAX_MODEL_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise ModelError(f"not UTF-8 text (byte {e.start}); a model file is UTF-8 YAML", file=path,
                         line=line) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return parse_yaml(text, path)


def parse_yaml(text: str, file: str):
    """Compose the single YAML document of ``text`` (``file`` names it in errors)."""
    try:
        return _Composer(file).run(yaml.parse(text, Loader=_Parser))
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark is not None else None
        msg = " ".join(str(x) for x in (e.context, e.problem) if x)
        raise ModelError(f"malformed YAML: {msg}", file=file, line=line) from None
    except yaml.YAMLError as e:      # a reader error: a character YAML does not allow
        line = None
        pos = getattr(e, "position", None)
        if isinstance(pos, int):
            line = text.count("\n", 0, pos) + 1
        ch = getattr(e, "character", None)
        code = ord(ch) if isinstance(ch, str) and len(ch) == 1 else ch if isinstance(ch, int) else None
        what = f" U+{code:04X}" if code is not None else ""
        raise ModelError(f"malformed YAML: the character{what} is not allowed in YAML", file=file,
                         line=line) from None


class _Composer:
    """Builds YMap/YList/scalars from PyYAML's event stream, without recursion and with the limits
    of the module docstring (PyYAML's own composer recurses and expands aliases without bound)."""

    def __init__(self, file: str):
        self.file = file
        self.anchors: dict = {}        # name -> (value, expanded node count)
        self.open: set = set()         # anchors of collections not finished yet
        self.nodes = 0

    def error(self, problem: str, event) -> ModelError:
        return ModelError(problem, file=self.file, line=event.start_mark.line + 1)

    def run(self, events):
        stack: list = []      # [container, pending key, key line, anchor, node count]
        docs = 0
        root = None
        for ev in events:
            if isinstance(ev, yaml.DocumentStartEvent):
                docs += 1
                if docs > 1:
                    raise self.error("a model file holds one YAML document; found a second '---'", ev)
                continue
            if isinstance(ev, (yaml.StreamStartEvent, yaml.StreamEndEvent, yaml.DocumentEndEvent)):
                continue
            if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
                if len(stack) >= MAX_DEPTH:
                    raise self.error(f"nested more than {MAX_DEPTH} levels deep", ev)
                self._check_tag(ev, "map" if isinstance(ev, yaml.MappingStartEvent) else "seq")
                c = YMap() if isinstance(ev, yaml.MappingStartEvent) else YList()
                c.line = ev.start_mark.line + 1
                if isinstance(c, YMap):
                    c.key_lines = {}
                else:
                    c.item_lines = []
                if ev.anchor is not None:
                    self.open.add(ev.anchor)
                stack.append([c, _NO_KEY, 0, ev.anchor, 1])
                self._count(1, ev)
                continue
            if isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                c, _, _, anchor, count = stack.pop()
                if anchor is not None:
                    self.open.discard(anchor)
                    self.anchors[anchor] = (c, count)
                value, count = c, count
            elif isinstance(ev, yaml.AliasEvent):
                if ev.anchor in self.open:
                    raise self.error(f"the alias '*{_short(ev.anchor)}' is inside the node it names "
                                     "(a recursive structure)", ev)
                if ev.anchor not in self.anchors:
                    raise self.error(f"the alias '*{_short(ev.anchor)}' names no anchor before it", ev)
                value, count = self.anchors[ev.anchor]
                self._count(count, ev)     # an alias stands for every node it names
            elif isinstance(ev, yaml.ScalarEvent):
                value = self._scalar(ev)
                count = 1
                self._count(1, ev)
                if ev.anchor is not None:
                    self.anchors[ev.anchor] = (value, 1)
            else:  # pragma: no cover - PyYAML has no other events
                raise self.error(f"unexpected YAML event {type(ev).__name__}", ev)
            if not stack:
                root = value
                continue
            top = stack[-1]
            top[4] += count
            c = top[0]
            if isinstance(c, YList):
                c.append(value)
                c.item_lines.append(ev.start_mark.line + 1)
            elif top[1] is _NO_KEY:
                if not isinstance(value, str):
                    raise self.error("mapping keys must be names (text), got "
                                     + ("a mapping or list" if isinstance(value, (dict, list)) else _kind(value)), ev)
                if value == "<<":
                    raise self.error("'<<' merge keys (YAML 1.1) are not supported in model files", ev)
                if value in c:
                    raise self.error(f"duplicate key '{_short(value)}'", ev)
                top[1], top[2] = value, ev.start_mark.line + 1
            else:
                c[top[1]] = value
                c.key_lines[top[1]] = top[2]
                top[1] = _NO_KEY
        if docs == 0 or root is None:
            raise ModelError("the file is empty", file=self.file, line=1)
        return root

    def _count(self, n: int, ev) -> None:
        self.nodes += n
        if self.nodes > MAX_NODES:
            raise self.error(f"the document has more than {MAX_NODES} nodes (counting each alias as "
                             "the nodes it stands for: an alias bomb?)", ev)

    def _check_tag(self, ev, kind: str) -> None:
        tag = ev.tag
        if tag is None or tag == "!" or tag == CORE + kind:
            return
        raise self.error(f"the tag '{_short(tag)}' is not allowed in model files", ev)

    def _scalar(self, ev):
        tag, v = ev.tag, ev.value
        plain = ev.implicit[0] and ev.style in (None, "")
        if tag in ("!", CORE + "str") or (tag is None and not plain):
            return v
        if tag is None:
            return resolve_plain(v)
        if tag in (CORE + "int", CORE + "float", CORE + "bool", CORE + "null"):
            x = resolve_plain(v)
            want = {"int": int, "float": float, "bool": bool, "null": type(None)}[tag[len(CORE):]]
            if want is float and isinstance(x, int) and not isinstance(x, bool):
                x = float(x)
            if type(x) is not want:
                raise self.error(f"the value does not match its tag '!!{tag[len(CORE):]}'", ev)
            return x
        raise self.error(f"the tag '{_short(tag)}' is not allowed in model files", ev)


_NO_KEY = object()


class Overflow(float):
    """A decimal literal beyond the float range (read as +-inf); number fields name it as such."""


def resolve_plain(v: str):
    """A plain scalar by the YAML 1.2 core schema, except that only decimal numbers are numbers."""
    if _NULL.match(v):
        return None
    if v in _BOOL:
        return _BOOL[v]
    if len(v) <= 18 and _INT.match(v):
        return int(v)
    if _FLOAT.match(v):
        if _INT.match(v.lstrip("+-")) is None and v.lstrip("+-")[:1] == "0" and "." not in v \
                and "e" not in v.lower():
            return v                                     # zero-padded integer: left to the field
        x = float(v)                                     # never raises on digits (no 4300-digit limit)
        return Overflow(x) if math.isinf(x) else x
    if _INF.match(v):
        return -math.inf if v.startswith("-") else math.inf
    if _NAN.match(v):
        return math.nan
    return v


def _short(s: str, n: int = 40) -> str:
    s = str(s)
    return s if len(s) <= n else s[:n] + "..."


def _kind(v) -> str:
    if v is None:
        return "nothing"
    if isinstance(v, bool):
        return "a boolean"
    return "a number"

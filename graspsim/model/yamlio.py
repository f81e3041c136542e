"""YAML loading that keeps line numbers, so every model error can name its file and line."""
from __future__ import annotations

from pathlib import Path

import yaml

from ..errors import ModelError


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


def _convert(node, scalar_loader, file):
    if isinstance(node, yaml.MappingNode):
        out = YMap()
        out.line = node.start_mark.line + 1
        out.key_lines = {}
        for knode, vnode in node.value:
            key = _convert(knode, scalar_loader, file)
            if not isinstance(key, (str, int, float, bool)):
                raise ModelError("mapping keys must be plain scalars", file=file, line=knode.start_mark.line + 1)
            if key in out:
                raise ModelError(f"duplicate key '{key}'", file=file, line=knode.start_mark.line + 1)
            out[key] = _convert(vnode, scalar_loader, file)
            out.key_lines[key] = knode.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        out = YList()
        out.line = node.start_mark.line + 1
        out.item_lines = [n.start_mark.line + 1 for n in node.value]
        out.extend(_convert(n, scalar_loader, file) for n in node.value)
        return out
    return scalar_loader.construct_object(node, deep=True)


def load_yaml(path: str | Path):
    """Read a YAML file into :class:`YMap` / :class:`YList` / scalars.

    Raises :class:`ModelError` naming the file and line for unreadable or malformed YAML.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ModelError("file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ModelError(f"cannot read file: {e}", file=str(path)) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as e:
        line = e.problem_mark.line + 1 if e.problem_mark is not None else None
        msg = " ".join(str(x) for x in (e.context, e.problem) if x)
        raise ModelError(f"malformed YAML: {msg}", file=str(path), line=line) from None
    except yaml.YAMLError as e:
        raise ModelError(f"malformed YAML: {e}", file=str(path)) from None
    if node is None:
        raise ModelError("the file is empty", file=str(path), line=1)
    scalar_loader = yaml.SafeLoader("")
    try:
        return _convert(node, scalar_loader, str(path))
    except yaml.constructor.ConstructorError as e:
        line = e.problem_mark.line + 1 if e.problem_mark is not None else None
        raise ModelError(f"malformed YAML: {e.problem}", file=str(path), line=line) from None

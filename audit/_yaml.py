"""YAML loading that remembers the line of every key, for error messages."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from .errors import AuditError


class Located:
    """A loaded YAML document plus the line of each key path.

    ``where(path)`` gives ``file:line key.path`` for messages.
    """

    def __init__(self, file: Path, data: Any, lines: dict[tuple, int]):
        self.file, self.data, self.lines = file, data, lines

    def where(self, *path: Any) -> str:
        key = tuple(path)
        while key and key not in self.lines:
            key = key[:-1]
        line = self.lines.get(key, 1)
        dotted = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path).lstrip(".")
        return f"{self.file}:{line}" + (f" {dotted}" if dotted else "")

    def error(self, message: str, *path: Any, fix: str | None = None) -> AuditError:
        return AuditError(message, self.where(*path), fix)


def load_yaml(path: str | Path) -> Located:
    """Read a YAML file, raising an AuditError naming the file and line on a syntax error."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise AuditError("file not found", str(path), "check the path") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read as UTF-8 text ({exc.__class__.__name__})", str(path)) from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise AuditError(f"malformed YAML: {problem}", f"{path}{line}", "fix the YAML syntax at that line") from None
    lines: dict[tuple, int] = {}
    data = _convert(node, (), lines, path) if node is not None else None
    return Located(path, data, lines)


def _convert(node: yaml.Node, path: tuple, lines: dict[tuple, int], file: Path) -> Any:
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            key = _scalar(key_node)
            if key in out:
                raise AuditError(f"duplicate key '{key}'", f"{file}:{key_node.start_mark.line + 1}",
                                 "remove or rename one of them")
            out[key] = _convert(value_node, path + (key,), lines, file)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_convert(v, path + (i,), lines, file) for i, v in enumerate(node.value)]
    return _scalar(node)


def _scalar(node: yaml.Node) -> Any:
    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()

"""YAML loading that remembers the line of every key, for error messages.

It also remembers every unquoted scalar that YAML 1.1 read as something other than its text
(``NO`` -> false, ``01`` -> 1, ``~`` -> null), so that where a code is due the message can say
"quote it", and it refuses documents whose aliases would expand past :data:`MAX_ALIAS_NODES`
("billion laughs") before building anything.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import AuditError
from ..paths import read_text

MAX_ALIAS_NODES = 100_000  # nodes that aliases may add to a document when expanded
MAX_DEPTH = 100            # nesting of mappings and lists
_STR = "tag:yaml.org,2002:str"
_KINDS = {bool: "the boolean", int: "the number", float: "the number", type(None): "null"}
FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser, same resolver and nodes


class Located:
    """A loaded YAML document plus the line of each key path.

    ``where(path)`` gives ``file:line key.path`` for messages.
    """

    def __init__(self, file: Path, data: Any, lines: dict[tuple, int],
                 retyped: dict[tuple, str] | None = None, retyped_keys: dict[tuple, str] | None = None):
        self.file, self.data, self.lines = file, data, lines
        # path -> original text of an unquoted scalar that YAML read as another type (values, mapping keys)
        self.retyped, self.retyped_keys = retyped or {}, retyped_keys or {}

    def where(self, *path: Any, last: str | None = None) -> str:
        """``file:line dotted.path``; ``last`` shows the final key as written (e.g. ``NO``, not ``False``)."""
        key = tuple(path)
        while key and key not in self.lines:
            key = key[:-1]
        line = self.lines.get(key, 1)
        shown = list(path) if last is None else [*path[:-1], last]
        dotted = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in shown).lstrip(".")
        return f"{self.file}:{line}" + (f" {dotted}" if dotted else "")

    def error(self, message: str, *path: Any, fix: str | None = None) -> AuditError:
        return AuditError(message, self.where(*path), fix)

    def code(self, value: Any, *path: Any, key: bool = False) -> str:
        """``value`` (at ``path``; ``key``: the mapping key ending ``path``) as a code string.

        Refuses an unquoted scalar that YAML read as another type, e.g. ``NO`` (Norway) read as false.
        """
        text = (self.retyped_keys if key else self.retyped).get(tuple(path))
        if text is not None:
            raise AuditError(f"{text} is read by YAML as {_KINDS.get(type(value), 'a')} {_shown(value)}, "
                             f"not as the code '{text}'", self.where(*path, last=text if key else None),
                             f"quote it: '{text}'")
        if isinstance(value, (dict, list)):
            raise self.error(f"expected a code, not a {'mapping' if isinstance(value, dict) else 'list'}", *path,
                             fix="write a single code (a name or number)")
        return str(value)

    def codes(self, spec: Any, *path: Any) -> Any:
        """:meth:`code` for a scalar or each item of a list; a mapping (a range) is returned as is."""
        if isinstance(spec, list):
            return [self.code(v, *path, i) for i, v in enumerate(spec)]
        return spec if isinstance(spec, dict) else self.code(spec, *path)

    def labels(self, spec: Any, *path: Any) -> dict[str, str]:
        """``spec`` (the ``labels:`` at ``path``, None when absent) as code -> label; anything but a mapping
        of codes to text is an error."""
        if spec is None:
            return {}
        if not isinstance(spec, dict):
            raise self.error(f"must map each code to its label, not be a {_kind(spec)}", *path,
                             fix="write labels: {CODE: LABEL, ...}, e.g. labels: {n1: North, n2: South}")
        out = {}
        for code, label in spec.items():
            if isinstance(label, (dict, list)):
                raise self.error(f"the label of '{code}' must be text, not a {_kind(label)}", *path, code,
                                 fix=f"e.g. {code}: North")
            out[self.code(code, *path, code, key=True)] = str(label)
        return out

    def boolean(self, spec: dict, name: str, default: bool, *path: Any) -> bool:
        """``spec[name]`` as true or false; anything else (``"yes"``, ``1``, ``maybe``) is an error."""
        value = spec.get(name, default)
        if not isinstance(value, bool):
            raise self.error(f"{name} must be true or false, not {value!r}", *path, name,
                             fix=f"write {name}: true or {name}: false")
        return value


def _kind(value: Any) -> str:
    return "mapping" if isinstance(value, dict) else "list" if isinstance(value, list) else f"single value ({value!r})"


def _shown(value: Any) -> str:
    return "false" if value is False else "true" if value is True else "null" if value is None else repr(value)


def load_yaml(path: str | Path) -> Located:
    """Read a YAML file, raising an AuditError naming the file and line on a syntax error."""
    text = read_text(path, "YAML file")
    try:
        node = _compose(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise AuditError(f"malformed YAML: {problem}", f"{path}{line}", "fix the YAML syntax at that line") from None
    except RecursionError:
        raise AuditError(f"nested more than {MAX_DEPTH} levels deep", str(path), "flatten the document") from None
    if node is None:
        return Located(path, None, {})
    merged = _check_size(node, path)
    reader = _Reader(path, merged)
    data = reader.convert(node, ())
    return Located(path, data, reader.lines, reader.retyped, reader.retyped_keys)


def _compose(text: str) -> yaml.Node | None:
    """The document's node graph, composed by libyaml where PyYAML was built with it (a tenth of the time);
    a document libyaml refuses is composed again in Python, whose error (message, line) is the one reported."""
    if FAST_LOADER is not yaml.SafeLoader:
        try:
            return yaml.compose(text, Loader=FAST_LOADER)
        except yaml.YAMLError:
            pass
    return yaml.compose(text, Loader=yaml.SafeLoader)


def _check_size(root: yaml.Node, file: Path) -> set[tuple[int, int]]:
    """Refuse, in time linear in the document, one whose aliases expand past the limits or into a cycle.

    Expands merge keys on the way; returns (mapping id, key node id) of the keys that merges brought in.
    """
    sizes: dict[int, int] = {}
    merged: set[tuple[int, int]] = set()
    open_: set[int] = set()
    loader = yaml.SafeLoader("")

    def size(node: yaml.Node, depth: int) -> int:
        key = id(node)
        if key in sizes:
            return sizes[key]
        if key in open_:
            raise AuditError("an alias refers to a node that contains it (a cycle)",
                             f"{file}:{node.start_mark.line + 1}", "remove the alias, or copy what it stands for")
        if depth > MAX_DEPTH:
            raise AuditError(f"nested more than {MAX_DEPTH} levels deep", f"{file}:{node.start_mark.line + 1}",
                             "flatten the document")
        open_.add(key)
        total = 1
        if isinstance(node, yaml.MappingNode):
            _flatten(loader, node, file, merged)
            total += sum(size(k, depth + 1) + size(v, depth + 1) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            total += sum(size(v, depth + 1) for v in node.value)
        open_.discard(key)
        sizes[key] = total
        return total

    expanded = size(root, 0)
    if expanded - len(sizes) > MAX_ALIAS_NODES:
        raise AuditError(f"its aliases (*name) expand to {expanded:,} nodes, more than {MAX_ALIAS_NODES:,} beyond "
                         "the document itself", str(file), "write the values out instead of nesting aliases")
    loader.dispose()
    return merged


def _flatten(loader: yaml.SafeLoader, node: yaml.MappingNode, file: Path, merged: set) -> None:
    """Expand merge keys (``<<: *base``) in place, as PyYAML's own constructor does."""
    own = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
    try:
        loader.flatten_mapping(node)
        merged.update((id(node), id(k)) for k, _ in node.value if id(k) not in own)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or node.start_mark
        raise AuditError(f"bad merge key: {getattr(exc, 'problem', exc)}", f"{file}:{mark.line + 1}",
                         "merge (<<) only mappings") from None
    except RecursionError:
        raise AuditError("a merge key (<<) refers to a mapping that contains it", f"{file}:{node.start_mark.line + 1}",
                         "remove the merge") from None


class _Reader:
    """Converts a composed (and size-checked) node graph to Python values, recording lines and retyped scalars."""

    def __init__(self, file: Path, merged: set[tuple[int, int]]):
        self.file, self.merged = file, merged
        self.lines: dict[tuple, int] = {}
        self.retyped: dict[tuple, str] = {}
        self.retyped_keys: dict[tuple, str] = {}
        self._loader = yaml.SafeLoader("")

    def convert(self, node: yaml.Node, path: tuple) -> Any:
        self.lines[path] = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            inherited: set = set()  # keys a merge (<<) brought in: the mapping's own keys override them
            for key_node, value_node in node.value:
                key = self.scalar(key_node)
                own = (id(node), id(key_node)) not in self.merged
                if own and key in out and key not in inherited:
                    raise AuditError(f"duplicate key '{key_node.value}'", self._at(key_node),
                                     "remove or rename one of them")
                (inherited.discard if own else inherited.add)(key)
                if self._retyped(key_node, key):
                    self.retyped_keys[path + (key,)] = key_node.value
                out[key] = self.convert(value_node, path + (key,))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self.convert(v, path + (i,)) for i, v in enumerate(node.value)]
        value = self.scalar(node)
        if self._retyped(node, value):
            self.retyped[path] = node.value
        return value

    def scalar(self, node: yaml.Node) -> Any:
        if not isinstance(node, yaml.ScalarNode):
            raise AuditError("a key must be a plain value, not a list or mapping", self._at(node),
                             "use a name or code as the key")
        try:
            return self._loader.construct_object(node, deep=True)
        except yaml.YAMLError as exc:
            raise AuditError(f"cannot read the value: {getattr(exc, 'problem', None) or exc}", self._at(node),
                             "remove the tag (!...) or quote the value") from None

    @staticmethod
    def _retyped(node: yaml.ScalarNode, value: Any) -> bool:
        # a plain scalar's style: None from PyYAML's composer, '' from libyaml's
        return not node.style and node.tag != _STR and str(value) != node.value

    def _at(self, node: yaml.Node) -> str:
        return f"{self.file}:{node.start_mark.line + 1}"

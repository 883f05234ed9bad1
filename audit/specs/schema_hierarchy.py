"""Hierarchies of a schema: a column's codes grouped into nested totals, given in the YAML or as a
tau-Argus ``.hrc`` file; each becomes a recode."""
from __future__ import annotations

import codecs
from pathlib import Path
from typing import Any, Mapping

from ._yaml import Located
from ..errors import AuditError
from ..paths import input_file
from .schema_types import Recode, Schema, _show_domain

MAX_LEVELS = 100  # levels a hierarchy may have (its top nodes are level 1): each adds cells and lines to every table over it


def _load_hierarchy(doc: Located, schema: Schema, name: str, spec: Any, key: Any) -> Recode:
    """A hierarchical code list over a categorical column (sdcTable's hierarchies, tau-Argus's .hrc files):
    ``children: {node: [codes]}`` or ``hrc: FILE``. Its codes are the column's codes (the leaves) and the
    nodes (subtotals), each standing for the leaves under it; the top nodes sit under the table total."""
    here = ("hierarchies", key)
    if not isinstance(spec, Mapping) or "from" not in spec or ("children" in spec) == ("hrc" in spec) \
            or set(spec) - {"from", "children", "hrc", "encoding", "labels"} or ("encoding" in spec and "hrc" not in spec):
        raise doc.error("a hierarchy needs 'from: COLUMN' and either 'children: {node: [codes]}' or 'hrc: FILE' "
                        "(with 'encoding: NAME' when the file is not UTF-8)",
                        *here, fix="e.g. area: {from: region, children: {north: [n1, n2], n1: [a, b], n2: [c]}}")
    source = doc.code(spec["from"], *here, "from")
    if source not in schema.names or schema.column(source).kind != "categorical":
        raise doc.error(f"'{source}' is not a categorical column of the schema", *here, "from",
                        fix=f"use one of {[c.name for c in schema.columns if c.kind == 'categorical']}")
    col = schema.column(source)
    if "hrc" in spec:
        path = Path(str(doc.file)).parent / doc.code(spec["hrc"], *here, "hrc")
        encoding = doc.code(spec.get("encoding", "utf-8"), *here, "encoding")
        try:
            codecs.lookup(encoding)
        except LookupError:
            raise doc.error(f"unknown encoding '{encoding}'", *here, "encoding",
                            fix="name the .hrc file's encoding as Python does, e.g. encoding: latin-1 (or cp1252, utf-8)") from None
        children, where = read_hrc(path, encoding, name)
    else:
        if not isinstance(spec["children"], Mapping) or not spec["children"]:
            raise doc.error("children must map each node to the list of its codes", *here, "children",
                            fix="e.g. children: {north: [n1, n2], n1: [a, b]}")
        children, where = {}, {}
        for node, kids in spec["children"].items():
            code = doc.code(node, *here, "children", node, key=True)
            if not isinstance(kids, list) or not kids:
                raise doc.error(f"node '{code}' needs a non-empty list of codes", *here, "children", node,
                                fix=f"e.g. {code}: [a, b]")
            children[code] = [doc.code(k, *here, "children", node, j) for j, k in enumerate(kids)]
            where[code] = doc.where(*here, "children", node)
    parent: dict[str, str] = {}
    for node, kids in children.items():
        if node in col.codes:
            raise AuditError(f"node '{node}' is also a code of '{source}'", where[node],
                             "give subtotals their own codes; the column's codes are the leaves")
        for kid in kids:
            if kid in parent:
                raise AuditError(f"'{kid}' is under both '{parent[kid]}' and '{node}'", where[node],
                                 "put each code under one parent")
            parent[kid] = node
            if kid not in children and kid not in col.codes:
                raise AuditError(f"'{kid}' is not a code of '{source}' nor a node of the hierarchy", where[node],
                                 f"use the codes of '{source}' ({_show_domain(col)}) or add '{kid}' as a node")
    for code in where:  # an .hrc file may list a code at the top, under the total alone (tau-Argus's dim_age.hrc)
        if code not in parent and code not in children and code not in col.codes:
            raise AuditError(f"'{code}' is not a code of '{source}' nor a node of the hierarchy", where[code],
                             f"use the codes of '{source}' ({_show_domain(col)}) or give '{code}' codes under it")
    groups = _groups(children, parent, where)
    missing = [c for c in col.codes if c not in groups]
    if missing:
        raise AuditError(f"code '{missing[0]}' of '{source}' is in no node of hierarchy '{name}'"
                         + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""), doc.where(*here),
                         "put every code of the column under a node (the table total is the margin '*')")
    whole = [n for n in children if groups[n] == frozenset(col.codes)]
    if whole:
        raise AuditError(f"node '{whole[0]}' covers every code of '{source}': it is the table total",
                         where[whole[0]], "leave the total out and list its children as the top nodes; "
                                          "tables publish the total as the margin '*'")
    labels = {c: col.label(c) for c in col.codes}
    labels.update(doc.labels(spec.get("labels"), *here, "labels"))
    return Recode(name, source, groups, labels, nested=True)


def _groups(children: dict[str, list[str]], parent: dict[str, str], where: dict[str, str]) -> dict[str, frozenset]:
    """Each node and code -> the codes (leaves) under it, depth first, a node before its codes (the order
    tau-Argus lists). Without recursion: a hierarchy may be thousands of levels deep."""
    walked: dict[str, str] = {}
    for node in children:  # each code has one parent, so a cycle is a loop of parents with no top node
        at, path = node, []
        while at is not None and at not in walked:
            walked[at] = node
            path.append(at)
            at = parent.get(at)
        if at is not None and walked[at] == node:
            loop = path[path.index(at):]  # at, its parent, its parent's parent ... back to at
            raise AuditError(f"the hierarchy has a cycle: {' -> '.join([at, *reversed(loop[1:]), at])}",
                             where[node], "a node cannot be under itself")
    order: list[str] = []
    stack = [(n, 1) for n in reversed(where) if n not in parent]  # the top codes, nodes or not, in file order
    while stack:
        code, depth = stack.pop()
        if depth > MAX_LEVELS:
            raise AuditError(f"'{code}' is {depth} levels down; a hierarchy may have at most {MAX_LEVELS} levels",
                             where.get(code) or where[parent[code]], "flatten the hierarchy: group fewer levels")
        order.append(code)
        stack.extend((kid, depth + 1) for kid in reversed(children.get(code, ())))
    leaves: dict[str, frozenset] = {}
    for code in reversed(order):  # every code after the codes under it
        kids = children.get(code)
        leaves[code] = frozenset().union(*(leaves[k] for k in kids)) if kids else frozenset([code])
    return {code: leaves[code] for code in order}


def read_hrc(path: Path, encoding: str = "utf-8", name: str = "HIERARCHY") -> tuple[dict[str, list[str]], dict[str, str]]:
    """A tau-Argus hierarchy file (text in ``encoding``): one code a line, preceded by one '@' per level
    below the top. Returns node -> its codes, and node -> "file:line" for messages (``name``: the hierarchy's)."""
    if not input_file(path, ".hrc file").is_file():
        raise AuditError("file not found" if not path.exists() else "is a folder, not an .hrc file", str(path),
                         "give the .hrc file's path relative to the schema")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8-sig" if codecs.lookup(encoding).name == "utf-8" else encoding)
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise AuditError(f"not {encoding} text (byte {raw[exc.start]:#04x})", f"{path}:{line}",
                         f"save it as UTF-8, or name its encoding in the schema: {name}: {{from: COLUMN, "
                         f"hrc: {path.name}, encoding: latin-1}}") from None
    children: dict[str, list[str]] = {}
    where: dict[str, str] = {}
    stack: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        code = line.lstrip("@").strip()
        depth = len(line) - len(line.lstrip("@"))
        if depth > len(stack) or not code:
            raise AuditError(f"'{line.strip()}' is {depth} levels down, under no code one level up"
                             if code else "a line of '@' with no code", f"{path}:{number}",
                             "each line has one '@' more than its parent's at most")
        del stack[depth:]
        if stack:
            children.setdefault(stack[-1], []).append(code)
        where.setdefault(code, f"{path}:{number}")
        stack.append(code)
    return children, where

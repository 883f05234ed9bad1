"""What an import makes (a schema, a table schedule, a policy and the microdata as CSV), written as files a
user keeps, each checked by reading it back with the loaders ``audit run`` uses."""
from __future__ import annotations

import importlib.resources
import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import AuditError
from ..paths import output_folder
from ..data.microdata import read_table
from ..policy.rules import load_rules
from ..release.published_file import releases_from_frame
from ..specs.schedule import load_schedule
from ..specs.schema import load_schema
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

GEOGRAPHY = "release"  # the one geography level of an import: peers' tables have none
UNIT = "all"           # its one unit


@dataclass
class Imported:
    """An import's documents (plain YAML data), its microdata and its notes (what could not be mapped)."""

    schema: dict
    tables: dict
    rules: dict | None = None
    data: pd.DataFrame | None = None
    release: pd.DataFrame | None = None  # a published release (a peer's pre-tabulated table), for --published
    notes: list[str] = field(default_factory=list)  # lines "not mapped: ..." and "note: ..."
    sources: tuple[Path, ...] = ()

    def note(self, text: str, mapped: bool = False) -> None:
        """Record what could not be mapped (``mapped``: a remark on what was)."""
        line = ("note: " if mapped else "not mapped: ") + text
        if line not in self.notes:
            self.notes.append(line)


class _Plain(yaml.SafeDumper):
    """YAML without anchors and aliases: a list two tables share is written out twice."""

    def ignore_aliases(self, data):
        return True


def default_rules() -> dict:
    """The built-in default policy as data, to change the rules a peer's specification sets."""
    with importlib.resources.as_file(importlib.resources.files("audit") / "_rules" / "default.yaml") as real:
        return yaml.safe_load(real.read_text())


def hierarchy(children: dict[str, list[str]], codes: list[str]) -> dict[str, list[str]]:
    """``children`` (node -> its codes) with any node that covers every one of ``codes`` left out (tables
    publish the total as the margin): its children become top nodes."""
    every = set(codes)

    def leaves(node: str) -> set:
        kids = children.get(node)
        return {node} if kids is None else set().union(*(leaves(k) for k in kids))

    whole = {n for n in children if leaves(n) >= every}
    return {n: kids for n, kids in children.items() if n not in whole}


def write(imported: Imported, out: Path, force: bool = False) -> list[Path]:
    """Write ``schema.yaml``, ``tables.yaml``, ``rules.yaml``, ``data.csv`` and ``release.csv`` (when set) into
    ``out``; refuse to write over an input, or over an existing file without ``force``; then load each back
    as ``audit run`` will, so a mistake shows now, naming the written file."""
    names = {"schema.yaml": imported.schema, "tables.yaml": imported.tables}
    if imported.rules is not None:
        names["rules.yaml"] = imported.rules
    files = [out / n for n in names] + [out / f for f, d in (("data.csv", imported.data),
                                                              ("release.csv", imported.release)) if d is not None]
    output_folder(out, "--out", inputs={str(p): p for p in imported.sources}, writes=[p.name for p in files])
    sources = {p.resolve() for p in imported.sources}
    for path in files:
        if path.resolve() in sources:
            raise AuditError(f"{path} is an input of this import", "--out", "write to another folder")
        if path.exists() and not force:
            raise AuditError(f"{path} exists", "--out", "choose another folder, or pass --force to replace it")
    out.mkdir(parents=True, exist_ok=True)
    for spec in imported.schema.get("hierarchies", {}).values():  # .hrc files stay where they are
        if "hrc" in spec:
            spec["hrc"] = os.path.relpath(Path(spec["hrc"]).resolve(), out.resolve())
    for name, doc in names.items():
        (out / name).write_text(yaml.dump(doc, Dumper=_Plain, sort_keys=False, allow_unicode=True, width=110))
    if imported.data is not None:
        imported.data.to_csv(out / "data.csv", index=False)
    if imported.release is not None:
        imported.release.to_csv(out / "release.csv", index=False)
    schema = load_schema(out / "schema.yaml")
    schedule = load_schedule(out / "tables.yaml", schema)
    if imported.release is not None:
        releases_from_frame(read_table(out / "release.csv"), schema, schedule, str(out / "release.csv"))
    if imported.rules is not None:
        load_rules(out / "rules.yaml")
    return files

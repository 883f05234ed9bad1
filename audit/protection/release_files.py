"""What ``audit protect`` writes for publication once its pattern is re-audited: protected.csv, the
reviewer's sheet and the peers' forms (:mod:`audit.peers.release`), with why each cell is hidden."""
from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Mapping, Sequence

import numpy as np

from ..inputs import Inputs
from ..outputs.words import claim_text
from ..paths import clear_outputs
from ..peers.codes import describe
from ..peers.release import CSV_FILE, PARQUET_FILE, REVIEW_FILE, SDMX_FILE, TAU_FOLDER, release_rows
from ..peers.release import write_release as write_forms
from ..release.constraints import UnitRelease
from ..release.tabulate import check_units, tabulate, units_here, units_of
from ..specs.schedule import Schedule

FILES = (CSV_FILE, PARQUET_FILE, REVIEW_FILE, SDMX_FILE)  # and the folder TAU_FOLDER
WRITES = (*FILES, f"{TAU_FOLDER}/")
BATCH = 256  # units tabulated at a time for the release files


def clear_release(out: Path) -> None:
    """Remove the release files an earlier run left in ``out`` (the peers' folder's files too)."""
    clear_outputs(out, FILES)
    folder = out / TAU_FOLDER
    if folder.is_dir():
        for path in folder.iterdir():
            if path.suffix in (".csv", ".sbs", ".hst"):
                path.unlink()


def protection_levels(rules) -> dict:
    """The protection levels a hidden cell's interval is held to (the rule's settings, whatever its action)."""
    return next((dict(r.settings) for r in rules.rules if r.id == "protection_levels"), {"lower": 1, "upper": 1})


def write_release(inputs: Inputs, schedule: Schedule, after: Mapping, out: Path, rules,
                  reasons: Mapping | None = None, noisy: bool = False) -> list[Path]:
    """The protected ``schedule``'s release (what protected.yaml holds) with its re-audit's intervals,
    written in every form."""
    rows = release_rows(releases(inputs, schedule), inputs.schema, ByGeo(after.get("units", ())), reasons,
                        protection_levels(rules), noisy)
    return write_forms(rows, schedule, inputs.schema, out)


def releases(inputs: Inputs, schedule: Schedule, batch: int = BATCH) -> Iterator[UnitRelease]:
    """Every unit's release, as :func:`~audit.release.tabulate.tabulate` orders them (by level, then unit),
    tabulated ``batch`` units at a time: memory holds one batch's values, not the release's."""
    frame, schema = inputs.frame, inputs.schema
    for level in schedule.levels:
        alone = replace(schedule, tables=tuple(t for t in schedule.tables if t.level == level))
        units = units_of(frame, schema, level)
        for i in range(0, len(units), batch):
            rows = np.concatenate([idx for _, idx in units[i: i + batch]])
            part = frame.iloc[np.sort(rows)]
            yield from tabulate(part, schema, units_here(part, schema, alone))
    check_units(schedule, {"/".join(geo) for level in schedule.levels for geo, _ in units_of(frame, schema, level)})


class ByGeo(Mapping):
    """A findings document's units by geo key, each read from the sequence when asked for (a
    :class:`~audit.findings.lines.JsonLines` stays on disk): the index holds one position per unit."""

    def __init__(self, units: Sequence[Mapping]):
        self.units = units
        self.at = {u["geo"]: i for i, u in enumerate(units)}

    def __getitem__(self, geo: str) -> Mapping:
        return self.units[self.at[geo]]

    def __contains__(self, geo) -> bool:
        return geo in self.at  # without reading the unit

    def __iter__(self) -> Iterator[str]:
        return iter(self.at)

    def __len__(self) -> int:
        return len(self.at)


class Reasons(Mapping):
    """Per unit and cell protect hid: (primary | secondary, which rule it answers and, for a cell hidden
    against reconstruction, a claim the published cells proved through it before). A unit's are made when
    asked for, from its entry in the report and in ``before`` (both may stay on disk); the parent units'
    (coupled) are made at once."""

    def __init__(self, report: Mapping, before: Mapping):
        self.failed: dict[str, set[str]] = {}
        for c in before.get("checks", ()):
            if c["outcome"] == "fail":
                self.failed.setdefault(c["unit"], set()).add(sys.intern(c["rule"]))
        self.claims, self.units = ByGeo(before.get("units", ())), ByGeo(report.get("units", ()))
        self.schema = before.get("schema") or {}
        self.threshold = (report.get("policy") or {}).get("small")
        self.coupled: dict[str, dict[str, tuple[str, str]]] = {}
        for d in report.get("levels", ()):
            for entry in d.get("cells", ()):  # coupled keys: CHILD/TABLE:CELL below the parent, or the parent's own
                below, _, cell = entry.rpartition("/")
                rules = [r for r in d.get("rules", ()) if r != "protection_levels"]
                what = (f"prove claims that fail {', '.join(rules)}" if rules else
                        "narrow a hidden cell below the protection levels")
                self.coupled.setdefault(f"{d['geo']}/{below}" if below else d["geo"], {}).setdefault(cell, (
                    "secondary", f"coupled: without it the tables of {d['geo']} and of its child units {what}"))

    def __getitem__(self, geo: str) -> dict[str, tuple[str, str]]:
        if geo not in self.units and geo not in self.coupled:
            raise KeyError(geo)
        mine: dict[str, tuple[str, str]] = {}
        if geo in self.units:
            u = self.units[geo]
            for cell in u["primary"]:
                mine[cell] = ("primary", f"published count under the small-cell threshold ({self.threshold}; "
                                         "small_cells rule)")
            for cell in u["complementary"]:
                mine.setdefault(cell, ("secondary", "complementary: keeps a primary cell of its line from being "
                                                    "recovered from the margins"))
            rules = ", ".join(sorted(self.failed.get(geo, ()))) or "the rules"
            for cell in u["reconstruction"]:
                example = _claim_through(self.claims.get(geo), cell, self.schema)
                mine.setdefault(cell, ("secondary", f"reconstruction: without it the published cells prove claims "
                                                    f"that fail {rules}" + (f" (e.g. {example})" if example else "")))
        for cell, why in self.coupled.get(geo, {}).items():
            mine.setdefault(cell, why)
        return mine

    def __iter__(self) -> Iterator[str]:
        yield from self.units
        yield from (geo for geo in self.coupled if geo not in self.units)

    def __len__(self) -> int:
        return len(self.units) + sum(geo not in self.units for geo in self.coupled)


def _claim_through(unit: Mapping | None, cell: str, schema: Mapping) -> str:
    """The first listed claim of a unit whose explanation names ``cell`` (in words), or ''."""
    for claim in (unit or {}).get("claims", ()):
        if any(k == cell or k.startswith(cell + ":") for k in claim.get("cells", ())):
            return claim_text(claim, schema, unit).rstrip(".")
    return ""


def write_pattern_release(inputs: Inputs, pattern, doc: Mapping, out: Path, rules) -> list[Path]:
    """Another tool's pattern (applied to ``inputs``) with its audit's intervals, in every form: its
    cells keep the status the tool gave them, and the reason names the tool's code."""
    units = ByGeo(doc.get("units", ()))
    why = {geo: {k: (s, f"{describe(pattern.system, pattern.codes[geo][k])} in {pattern.source}")
                 for k, s in cells.items() if s in ("primary", "secondary")}
           for geo, cells in pattern.statuses.items()}
    rows = release_rows(releases(inputs, inputs.schedule), inputs.schema, units, why,
                        protection_levels(rules))
    return write_forms(rows, inputs.schedule, inputs.schema, out)

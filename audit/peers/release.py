"""The protected release as agencies publish it: ``protected.csv`` (one row per published value, its
status in our words and the peers' codes, each hidden cell's proved interval and why it is hidden),
the reviewer's sheet of the suppressions, and the tables in tau-Argus's and SDMX's forms."""
from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Iterable, Mapping

from ..policy.checks import protection_needed, unit_intervals
from ..release.constraints import STRUCTURAL, SUPPRESSED, UnitRelease, Value
from ..specs.schedule import MARGIN, Schedule
from ..specs.schema_types import Schema
from .codes import HIDDEN, NOISY, PRIMARY, PUBLISHED, ROUNDED, SECONDARY, STRUCTURAL as STRUCTURAL_ZERO, code

CSV_FILE, PARQUET_FILE, REVIEW_FILE, SDMX_FILE, TAU_FOLDER = (
    "protected.csv", "protected.parquet", "review.csv", "protected_sdmx.csv", "tauargus")
TOTAL = "Total"  # the total code tau-Argus, sdcTable and GaussSuppression use by default
CODE_COLUMNS = ("tau_argus", "tau_argus_sbs", "sdctable", "sdmx_conf_status")
REVIEW_COLUMNS = ("unit", "table", "cell", "label", "statistic", "status", "lower", "upper", "certified",
                  "protected", "reason", "reviewer", "decision", "comment")


def status_of(value: Value, release: UnitRelease, hidden_as: Mapping[str, str], noisy: bool = False) -> str:
    """Our status of one published value: ``hidden_as`` (cell key -> primary or secondary) overrides
    what the tabulation knew of a suppressed cell's reason."""
    if value.status == STRUCTURAL:
        return STRUCTURAL_ZERO
    if value.status == SUPPRESSED:
        return hidden_as.get(value.cell.key) or (PRIMARY if value.suppression == "primary" else SECONDARY)
    if noisy and value.stat.kind == "count":
        return NOISY
    if value.stat.kind == "count" and release.protection[value.cell.table].round_to:
        return ROUNDED
    return PUBLISHED


def release_rows(releases: Iterable[UnitRelease], schema: Schema, units: Mapping[str, Mapping],
                 reasons: Mapping[str, Mapping[str, tuple[str, str]]] | None = None, noisy: bool = False):
    """One dict per published value. ``units``: geo key -> the findings unit that audited it (its
    hidden cells' intervals); ``reasons``: geo key -> cell key -> (primary | secondary, why)."""
    reasons = reasons or {}
    for release in releases:
        geo = "/".join(release.geo)
        intervals = unit_intervals(units.get(geo) or {})
        why = reasons.get(geo, {})
        hidden_as = {k: kind for k, (kind, _) in why.items()}
        place = dict(zip(schema.geography, release.geo)) | {g: "" for g in schema.geography[len(release.geo):]}
        for v in release.values:
            status = status_of(v, release, hidden_as, noisy)
            row = {**place, "level": release.level, "table": v.cell.table, "cell": v.cell.id, "label": v.cell.label,
                   "statistic": v.stat.name, "value": "" if status in HIDDEN else v.text(), "status": status}
            row |= {c: code(status, s) for c, s in zip(CODE_COLUMNS, ("tau_argus", "sbs", "sdctable", "sdmx"))}
            iv = intervals.get(v.cell.key if v.stat.kind == "count" else v.key) if status in HIDDEN else None
            row |= _interval(iv) | {"reason": why.get(v.cell.key, ("", ""))[1] or _default_reason(status, release, v)}
            row["_truth"] = iv.get("value") if iv else None  # for the review sheet only: never written here
            yield row


def _interval(iv: Mapping | None) -> dict:
    if not iv:
        return {"lower": "", "upper": "", "certified": ""}
    exact = {**iv, **iv.get("exact", {})}
    return {"lower": exact["lo"], "upper": exact["hi"], "certified": "yes" if iv.get("certified") else "no"}


def _default_reason(status: str, release: UnitRelease, value: Value) -> str:
    p = release.protection[value.cell.table]
    if status == PRIMARY:
        return f"count under the schedule's threshold ({p.suppress_below}): primary suppression"
    if status == SECONDARY:
        if value.cell.suppressed:
            return "the schedule suppresses this cell in every unit"
        return "complementary suppression: no line of the table may have one hidden cell alone"
    return ""


def write_protected(rows: list[dict], schema: Schema, out: Path) -> list[Path]:
    """``protected.csv`` (and ``protected.parquet`` when pyarrow is installed): the publishable release."""
    columns = [*schema.geography, "level", "table", "cell", "label", "statistic", "value", "status", *CODE_COLUMNS,
               "lower", "upper", "certified", "reason"]
    path = out / CSV_FILE
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, columns, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    written = [path]
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        return written
    types = {c: pa.string() for c in columns}
    table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types, strings_can_be_null=False))
    pq.write_table(table, out / PARQUET_FILE)
    return [*written, out / PARQUET_FILE]


def write_review(rows: list[dict], schema: Schema, levels: Mapping, out: Path, name: str = REVIEW_FILE) -> Path:
    """The suppressions as a sheet a reviewer signs: each hidden value, its interval, whether that meets
    the protection levels, why it is hidden, and empty reviewer / decision / comment columns."""
    path = out / name
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, REVIEW_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            if r["status"] in HIDDEN:
                unit = "/".join(r[g] for g in schema.geography if r[g])
                w.writerow({**r, "unit": unit, "protected": meets(r, levels), "reviewer": "", "decision": "",
                            "comment": ""})
    return path


def meets(row: Mapping, levels: Mapping) -> str:
    """Whether a hidden value's interval reaches the protection levels: yes, pinned, narrow, or not
    audited (the value's interval was not computed)."""
    truth, lo, hi = row.get("_truth"), row.get("lower"), row.get("upper")
    if truth is None or lo == "" or hi == "":
        return "not audited"
    lo, hi = float(_number(lo)), float(_number(hi))
    if lo == hi:
        return "pinned"
    below, above = protection_needed(levels, truth, row["statistic"] == "count")
    return "yes" if row.get("certified") == "yes" and truth - lo >= below and hi - truth >= above else "narrow"


def _number(text) -> float:
    num, _, den = str(text).partition("/")
    return float(num) / float(den) if den else float(num)


def cell_codes(schedule: Schedule, table_id: str, cell_id: str) -> list[tuple[str, str]]:
    """A cell's explanatory variables and codes as the peers name them (a margin is ``Total``); a table
    listed cell by cell has one variable, ``cell``."""
    table = schedule.table(table_id)
    parts = cell_id.split(",")
    if table.by and len(parts) == len(table.by):
        return [(b, TOTAL if c == MARGIN else c) for b, c in zip(table.by, parts)]
    return [("cell", cell_id)]


def write_peer_forms(rows: list[dict], schedule: Schedule, schema: Schema, out: Path) -> list[Path]:
    """tau-Argus's code-value CSV with the status number and its SBS form (one file per table and
    statistic, the geography as the first explanatory variables), an a-priori ``.hst`` per table of
    the hidden cells (``U`` primary, ``M`` secondary: tau-Argus keeps them hidden), and the release in
    long form with SDMX CL_CONF_STATUS. A hidden value is written ``x`` with an empty frequency: these
    files are the release, not tau-Argus's confidential working table."""
    folder = out / TAU_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    files: dict[Path, list[str]] = {}
    for r in rows:
        geo = [r[g] for g in schema.geography if r[g]]
        codes = geo + [c for _, c in cell_codes(schedule, r["table"], r["cell"])]
        hidden = r["status"] in HIDDEN
        value = "x" if hidden else r["value"]
        stem = r["table"] if r["statistic"] == "count" else f"{r['table']}_{re.sub(r'[^A-Za-z0-9]+', '_', r['statistic']).strip('_')}"
        files.setdefault(folder / f"{stem}.csv", []).append(_line([*codes, value, str(r["tau_argus"])]))
        freq = "" if hidden or r["statistic"] != "count" else r["value"]
        files.setdefault(folder / f"{stem}.sbs", []).append(_line([*codes, value, freq, r["tau_argus_sbs"]]))
        if hidden and r["statistic"] == "count":
            files.setdefault(folder / f"{r['table']}.hst", []).append(
                ";".join([*codes, "U" if r["status"] == PRIMARY else "M"]))
    for path, lines in files.items():
        path.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    sdmx = out / SDMX_FILE
    with sdmx.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([*(g.upper() for g in schema.geography), "TABLE", "CELL", "STATISTIC", "OBS_VALUE", "CONF_STATUS"])
        for r in rows:
            w.writerow([*(r[g] for g in schema.geography), r["table"], r["cell"], r["statistic"], r["value"],
                        r["sdmx_conf_status"]])
    return [*files, sdmx]


def _line(fields: list[str]) -> str:
    """One comma-separated record, quoted where a field holds a comma or a quote (as tau-Argus's
    "embed quotes" option does)."""
    return ",".join('"' + f.replace('"', '""') + '"' if ("," in f or '"' in f) else f for f in map(str, fields))

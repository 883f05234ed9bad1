"""The protected release as agencies publish it: ``protected.csv`` (one row per published value, its
status in our words and the peers' codes, each hidden cell's proved interval and why it is hidden),
the reviewer's sheet of the suppressions, and the tables in tau-Argus's and SDMX's forms."""
from __future__ import annotations

import csv
import re
from contextlib import ExitStack
from pathlib import Path
from typing import Iterable, Mapping

from ..policy.checks import too_narrow, unit_intervals
from ..release.constraints import STRUCTURAL, SUPPRESSED, UnitRelease, Value
from ..specs.schedule import MARGIN, Schedule
from ..specs.schema_types import Schema
from .codes import HIDDEN, NOISY, PRIMARY, PUBLISHED, ROUNDED, SECONDARY, STATUSES, STRUCTURAL as STRUCTURAL_ZERO, code

CSV_FILE, PARQUET_FILE, REVIEW_FILE, SDMX_FILE, TAU_FOLDER = (
    "protected.csv", "protected.parquet", "review.csv", "protected_sdmx.csv", "tauargus")
TOTAL = "Total"  # the total code tau-Argus, sdcTable and GaussSuppression use by default
CODE_COLUMNS = ("tau_argus", "tau_argus_sbs", "sdctable", "sdmx_conf_status")
PEER_CODES = {s: {c: code(s, system) for c, system in zip(CODE_COLUMNS, ("tau_argus", "sbs", "sdctable", "sdmx"))}
              for s in STATUSES}  # each status's code columns, made once
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
                 reasons: Mapping[str, Mapping[str, tuple[str, str]]] | None = None, levels: Mapping | None = None,
                 noisy: bool = False):
    """One dict per published value, unit by unit. ``units``: geo key -> the findings unit that audited
    it (its hidden cells' intervals); ``reasons``: geo key -> cell key -> (primary | secondary, why);
    ``levels``: the protection levels each hidden value's interval is judged by (:func:`judged`)."""
    reasons, levels = reasons or {}, {"lower": 1, "upper": 1} if levels is None else levels
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
            row |= PEER_CODES[status]
            key = v.cell.key if v.stat.kind == "count" else v.key
            iv = intervals.get(key) if status in HIDDEN else None
            row |= _interval(iv) | {"protected": judged(key, iv, levels) if status in HIDDEN else "",
                                    "reason": why.get(v.cell.key, ("", ""))[1] or _default_reason(status, release, v)}
            yield row


def judged(key: str, iv: Mapping | None, levels: Mapping) -> str:
    """A hidden value's interval against the protection levels (the rule's own test, :func:`too_narrow`):
    yes, narrow, pinned (one value), or not audited (no interval, or no true value to judge it by)."""
    if not iv or "value" not in iv:
        return "not audited"
    if iv["lo"] == iv["hi"]:
        return "pinned"
    return "narrow" if too_narrow(levels, {key: iv}) else "yes"


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
            return "listed as suppressed by the schedule (suppressed: true, or its suppress list for this unit)"
        return "complementary suppression: no line of the table may have one hidden cell alone"
    return ""


def cell_codes(schedule: Schedule, table_id: str, cell_id: str) -> list[tuple[str, str]]:
    """A cell's explanatory variables and codes as the peers name them (a margin is ``Total``); a table
    listed cell by cell has one variable, ``cell``."""
    table = schedule.table(table_id)
    parts = cell_id.split(",")
    if table.by and len(parts) == len(table.by):
        return [(b, TOTAL if c == MARGIN else c) for b, c in zip(table.by, parts)]
    return [("cell", cell_id)]


def write_release(rows: Iterable[dict], schedule: Schedule, schema: Schema, out: Path) -> list[Path]:
    """Every form in one pass over ``rows`` (memory flat in their number):

    - ``protected.csv`` (and ``protected.parquet`` when pyarrow is installed): the publishable release;
    - ``review.csv``: the hidden values, their interval, whether it meets the protection levels and why
      they are hidden, with empty reviewer / decision / comment columns to sign;
    - ``tauargus/``: tau-Argus's code-value CSV with the status number and its SBS form, per table and
      statistic (the geography as the first explanatory variables), and an a-priori ``.hst`` per table of
      the hidden cells (``U`` primary, ``M`` secondary). A hidden value is ``x`` with an empty frequency:
      these are the release, not tau-Argus's confidential working table;
    - ``protected_sdmx.csv``: the release in long form with SDMX CL_CONF_STATUS."""
    folder = out / TAU_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    columns = [*schema.geography, "level", "table", "cell", "label", "statistic", "value", "status", *CODE_COLUMNS,
               "lower", "upper", "certified", "reason"]
    with ExitStack() as stack:
        def opened(path: Path):
            return stack.enter_context(path.open("w", newline="", encoding="utf-8"))

        main = csv.writer(opened(out / CSV_FILE))
        review = csv.DictWriter(opened(out / REVIEW_FILE), REVIEW_COLUMNS, extrasaction="ignore")
        sdmx = csv.writer(opened(out / SDMX_FILE))
        main.writerow(columns)
        review.writeheader()
        sdmx.writerow([*(g.upper() for g in schema.geography), "TABLE", "CELL", "STATISTIC", "OBS_VALUE",
                       "CONF_STATUS"])
        peers: dict[str, object] = {}  # file name -> open file

        def line(name: str, text: str) -> None:
            if name not in peers:
                peers[name] = opened(folder / name)
            peers[name].write(text + "\n")

        cells: dict[tuple[str, str], list[str]] = {}  # the cell's peer codes and statistics' file stems, once each
        stems: dict[tuple[str, str], str] = {}
        for r in rows:
            main.writerow([r[c] for c in columns])
            geo = [r[g] for g in schema.geography if r[g]]
            sdmx.writerow([*(r[g] for g in schema.geography), r["table"], r["cell"], r["statistic"], r["value"],
                           r["sdmx_conf_status"]])
            hidden = r["status"] in HIDDEN
            if hidden:
                review.writerow({**r, "unit": "/".join(geo)})
            at = (r["table"], r["cell"])
            if at not in cells:
                cells[at] = [c for _, c in cell_codes(schedule, *at)]
            codes = geo + cells[at]
            value = "x" if hidden else r["value"]
            stem = stems.get((r["table"], r["statistic"]))
            if stem is None:  # T for counts, T_mean_age for mean(age)
                stat = re.sub(r"[^A-Za-z0-9]+", "_", r["statistic"]).strip("_")
                stem = r["table"] if r["statistic"] == "count" else f"{r['table']}_{stat}"
                stems[r["table"], r["statistic"]] = stem
            line(f"{stem}.csv", _line([*codes, value, r["tau_argus"]]))
            freq = "" if hidden or r["statistic"] != "count" else r["value"]
            line(f"{stem}.sbs", _line([*codes, value, freq, r["tau_argus_sbs"]]))
            if hidden and r["statistic"] == "count":
                line(f"{r['table']}.hst", ";".join([*codes, "U" if r["status"] == PRIMARY else "M"]))
    return [out / CSV_FILE, *_parquet(out / CSV_FILE, columns), out / REVIEW_FILE, *(folder / n for n in peers),
            out / SDMX_FILE]


def _parquet(path: Path, columns: list[str]) -> list[Path]:
    """``protected.parquet`` beside ``protected.csv``, every column text, converted batch by batch."""
    try:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError:
        return []
    target = path.with_suffix(".parquet")
    options = pacsv.ConvertOptions(column_types={c: pa.string() for c in columns}, strings_can_be_null=False)
    reader = pacsv.open_csv(path, convert_options=options)
    with pq.ParquetWriter(target, reader.schema) as writer:
        for batch in reader:
            writer.write_batch(batch)
    return [target]


def _line(fields: list) -> str:
    """One comma-separated record, quoted where a field holds a comma or a quote (as tau-Argus's
    "embed quotes" option does)."""
    return ",".join('"' + f.replace('"', '""') + '"' if ("," in f or '"' in f) else f for f in map(str, fields))

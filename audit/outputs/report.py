"""The HTML risk report: one self-contained file (inline CSS, inline SVG, no network) from findings.json.

The template lives in the ``reports`` package (``reports/report.html.j2``) and is rendered with
autoescaping on; every value from the findings is escaped. Optional inputs, read when present beside
the findings: ``rank.json`` (ranking attack), ``linear.json`` (linear attack and mitigation sweep) and
``protection.json`` (recommended protection and its re-audit).
"""
from __future__ import annotations

import heapq
import importlib.resources
import os
from pathlib import Path
from typing import Mapping

from markupsafe import Markup

from ..findings.files import read_json
from ..findings.model import Findings
from ..policy.checks import exact_counts
from .assumptions import assumptions
from .charts import bar_chart, histogram
from .grids import unit_grids
from .sections import DETAIL_UNITS, TOP_UNITS, intervals_section, linear_section, protection_section, rank_section, reid_section
from .signoff import appendix, counted, memo, parent_level, rule_titles, signoff
from .words import claim_text, column_title, describe_value, figure, label_cells, noun_form, plural

CLAIMS_PER_UNIT = 10     # claims written out per unit
RECORDS_PER_UNIT = 10    # reconstructed records shown per unit


# ----------------------------------------------------------------------------------------- loading

EXTRAS = ("rank", "linear", "protection")


def extras_beside(folder: Path) -> dict[str, dict]:
    """rank.json, linear.json and protection.json found in ``folder`` (absent ones are left out)."""
    out = {}
    for name in EXTRAS:
        p = Path(folder) / f"{name}.json"
        if p.is_file():
            out[name] = read_json(p, f"{name}.json")
    return out


# ----------------------------------------------------------------------------------------------- context
INDEX_UNITS = 10_000  # the riskiest units the unit list's search covers: the report stays under 2 MB for a state

def _unit_rows(doc: Findings) -> tuple[list[dict], list[int], list[int]]:
    """Every unit's row, riskiest first (each with its position in ``doc.units``), every unit's
    number of derived singletons, and the positions of the units with a ``grid``."""
    failing: dict[str, list[str]] = {}
    for c in doc.checks:
        if c.outcome == "fail":
            failing.setdefault(c.unit, []).append(c.rule)
    threshold = ((doc.rules or {}).get("rules", {}).get("small_cells") or {}).get("threshold")
    derived: list[int] = []
    gridded: list[int] = []

    def rows():
        for i, u in enumerate(doc.units):
            s = u["summary"]
            if u.get("grid"):
                gridded.append(i)
            small = exact_counts(u)
            derived.append(s.get("derived_singletons", 0))
            yield {"index": i, "geo": u["geo"], "level": u.get("level", ""), "rows": u.get("rows"),
                   "status": u.get("status"), "derived": s.get("derived_singletons", 0),
                   "singletons": s.get("verified_singletons", 0), "verified": s.get("verified", 0),
                   "records": s.get("full_records", 0), "undecided": s.get("undecided", 0),
                   "small": sum(1 for v in small.values() if 1 <= v < (threshold or float("inf"))),
                   "solutions": f"{(u.get('solutions') or {}).get('count', '?')}"
                                f"{'' if (u.get('solutions') or {}).get('exhausted') else '+'}",
                   "reconstructed": bool(u.get("reconstructed")), "failing": failing.get(u["geo"], []),
                   "seconds": u.get("seconds")}

    ranked = sorted(rows(), key=lambda r: (-len(r["failing"]), -r["records"], -r["derived"], -r["undecided"], r["geo"]))
    return ranked, derived, gridded


def _unit_index(rows: list[dict]) -> dict:
    """Every unit's row, compact, for the unit list's search and filter (reports/report.html.j2 reads
    the fields in this order): the geography key as a position in ``parents`` (the key up to its last
    '/') and the rest, the level as a position in ``levels``, the failing rules as a bit mask over ``rules``."""
    levels = list(dict.fromkeys(r["level"] for r in rows))
    rules = list(dict.fromkeys(rule for r in rows for rule in r["failing"]))
    parents = list(dict.fromkeys(r["geo"][: r["geo"].rfind("/") + 1] for r in rows))
    at = {name: i for i, name in enumerate(parents)}
    titles = rule_titles()
    out = []
    for r in rows:
        cut = r["geo"].rfind("/") + 1
        out.append([at[r["geo"][:cut]], r["geo"][cut:], levels.index(r["level"]), r["rows"], r["derived"],
                    r["singletons"], r["records"], r["small"], r["undecided"], r["solutions"], int(r["reconstructed"]),
                    sum(1 << rules.index(f) for f in set(r["failing"])), "" if r["status"] == "done" else r["status"] or ""])
    return {"levels": levels, "parents": parents, "rules": rules, "titles": [titles.get(r, r) for r in rules],
            "rows": out}


def _claims_by_columns(doc: Findings) -> dict[str, dict[str, float]]:
    """Verified singleton claims by number of columns, derived and published directly (exact counts)."""
    by = doc.summary.singletons_by_columns
    ks = sorted({int(k) for counts in by.values() for k in counts})
    return {str(k): {"derived": by.get("derived", {}).get(str(k), 0),
                     "published directly": by.get("direct", {}).get(str(k), 0)} for k in ks}


def _detail(doc: Findings, rows: list[dict], cell_labels: Mapping[str, str], store=None) -> list[dict]:
    """The claims and records of the riskiest units: from the claim store when there is one, else
    those findings.json lists."""
    schema = doc.schema or {}
    ncols = len((schema.get("columns") or {})) or None
    out = []
    for r in rows:
        if len(out) >= DETAIL_UNITS:
            break
        if not r["derived"] and not r["records"]:
            continue
        u = doc.units[r["index"]]
        claims = store.claims(u["store"]) if store is not None and u.get("store") else u.get("claims", ())
        singles, records = [], []
        for c in claims:
            if c["status"] != "verified":
                continue
            if c["m"] == 1 and not c.get("direct"):
                singles.append(c)
            if ncols and len(c["columns"]) == ncols and len(records) < RECORDS_PER_UNIT:
                records.append(c)
        if not singles and not records:
            continue
        singles = heapq.nsmallest(CLAIMS_PER_UNIT, singles,
                                  key=lambda c: (-len(c["columns"]), not c.get("cells"), c.get("baseline", 1.0)))
        published = (u.get("cells") or {}).get("explaining") or {}
        shown = [{"text": claim_text(c, schema, u), "columns": len(c["columns"]),
                  "cells": [{"key": k, "label": cell_labels.get(k, k), "value": published.get(k)}
                            for k in c.get("cells", ())],
                  "explained": c.get("explained", bool(c.get("cells"))), "minimal": c.get("minimal", False),
                  "baseline": c.get("baseline")} for c in singles]
        recs = [{"m": c["m"], "values": [describe_value(schema, k, str(v)) for k, v in c["columns"].items()]}
                for c in records]
        total = u["summary"].get("derived_singletons", len(singles))
        out.append({"geo": u["geo"], "level": u.get("level", ""), "rows": u.get("rows"), "claims": shown,
                    "grid": bool(u.get("grid")),
                    "more": max(total - len(shown), 0), "total": total,
                    "records": recs, "record_columns": [column_title(schema, c) for c in (schema.get("columns") or {})],
                    "more_records": max(u["summary"].get("full_records", 0) - sum(c["m"] for c in records), 0)})
    return out


def context(doc: Findings, extras: Mapping[str, Mapping] | None = None, store=None) -> dict:
    """Everything the template shows, computed from the findings (and optional rank/linear/protection;
    the riskiest units' claims from the claim store ``store`` when given)."""
    extras = dict(extras or {})
    rules = doc.rules or {}
    rows, derived, gridded = _unit_rows(doc)
    n_units = len(derived)
    cell_labels = doc.cell_labels or {}
    by_cols = _claims_by_columns(doc)
    charts = {}
    if by_cols:
        charts["by_columns"] = Markup(bar_chart(by_cols, title="Verified singleton claims by number of attributes",
                                                xlabel="number of attributes in the claim", ylabel="claims"))
    if n_units > 5:
        charts["distribution"] = Markup(bar_chart(histogram(derived), title="Units by number of derived singletons",
                                                  xlabel="derived singleton claims in the unit", ylabel="units"))
    reid = reid_section(doc)
    protection = protection_section(extras.get("protection"))
    level, parent = parent_level(doc)
    failing = [{**f.to_json(), "example": label_cells(f.example, cell_labels)} for f in doc.failing]
    warnings = [{**f.to_json(), "example": label_cells(f.example, cell_labels)} for f in doc.warnings]
    detail = _detail(doc, rows, cell_labels, store)
    grids = unit_grids(doc, gridded, rows, cell_labels)
    return {
        "doc": doc, "verdict": doc.verdict or "not evaluated", "failing": failing,
        "memo": memo(doc, rows, reid, protection), "signoff": signoff(doc, extras, cell_labels),
        "level": level, "parent": parent, "noun": (doc.schema or {}).get("unit") or "record",
        "baselines": any(c["baseline"] is not None for d in detail for c in d["claims"]),
        "warnings": warnings, "summary": doc.summary, "rules": rules,
        "rule_titles": rule_titles(), "units": rows[:TOP_UNITS], "more_units": max(n_units - TOP_UNITS, 0),
        "unit_index": _unit_index(rows[:INDEX_UNITS]), "indexed": min(n_units, INDEX_UNITS),
        "n_units": n_units, "charts": charts,
        "structural": sum((u.get("cells") or {}).get("structural", 0) for u in doc.units),
        "detail": detail, "claim_store": (doc.claim_store or {}).get("file"),
        "detail_limit": DETAIL_UNITS, "claims_limit": CLAIMS_PER_UNIT,
        "schema": doc.schema or {}, "rank": rank_section(extras.get("rank"), rules),
        "reid": reid, "intervals": intervals_section(doc, cell_labels),
        "grids": grids,
        "evidence": {"claims": [d["geo"] for d in detail], "tables": [g["geo"] for g in (grids or {}).get("units", ())]},
        "counted": counted(doc), "assumptions": assumptions(doc, level),
        "linear": linear_section(extras.get("linear")), "protection": protection,
        "appendix": appendix(doc, extras),
    }


# ---------------------------------------------------------------------------------------------- render

TEMPLATES = importlib.resources.files("audit") / "_reports"  # the top-level reports/ folder, shipped inside audit


def _compiled_templates(jinja2):
    """The report template compiled once and kept in the user's cache folder (``$XDG_CACHE_HOME``, else
    ``~/.cache``), keyed by the template's text: compiling it took 0.12 s of CPU in every run. None where the
    folder cannot be made; a cache that cannot be written is skipped."""
    try:
        folder = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "disclosure-audit" / "templates"
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, RuntimeError):  # RuntimeError: no home folder
        return None

    class Cache(jinja2.FileSystemBytecodeCache):
        def dump_bytecode(self, bucket) -> None:
            try:
                super().dump_bytecode(bucket)
            except OSError:  # a read-only or full cache folder: the template is compiled again next time
                pass

    return Cache(str(folder))


def _environment():
    import jinja2

    def load(name: str) -> str:
        return (TEMPLATES / name).read_text(encoding="utf-8")

    env = jinja2.Environment(loader=jinja2.FunctionLoader(lambda n: load(n)), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             bytecode_cache=_compiled_templates(jinja2))
    env.policies["json.dumps_kwargs"] = {"sort_keys": True, "separators": (",", ":")}  # the unit index: no spaces
    env.filters["pct"] = lambda v, d=1: "–" if v is None else f"{float(v) * 100:.{d}f}%"
    env.filters["plural"] = lambda n, noun, many=None: plural(n, noun, many) if n is not None else "–"
    env.filters["noun"] = noun_form
    env.filters["figure"] = figure
    env.filters["num"] = lambda v: "–" if v is None else (f"{v:,}" if isinstance(v, int) else f"{v:,.3g}")
    return env


def render(doc: Findings | Mapping, extras: Mapping[str, Mapping] | None = None, store=None) -> str:
    """The report as one HTML string (``doc``: findings, or their JSON document)."""
    doc = doc if isinstance(doc, Findings) else Findings.from_json(doc)
    env = _environment()
    css = (TEMPLATES / "report.css").read_text(encoding="utf-8")
    return env.get_template("report.html.j2").render(css=Markup(css), **context(doc, extras, store))


def write_report(doc: Findings, path: Path, extras: Mapping[str, Mapping] | None = None, store=None) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(render(doc, extras, store), encoding="utf-8")
    tmp.replace(path)
    return path

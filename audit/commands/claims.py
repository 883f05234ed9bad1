"""``audit claims``: the claims of a run from its claim store, filtered, as CSV or JSON."""
from __future__ import annotations

import csv
import json
import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..findings.claimstore import store_beside
from ..errors import AuditError
from ..findings.files import read_findings
from ..outputs.terminal import echo, printable

STATUSES = ("verified", "undecided", "refuted")


def _keep(row: list[str], status: str | None, singletons: bool, derived: bool, min_columns: int | None) -> bool:
    """Filters on the store's leading columns: level, geo, status, m, direct, columns."""
    return ((status is None or row[2] == status) and (not singletons or row[3] == "1")
            and (not derived or (row[2] == "verified" and row[4] == "0"))
            and (min_columns is None or int(row[5]) >= min_columns))


def register(app: typer.Typer) -> None:
    @app.command()
    def claims(
        findings: Annotated[Path, typer.Argument(help="Output folder of audit run (or its findings.json); claims.csv.gz must be beside it.")],
        unit: Annotated[Optional[str], typer.Option("--unit", help="Only the unit with this geo key (as in findings.json, e.g. 01/073/005103/1001).")] = None,
        status: Annotated[Optional[str], typer.Option("--status", help="Only claims with this status: verified, undecided or refuted.")] = None,
        singletons: Annotated[bool, typer.Option("--singletons", help="Only claims about exactly one record (m = 1).")] = False,
        derived: Annotated[bool, typer.Option("--derived", help="Only verified claims no single published cell states.")] = False,
        min_columns: Annotated[Optional[int], typer.Option("--min-columns", min=1, help="Only claims over at least this many columns.")] = None,
        fmt: Annotated[str, typer.Option("--format", help="csv (one row per claim, a column per attribute) or json (an array of claims).")] = "csv",
        limit: Annotated[Optional[int], typer.Option("--limit", min=0, help="Print at most this many claims.")] = None,
    ) -> None:
        """Print the claims of a run (every claim the attack decided, from claims.csv.gz), filtered."""
        if status is not None and status not in STATUSES:
            raise AuditError(f"unknown status '{status}'", "--status", f"use one of {list(STATUSES)}")
        if fmt not in ("csv", "json"):
            raise AuditError(f"unknown format '{fmt}'", "--format", "use csv or json")
        path = findings / "findings.json" if findings.is_dir() else findings
        doc = read_findings(path)
        store = store_beside(path, doc)
        if store is None:
            where = (doc.claim_store or {}).get("file")
            raise AuditError(f"no claim store {'beside it (' + where + ' is missing)' if where else 'for these findings'}",
                             str(path), "keep claims.csv.gz beside findings.json, or run audit run again with --out")
        entries: list = [None]
        if unit is not None:
            units = [u for u in doc.units if u["geo"] == unit]
            if not units:
                raise AuditError(f"no unit '{unit}' in the findings", str(path),
                                 "pass a geo key as findings.json lists it under units[*].geo")
            for u in units:
                if u.get("not_stored"):
                    echo(f"note: {u['level']} {u['geo']}: {u['not_stored']} undecided claims were counted, "
                         "not stored (too many candidates)", err=True)
            entries = [u["store"] for u in units if u.get("store")]
        rows = (row for entry in entries for row in store.rows(entry)
                if _keep(row, status, singletons, derived, min_columns))
        try:
            _print(rows, store, fmt, limit)
        except BrokenPipeError:  # e.g. piped into head
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _print(rows, store, fmt: str, limit: int | None) -> None:
    """CSV or a JSON array on stdout (on a terminal, CSV values are shown escaped: data cannot act on it)."""
    out = sys.stdout
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(store.header)
        if out.isatty():
            rows = ([printable(v) for v in row] for row in rows)
    else:
        out.write("[")
    for n, row in enumerate(rows):
        if limit is not None and n >= limit:
            break
        if fmt == "csv":
            writer.writerow(row)
        else:
            out.write(("\n" if n == 0 else ",\n") + json.dumps(store.claim(row)))
    if fmt == "json":
        out.write("\n]\n")
    out.flush()

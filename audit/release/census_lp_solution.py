"""dbrecon's solutions (``.sol`` files) as person records, and compared with the verdicts of an audit of
the same release."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import AuditError
from ..specs.schema_types import Schema
from .census_lp_reader import COLUMNS, GEOID, _open, decode_variable, split_geoid
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def read_solution(path: str | Path) -> pd.DataFrame:
    """The persons of a dbrecon solution (variables at 1) in the SF1 sample's columns, sorted by geography.

    A ``.sol`` file (gzip or plain) has one ``NAME VALUE`` per line and ``#`` comment lines.
    """
    path = Path(path)
    records = []
    try:
        with _open(path) as fh:
            for number, line in enumerate(fh, 1):
                parts = line.split()
                if not parts or parts[0].startswith("#") or not parts[0].startswith("C_"):
                    continue
                where = f"{path}: line {number}"
                try:
                    value = float(parts[1]) if len(parts) == 2 else float("nan")
                except ValueError:
                    value = float("nan")
                if not (abs(value) < 1e-6 or abs(value - 1) < 1e-6):
                    raise AuditError(f"'{line.strip()[:100]}' is not a variable and a value 0 or 1", where,
                                     "give the .sol file Gurobi wrote for a dbrecon LP")
                if value > 0.5:
                    records.append(decode_variable(parts[0], where))
    except FileNotFoundError:
        raise AuditError("file not found", str(path), "check the path") from None
    except IsADirectoryError:
        raise AuditError("is a folder, not a solution file", str(path), "check the path") from None
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise AuditError(f"cannot read it ({exc.__class__.__name__})", str(path),
                         "give an uncorrupted .sol or .sol.gz file") from None
    if not records:
        raise AuditError("no variable is 1: the solution holds no person", str(path),
                         "give the .sol file Gurobi wrote for a dbrecon LP")
    frame = pd.DataFrame(records, columns=["geoid", *COLUMNS])
    codes = pd.DataFrame([split_geoid(g) for g in frame["geoid"]], columns=[n for n, _ in GEOID])
    out = pd.concat([codes, frame.drop(columns="geoid")], axis=1)
    return out.sort_values([n for n, _ in GEOID] + list(COLUMNS), kind="stable").reset_index(drop=True)


def unit_rows(problem, persons: pd.DataFrame, schema: Schema) -> np.ndarray:
    """The persons of one unit (the SF1 sample's columns) as a dataset of the problem's atoms; in a
    coupled problem the child column is each person's finer geography (e.g. the block code)."""
    geo = list(schema.geography)
    depth = geo.index(problem.level) + 1
    mask = np.ones(len(persons), dtype=bool)
    for name, code in zip(geo[:depth], problem.geo):
        mask &= persons[name].astype(str).to_numpy() == code
    sub = persons[mask]
    columns = []
    for d, name in zip(problem.domains, problem.attributes):
        if name in schema.names:  # an attribute, or a view that groups one (its atoms are sets of its codes)
            values = sub[name]
        else:  # the child unit of a coupled problem: its codes below the parent, joined by '/'
            values = sub[geo[depth: geo.index(d.name) + 1]].astype(str).agg("/".join, axis=1)
        atoms = values.map(d.lookup())
        if atoms.isna().any():
            raise AuditError(f"a person has {d.name} = {values[atoms.isna()].iloc[0]!r}, outside the schema",
                             f"unit {'/'.join(problem.geo)}", "check the solution against the SF1 schema")
        columns.append(atoms.to_numpy(dtype=np.int64))
    return np.column_stack(columns) if len(sub) else np.zeros((0, len(problem.domains)), dtype=np.int64)


def compare(result, persons: pd.DataFrame, schema: Schema) -> dict:
    """How a unit's reconstruction agrees with a solution's persons (the Bureau's .sol).

    ``agree``: verified full records whose count the solution has too; ``differ``: the others (each
    with the tool's proved count and the solution's); ``breaks``: the published values and edits the
    solution does not reproduce as the tool reads the release (why a proved record can differ).
    """
    problem = result.problem
    rows = unit_rows(problem, persons, schema)
    labels = [e.label or str(e.forbid.as_dict()) for e in schema.edits]
    breaks = [labels[int(k[5:])] if k.startswith("edit:") else k for k in problem.violations(rows)]
    # every column a claim can name (no view column; a column of one atom is named by none: it holds for all)
    # (audit.problem.claims.claimable: sizes past one atom; that stage sits above this one)
    full = tuple(c for c, size in enumerate(problem.sizes) if size > 1 and problem.attributes[c] == problem.names[c])
    agree, differ = 0, []
    for v in result.verified:
        if v.claim.columns == full:
            found = v.claim.count(rows)
            if found == v.claim.m:
                agree += v.claim.m
            else:
                differ.append({"record": problem.describe(np.array([a for _, a in v.claim.assignment])),
                               "proved": v.claim.m, "solution": found})
    return {"unit": "/".join(problem.geo), "level": problem.level, "persons": len(rows),
            "reconstructed": result.reconstructed, "verified_records": agree + sum(d["proved"] for d in differ),
            "agree": agree, "differ": differ, "breaks": breaks}

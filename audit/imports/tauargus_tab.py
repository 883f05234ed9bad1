"""A tau-Argus pre-tabulated table (``<OPENTABLEDATA>`` ``.tab``: per cell its codes, value, frequency,
top contributors, status, protection levels) as a published release ``audit run --published`` attacks:
its frequencies as counts, with the table's pattern of statuses."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..errors import AuditError
from .tauargus_files import Batch, Metadata, hierarchy_file, read_text
from .written import GEOGRAPHY, UNIT, Imported

# tau-Argus's status letters in a .tab (S safe, P protected, U unsafe, M secondary by hand, E empty) ->
# what the release shows; the full crosswalk of peers' status codes is audit protect --pattern's
PUBLISHED, HIDDEN = {"S": "safe", "P": "protected", "E": "empty"}, {"U": "unsafe", "M": "secondary"}


def import_tab(batch: Batch, meta: Metadata) -> Imported:
    """The batch file's one table over its ``.tab`` file (see the module docstring)."""
    if meta.separator is None:
        raise AuditError("a .tab file is read at its metadata's <SEPARATOR>", str(meta.path),
                         'add <SEPARATOR> ";" on the first line of the .rda')
    if len(batch.tables) != 1:
        raise AuditError(f"{len(batch.tables)} tables over one .tab file", str(batch.path),
                         "specify the one table the .tab file holds")
    spec = batch.tables[0]
    names = [v.name for v in meta.variables]
    freq = next((v for v in meta.variables if v.has("FREQUENCY")), None)
    status = next((v for v in meta.variables if v.has("STATUS")), None)
    if freq is None or status is None:
        raise AuditError("the metadata names no <FREQUENCY> or no <STATUS> variable", str(meta.path),
                         "a .tab file is imported as its frequencies with their statuses: declare both")
    explanatory = [meta.variable(n, spec.where) for n in spec.explanatory]
    imported = Imported({"unit": "record", "geography": [GEOGRAPHY], "columns": {}}, {"tables": []},
                        sources=(batch.path, batch.metadata, batch.tabledata))
    rows = []
    for number, line in enumerate(read_text(batch.tabledata, ".tab table file"), 1):
        if not line.strip():
            continue
        fields = [f.strip().strip('"').strip() for f in line.split(meta.separator)]
        if len(fields) != len(names):
            raise AuditError(f"{len(fields)} fields split at '{meta.separator}', the metadata lists {len(names)} "
                             "variables", f"{batch.tabledata}:{number}", f"give one field per variable of {meta.path}")
        rows.append((dict(zip(names, fields)), f"{batch.tabledata}:{number}"))
    trees, columns, hierarchies = {}, {}, {}
    for var in explanatory:
        codes = sorted({r[var.name] for r, _ in rows} - {var.total})
        if var.has("HIERCODELIST"):
            tree, listed, spec_h = hierarchy_file(var, meta.path.parent)
            path = Path(spec_h["hrc"])
            outside = [c for c in codes if c not in listed]
            empty = {c for c in outside if all(_count(r, freq.name, w) == 0 for r, w in rows if r[var.name] == c)}
            if set(outside) - empty:
                raise AuditError(f"code '{sorted(set(outside) - empty)[0]}' of '{var.name}' is not in {path.name}",
                                 str(batch.tabledata), f"add it to {path.name}")
            if empty:
                imported.note(f"{batch.tabledata}: the rows of {var.name} {', '.join(sorted(empty))} (no code of "
                              f"{path.name}, every count 0) are left out")
                rows = [(r, w) for r, w in rows if r[var.name] not in empty]
            trees[var.name] = tree
            codes = [c for c in listed if c not in tree]
            hierarchies[f"{var.name}_h"] = spec_h
        columns[var.name] = {"type": "categorical", "values": codes}
    by = [f"{v.name}_h" if v.name in trees else v.name for v in explanatory]
    imported.schema["columns"] = columns
    if hierarchies:
        imported.schema["hierarchies"] = hierarchies
    imported.tables["tables"] = [{"id": "T1", "title": " x ".join(spec.explanatory) + ": frequencies", "by": by,
                                  "margins": True}]
    out = {GEOGRAPHY: [], "table": [], "cell": [], "statistic": [], "value": [], "status": []}
    for row, where in rows:
        code = row[status.name].upper()
        if code not in PUBLISHED and code not in HIDDEN:
            raise AuditError(f"status '{row[status.name]}' is not a tau-Argus status", where,
                             f"use one of {sorted(PUBLISHED) + sorted(HIDDEN)}")
        hidden = code in HIDDEN
        out[GEOGRAPHY].append(UNIT)
        out["table"].append("T1")
        out["cell"].append(",".join("*" if row[v.name] == v.total else row[v.name] for v in explanatory))
        out["statistic"].append("count")
        out["value"].append("(D)" if hidden else str(_count(row, freq.name, where)))
        out["status"].append("suppressed" if hidden else "published")
    imported.release = pd.DataFrame(out)
    imported.note(f"{spec.where}: the table's values ('{spec.response}') are not imported, its frequencies "
                  f"('{freq.name}') are, with its statuses: the attack recovers hidden frequencies")
    for var in meta.variables:
        if var.has("MAXSCORE", "LOWERPL", "UPPERPL", "COSTVAR", "SHADOW"):
            imported.note(f"{var.line}: '{var.name}' ({', '.join(var.attributes)}) is not mapped: a published "
                          "release carries no true values to judge or protect")
    return imported


def _count(row: dict, name: str, where: str) -> int:
    text = row[name].replace(",", ".")
    try:
        value = float(text)
    except ValueError:
        raise AuditError(f"frequency '{row[name]}' is not a number", where, "give whole numbers") from None
    if value != int(value) or value < 0:
        raise AuditError(f"frequency '{row[name]}' is not a count", where, "give whole numbers 0 or more")
    return int(value)

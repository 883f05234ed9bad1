"""A tau-Argus pre-tabulated table (``<OPENTABLEDATA>`` ``.tab``: per cell its codes, value, frequency,
top contributors, status, cost, protection levels) as a published release ``audit run --published`` attacks:
its frequencies as counts and its values as sums, with the table's pattern of statuses; its costs and
protection levels as the schedule's ``apriori``; its top contributors judged by the batch file's magnitude
rules at import (tauargus_top)."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

from ..errors import AuditError
from ..peers.codes import HIDDEN, read
from ..specs.schema_types import Column
from .tauargus_files import Batch, Metadata, hierarchy_file, read_text, scaled
from .tauargus_top import judge, tab_rules
from .written import GEOGRAPHY, UNIT, Imported
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


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
    value = None if spec.frequency else meta.variable(spec.response, spec.where)
    if value is not None and not value.numeric:
        raise AuditError(f"response '{value.name}' is not <NUMERIC> in {meta.path}", spec.where,
                         "give the .tab's numeric value variable, or <freq>")
    tops = [v for v in meta.variables if v.has("MAXSCORE")]
    cost = next((v for v in meta.variables if v.has("COSTVAR")), None)
    lower = next((v for v in meta.variables if v.has("LOWERPL")), None)
    upper = next((v for v in meta.variables if v.has("UPPERPL")), None)
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
    table = {"id": "T1", "title": " x ".join(spec.explanatory) + ": frequencies", "by": by, "margins": True}
    rules = tab_rules(spec, len(tops), imported, str(batch.path))
    rules = rules if value is not None else []
    out = {GEOGRAPHY: [], "table": [], "cell": [], "statistic": [], "value": [], "status": []}
    sums, verdicts, apriori = [], [], {}
    for row, where in rows:
        hidden = read(row[status.name], "tab", where) in HIDDEN
        key = ",".join("*" if row[v.name] == v.total else row[v.name] for v in explanatory)
        count = _count(row, freq.name, where)
        _publish(out, key, "count", "(D)" if hidden else str(count), hidden)
        if value is not None:
            total = scaled(row[value.name], value.name, value.decimals, where)
            top = [scaled(row[v.name], v.name, value.decimals, where) for v in tops]
            sums.append((key, total, hidden, max(top, default=abs(total)), count, top if tops else None))
            why = judge(rules, total, count, top) if rules else None
            if why:
                verdicts.append((f"T1:{key}", why, hidden, row[status.name], where))
        scale = 10 ** value.decimals if value is not None else 1  # levels in the units of the sum imported
        for var, part, times in ((cost, "cost", 1), (lower, "levels", scale), (upper, "levels", scale)):
            if var is not None:
                number = _number(row, var.name, where) * times
                if number < 0:
                    raise AuditError(f"'{var.name}' is {row[var.name]}, below 0", where,
                                     "give costs and protection levels 0 or more")
                number = int(number) if number.denominator == 1 else float(number)
                given = apriori.setdefault(part, {})
                given[f"T1:{key}"] = number if part == "cost" else [*given.get(f"T1:{key}", []), number]
    if value is not None:
        _sums(value, sums, table, columns, imported, out)
    if rules:
        _verdicts(verdicts, rules, imported)
    imported.schema["columns"] = columns
    if hierarchies:
        imported.schema["hierarchies"] = hierarchies
    imported.tables["tables"] = [table]
    if lower is None or upper is None:
        apriori.pop("levels", None)
    if apriori:
        imported.tables["apriori"] = {UNIT: apriori}
    hide = [k for k, _, hidden, _, _ in verdicts if hidden]
    if hide:
        imported.tables["suppress"] = {UNIT: hide}
    imported.release = pd.DataFrame(out)
    if value is None:
        imported.note(f"{spec.where}: a <freq> table: its frequencies ('{freq.name}') are imported with its "
                      "statuses", True)
    for var in meta.variables:
        if var.has("SHADOW"):
            imported.note(f"{var.line}: the shadow variable '{var.name}' is not mapped: the rules are judged on the "
                          "top contributors given")
    if tops and not rules:
        imported.note(f"{spec.where}: the top contributors ({', '.join(v.name for v in tops)}) are not judged: "
                      + ("a <freq> table has no values" if value is None
                         else "no magnitude rule (NK or P in <SAFETYRULE>) they can decide"))
    if (lower is None) != (upper is None):
        imported.note(f"{meta.path}: only one of <LOWERPL> and <UPPERPL> is declared: protection levels are not mapped")
    return imported


def _publish(out: dict, key: str, statistic: str, text: str, hidden: bool) -> None:
    for column, item in ((GEOGRAPHY, UNIT), ("table", "T1"), ("cell", key), ("statistic", statistic),
                         ("value", text), ("status", "suppressed" if hidden else "published")):
        out[column].append(item)


def _sums(var, sums: list, table: dict, columns: dict, imported: Imported, out: dict) -> None:
    """Publish the cell values as ``sum(var)`` (in units of its last decimal) beside the counts, the column's
    range from the values and the largest contributions; not when that range is too wide for a column."""
    lo = min(0, *(s[1] for s in sums))
    hi = max(0, *(s[3] for s in sums))
    try:
        Column.integer(var.name, lo, hi)
    except AuditError:
        imported.note(f"{var.line}: the values of '{var.name}' ({lo}..{hi}) span more than an integer column holds: "
                      "not imported")
        return
    columns[var.name] = {"type": "integer", "min": lo, "max": hi}
    table["title"] = table["title"].replace("frequencies", f"frequencies and {var.name}")
    table["stats"] = ["count", f"sum({var.name})"]
    given = any(s[5] is not None for s in sums)
    if given:  # the published sums' top contributors, for audit run's magnitude rules
        out["contributors"], out["top"] = [""] * len(out["cell"]), [""] * len(out["cell"])
    for key, total, hidden, _, count, top in sums:
        _publish(out, key, f"sum({var.name})", "(D)" if hidden else str(total), hidden)
        if given:
            out["contributors"].append("" if hidden else str(count))
            out["top"].append("" if hidden else " ".join(str(x) for x in top))
    if var.decimals:
        imported.note(f"{var.line}: '{var.name}' has {var.decimals} decimals: imported in units of "
                      f"1/{10 ** var.decimals}", True)
    imported.note(f"{var.line}: the range of '{var.name}' ({lo}..{hi}) is from the cell values and largest "
                  "contributions; widen min and max in schema.yaml to what an attacker may assume", True)


def _verdicts(verdicts: list, rules: list, imported: Imported) -> None:
    """Report the cells the magnitude rules make sensitive: hidden ones become the schedule's primary
    suppressions; published ones are disclosures tau-Argus's pattern leaves."""
    named = ", ".join(f"{r} {s}" for r, s in rules)
    hidden = [k for k, _, h, _, _ in verdicts if h]
    imported.note(f"{len(verdicts)} cells are sensitive under {named} by their top contributors; the {len(hidden)} "
                  "the .tab hides are the schedule's suppress list (primary)", True)
    for key, why, was_hidden, code, where in verdicts:
        if not was_hidden:
            imported.note(f"{where}: {key} is sensitive ({why}) yet the .tab publishes it (status {code})", True)


def _number(row: dict, name: str, where: str) -> Fraction:
    try:
        return Fraction(row[name].replace(",", "."))
    except (ValueError, ZeroDivisionError):
        raise AuditError(f"'{name}' is '{row[name]}', not a number", where, "give numbers (a decimal point or comma)"
                         ) from None


def _count(row: dict, name: str, where: str) -> int:
    value = _number(row, name, where)
    if value.denominator != 1 or value < 0:
        raise AuditError(f"frequency '{row[name]}' is not a count", where, "give whole numbers 0 or more")
    return int(value)

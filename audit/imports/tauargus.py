"""A tau-Argus batch file (``.arb``) with its metadata (``.rda``), microdata (``.asc`` fixed width or free
format) and a-priori files (``.hst``) as our schema, table schedule and policy: what its safety rules
say, mapped as far as our rules reach, and a note for each thing that is not."""
from __future__ import annotations

from pathlib import Path

from ..errors import AuditError
from ..specs.schema_types import Column
from .tauargus_files import (Metadata, TableSpec, Variable, beside, hierarchy_file, read_arb, read_hst, read_rda,
                             read_text, scaled)
from .tauargus_rules import policy, table_rules
from .written import GEOGRAPHY, UNIT, Imported, default_rules, hierarchy
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def import_batch(arb: Path) -> Imported:
    """Everything a batch file specifies, as our documents (see the module docstring)."""
    batch = read_arb(Path(arb))
    meta = read_rda(batch.metadata)
    if batch.tabledata is not None:
        from .tauargus_tab import import_tab

        return import_tab(batch, meta)
    frame = read_microdata(batch.microdata, meta)
    imported = Imported({"unit": "record", "geography": [GEOGRAPHY], "columns": {}}, {"tables": []},
                        default_rules(), sources=(batch.path, batch.metadata, batch.microdata))
    columns, hierarchies, tables, data = {}, {}, [], {GEOGRAPHY: [UNIT] * len(frame)}
    by_codes: dict[str, set] = {}
    wanted: list[dict] = []
    for i, spec in enumerate(batch.tables, 1):
        by = []
        for name in spec.explanatory:
            var = meta.variable(name, spec.where)
            if not var.explanatory:
                raise AuditError(f"'{var.name}' is not an explanatory variable (<RECODEABLE>) in {meta.path}",
                                 spec.where, "cross the table by explanatory variables only")
            if var.name not in columns:
                columns[var.name], data[var.name], tree, spec_h = _categorical(var, frame[var.name], meta, imported)
                if spec_h:
                    hierarchies[f"{var.name}_h"] = spec_h
                by_codes[var.name] = set(columns[var.name]["values"]) | set(tree)
            by.append(f"{var.name}_h" if f"{var.name}_h" in hierarchies else var.name)
        table = {"id": f"T{i}", "title": " x ".join(spec.explanatory) + (
            "" if spec.frequency else f": {spec.response}"), "by": by, "margins": True}
        if not spec.frequency:
            var = meta.variable(spec.response, spec.where)
            if not var.numeric:
                raise AuditError(f"response '{var.name}' is not <NUMERIC> in {meta.path}", spec.where,
                                 "give a numeric response, or <freq> for a frequency table")
            if var.name not in columns:
                column = _integer(var, frame[var.name], imported)
                if column is None:
                    imported.note(f"{spec.where}: table {i} ({table['title']}) is not imported: its response "
                                  f"'{var.name}' spans more values than an integer column holds")
                    continue
                columns[var.name], data[var.name] = column
            table["stats"] = [f"sum({var.name})"]
        if spec.shadow and spec.shadow.lower() != spec.response.lower():
            imported.note(f"{spec.where}: the shadow variable '{spec.shadow}' is not mapped: the rules are applied "
                          "to the response")
        if spec.cost:
            imported.note(f"{spec.where}: the cost function '{spec.cost}' is not mapped: use audit protect --cost "
                          "(cells, persons or values), or per-cell costs in the schedule's apriori")
        tables.append(table)
        wanted.append(table_rules(spec, table, imported))
        apriori(spec, table, meta, by_codes, imported)
    if not tables:
        raise AuditError(f"no table could be imported ({imported.notes[-1]})", str(batch.path),
                         "coarsen the response (e.g. in thousands, with fewer <DECIMALS>) or add a <freq> table")
    for var in meta.variables:
        if var.has("WEIGHT"):
            imported.note(f"{var.line}: the weight '{var.name}' is not mapped: tables are unweighted counts and sums")
        if var.has("HOLDING"):
            imported.note(f"{var.line}: the holding variable '{var.name}' is not mapped; to group contributions "
                          f"by it, add 'contributor: {var.name}' to schema.yaml and the column to data.csv")
    for command, where in batch.other:
        if command == "<SUPPRESS>":
            imported.note(f"{where}: <SUPPRESS> is not mapped: audit protect chooses the secondary cells")
        elif command not in ("<READMICRODATA>", "<READTABLE>", "<WRITETABLE>", "<GOINTERACTIVE>", "<LOGBOOK>"):
            imported.note(f"{where}: {command} is not mapped")
    imported.schema["columns"] = columns
    if hierarchies:
        imported.schema["hierarchies"] = hierarchies
    imported.tables["tables"] = tables
    imported.data = pd.DataFrame(data)
    policy(wanted, imported)
    imported.rules["name"] = f"tauargus-{batch.path.stem}"
    imported.rules["description"] = f"The safety rules of {batch.path.name}, as far as our rules reach."
    return imported


def read_microdata(path: Path, meta: Metadata) -> pd.DataFrame:
    """The records, every field a string with surrounding spaces removed: fixed width (an ``.asc`` file) as
    the metadata places each variable, or split at the metadata's ``<SEPARATOR>``."""
    lines = read_text(path, "microdata file")
    rows = []
    for number, line in enumerate(lines, 1):
        if not line.strip() or meta.names_in_front and number == 1:
            continue
        if meta.separator is None:
            row = [line[v.start - 1: v.start - 1 + v.length].strip() for v in meta.variables]
            if len(line.rstrip("\r")) < max(v.start - 1 + v.length for v in meta.variables):
                last = max(meta.variables, key=lambda v: v.start + v.length)
                raise AuditError(f"the record is {len(line)} characters; '{last.name}' ends at column "
                                 f"{last.start + last.length - 1}", f"{path}:{number}",
                                 f"check the positions in {meta.path}, or that the file is fixed width")
        else:
            row = [f.strip().strip('"').strip() for f in line.split(meta.separator)]
            if len(row) != len(meta.variables):
                raise AuditError(f"{len(row)} fields split at '{meta.separator}', the metadata lists "
                                 f"{len(meta.variables)} variables", f"{path}:{number}",
                                 f"give one field per variable of {meta.path}, in its order")
        rows.append(row)
    if not rows:
        raise AuditError("no records", str(path), "give the microdata, one record a line")
    frame = pd.DataFrame(rows, columns=[v.name for v in meta.variables])
    frame.attrs["path"] = str(path)
    return frame


def _categorical(var: Variable, values: pd.Series, meta: Metadata, imported: Imported) -> tuple:
    """A categorical column of the schema, its data, its hierarchy's nodes (node -> codes; empty when flat) and
    the schema's entry for it (None when flat)."""
    empty = values.index[values == ""]
    if len(empty):
        raise AuditError(f"'{var.name}' is empty", f"{values.attrs.get('path', 'microdata')} record {empty[0] + 1}",
                         "give every record a code (tau-Argus reads blanks as a code: write it, e.g. 0)")
    codes = sorted(set(values))
    labels = {}
    if var.has("CODELIST"):
        labels = _codelist(beside(meta.path.parent, var.attributes["CODELIST"][0]), imported)
    tree: dict[str, list[str]] = {}
    hrc = None
    if var.has("HIERCODELIST"):
        tree, listed, hrc = hierarchy_file(var, meta.path.parent)
        leaves = [c for c in listed if c not in tree]
        stray = [c for c in codes if c not in leaves]
        if stray:
            raise AuditError(f"code '{stray[0]}' of '{var.name}' is in the data but not in the hierarchy"
                             + (f" (and {len(stray) - 1} more)" if len(stray) > 1 else ""), hrc["hrc"],
                             f"add '{stray[0]}' to {Path(hrc['hrc']).name}")
        codes = sorted(set(codes) | set(leaves))
    elif var.has("HIERLEVELS"):
        tree = hierarchy(_levels(var, codes), codes)
        hrc = {"from": var.name, "children": tree} if tree else None
    leaf_codes = [c for c in codes if c not in tree]
    column = {"type": "categorical", "values": {c: labels.get(c, c) for c in leaf_codes}}
    return column, list(values), tree, hrc


def _levels(var: Variable, codes: list[str]) -> dict[str, list[str]]:
    """A digit hierarchy (``<HIERLEVELS> 3 1 1 0 0``): each level's codes are the first 3, 4, ... characters."""
    widths = [int(w) for w in var.attributes["HIERLEVELS"] if w != "0"]
    ends = [sum(widths[:k + 1]) for k in range(len(widths))]
    bad = [c for c in codes if len(c) != ends[-1]]
    if bad:
        raise AuditError(f"code '{bad[0]}' of '{var.name}' has {len(bad[0])} characters, <HIERLEVELS> "
                         f"{' '.join(var.attributes['HIERLEVELS'])} makes {ends[-1]}", var.line,
                         "give every code the full length (leading zeros) or correct <HIERLEVELS>")
    tree: dict[str, list[str]] = {}
    for code in codes:
        for a, b in zip(ends, ends[1:]):
            kids = tree.setdefault(code[:a], [])
            child = code[:b]
            if child not in kids:
                kids.append(child)
    return tree


def _codelist(path: Path, imported: Imported) -> dict[str, str]:
    """A tau-Argus code list (``.cdl``): ``code,label`` a line."""
    if not path.is_file():
        imported.note(f"{path}: code list not found; codes are shown without labels")
        return {}
    out = {}
    for line in read_text(path, ".cdl code list"):
        code, _, label = line.partition(",")
        if code.strip():
            out[code.strip()] = label.strip().strip('"') or code.strip()
    return out


def _integer(var: Variable, values: pd.Series, imported: Imported) -> tuple[dict, list] | None:
    """An integer column (the response in units of its last decimal), or None when its range is too wide."""
    scale = 10 ** var.decimals
    out = [scaled(text, var.name, var.decimals, f"{values.attrs.get('path', 'microdata')} record {row + 1}")
           for row, text in enumerate(values)]
    lo, hi = min(out), max(out)
    try:
        Column.integer(var.name, lo, hi)
    except AuditError:
        return None
    if scale > 1:
        imported.note(f"{var.line}: '{var.name}' has {var.decimals} decimals: imported in units of 1/{scale}", True)
    imported.note(f"{var.line}: the range of '{var.name}' ({lo}..{hi}) is the data's; widen min and max in "
                  "schema.yaml to what an attacker may assume", True)
    return {"type": "integer", "min": lo, "max": hi}, out


def apriori(spec: TableSpec, table: dict, meta: Metadata, by_codes: dict[str, set], imported: Imported) -> None:
    """The table's ``.hst`` lines as the schedule's a-priori knowledge: U, M and ML hide a cell (``suppress``),
    P publishes it (``apriori.publish``), C and W set its cost, PL its protection levels."""
    variables = [meta.variable(n, spec.where) for n in spec.explanatory]
    for path, separator, where in spec.apriori:
        for line in read_hst(path, separator, len(variables)):
            cell = []
            for var, code in zip(variables, line.codes):
                if code == var.total or code == "":
                    cell.append("*")
                elif code in by_codes[var.name]:
                    cell.append(code)
                else:
                    raise AuditError(f"'{code}' is not a code of '{var.name}' (nor its total '{var.total}')",
                                     line.where, f"use one of {sorted(by_codes[var.name])[:12]}")
            key = f"{table['id']}:{','.join(cell)}"
            unit = imported.tables.setdefault("apriori", {}).setdefault(UNIT, {})
            if line.command in ("U", "M", "ML"):
                if key in unit.get("publish", []):
                    raise AuditError(f"{key} is protected (p) by an earlier line and hidden here", line.where,
                                     "give the cell one status")
                hidden = imported.tables.setdefault("suppress", {}).setdefault(UNIT, [])
                if key not in hidden:
                    hidden.append(key)
            elif line.command == "P":
                if key in imported.tables.get("suppress", {}).get(UNIT, []):
                    raise AuditError(f"{key} is hidden by an earlier line and protected (p) here", line.where,
                                     "give the cell one status")
                unit.setdefault("publish", []).append(key)
            elif line.command in ("C", "W"):
                unit.setdefault("cost", {})[key] = line.values[0]
            elif line.command == "PL":
                unit.setdefault("levels", {})[key] = list(line.values)
            else:
                imported.note(f"{line.where}: '{line.command}' is not mapped ("
                              + ("our rules decide which cells are safe)" if line.command == "S"
                                 else "a-priori bounds: tau-Argus refuses them too)"))
            if not unit:
                del imported.tables["apriori"][UNIT]
        if not imported.tables.get("apriori"):
            imported.tables.pop("apriori", None)

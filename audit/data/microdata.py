"""Load confidential microdata (CSV or Parquet) and check every row against the schema."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from ..errors import AuditError
from ..paths import check_lines, input_file
from ..specs.schema_types import Schema
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def read_table(path: str | Path, delimiter: str = ",") -> pd.DataFrame:
    """Read CSV (fields split at ``delimiter``, spaces after it skipped) or Parquet as strings (missing values
    kept missing), naming the file in any error."""
    path = Path(path)
    if not path.exists():
        raise AuditError("file not found", str(path), "check the path")
    if path.is_dir():
        raise AuditError("is a folder, not a data file", str(path), "give the path of a CSV or Parquet file")
    input_file(path, "data")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = as_strings(pd.read_parquet(path))
        else:
            check_header(csv_header(path, delimiter), str(path))
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, **csv_options(delimiter))
    except ImportError:
        raise AuditError("reading Parquet needs pyarrow", str(path), "pip install 'disclosure-audit[parquet]'") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise AuditError(f"cannot read the table: {str(exc).splitlines()[0]}", str(path),
                         "give a CSV (UTF-8, with a header row) or a Parquet file") from None
    check_header(list(frame.columns), str(path))
    return frame


def as_strings(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns of a Parquet frame as str, missing values left missing (not the text 'None')."""
    text = [c for c in frame.columns if frame[c].dtype == object]
    return frame.astype({c: str for c in text}).where(frame.notna()) if text else frame


def csv_options(delimiter: str = ",") -> dict:
    """How every CSV of microdata is split: at ``delimiter``, with the spaces after it skipped (UCI Adult's
    ", " separator would otherwise name a column " workclass")."""
    return {"sep": delimiter, "skipinitialspace": True}


def csv_header(path: Path, delimiter: str = ",") -> list[str]:
    """The header row of a CSV file that is a regular file with no line past :data:`~audit.paths.MAX_LINE`."""
    check_lines(input_file(path, "data"))
    with open(path, newline="", encoding="utf-8-sig") as handle:
        header = next(csv.reader(handle, delimiter=delimiter, skipinitialspace=True), None)
    if header is None:
        raise AuditError("the file is empty", str(path), "give a CSV with a header row and one row per record")
    return header


def check_header(columns: list, name: str) -> None:
    """Refuse a header that names a column twice (pandas would rename the second one silently)."""
    seen: dict = {}
    for i, col in enumerate(columns):
        if col in seen:
            raise AuditError(f"column '{col}' appears twice in the header (columns {seen[col] + 1} and {i + 1})",
                             name, "rename or remove one of them")
        seen[col] = i


def _separator_fix(header: list, schema: Schema) -> str:
    """The fix for missing columns: a header read as one column names the separator it holds."""
    if len(header) == 1:
        found = next((sep for sep in (";", "\t", "|", ",") if sep in str(header[0]) and sep != schema.delimiter), None)
        if found == ",":
            return (f"the header looks separated by ',': remove 'delimiter: ...' from {schema.source} "
                    "(',' is the default)")
        if found:
            shown = "tab" if found == "\t" else f"'{found}'"
            return f"the header looks separated by {shown}: add \"delimiter: {shown}\" to {schema.source}"
    return "rename the columns to the schema's names or fix the schema"


def no_rows(name: str) -> AuditError:
    """The error for a data file with a header and no rows: there is nothing to audit, so nothing passes."""
    return AuditError("the data has no rows", name,
                      "give the microdata with one row per record; an empty release has nothing to audit")


def load_microdata(path: str | Path, schema: Schema) -> pd.DataFrame:
    """Return the rows with geography as strings, categorical codes as strings and integers as ints."""
    return validate(read_table(path, schema.delimiter), schema, str(path))


def validate(frame: pd.DataFrame, schema: Schema, name: str = "<data>") -> pd.DataFrame:
    """Check columns and domains; the error names the first bad row (1-based data row and file line)."""
    needed = (list(schema.geography) + [c.name for c in schema.columns if not c.source]
              + ([schema.contributor] if schema.contributor else []))
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise AuditError(f"missing column(s) {missing}; the file has {list(frame.columns)}", name,
                         _separator_fix(list(frame.columns), schema))
    if not len(frame):
        raise no_rows(name)
    out = pd.DataFrame(index=range(len(frame)))
    for geo in schema.geography:
        raw = frame[geo]
        blank = (raw.isna() | (raw.astype(str).str.strip() == "")).to_numpy()
        if blank.any():
            row = int(np.flatnonzero(blank)[0])
            raise AuditError(f"row {row + 1} (line {row + 2}): the geography column {geo} is empty", name,
                             f"give every row its {geo} code" + (f" ({int(blank.sum())} rows affected)"
                                                                 if blank.sum() > 1 else ""))
        out[geo] = raw.astype(str).to_numpy()
    if schema.contributor:  # ids only group a contributor's rows for the magnitude rules; any text will do
        out[schema.contributor] = frame[schema.contributor].astype(str).to_numpy()
    for col in schema.columns:
        if col.source:  # a bracket of a wide column: computed from it below, never read
            continue
        raw = frame[col.name]
        if col.kind == "integer":
            values = pd.to_numeric(raw, errors="coerce")
            bad = values.isna() | (values != values.round()) | (values < col.codes[0]) | (values > col.codes[-1])
            expect = f"an integer {col.codes[0]}..{col.codes[-1]}"
        else:
            values = raw.astype(str).str.strip()
            bad = ~values.isin(list(col.codes))
            expect = f"one of {list(col.codes)}"
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise AuditError(f"row {row + 1} (line {row + 2}): {col.name} = {raw.iloc[row]!r} is not in the schema; "
                             f"expected {expect}", name,
                             f"correct the value, or widen '{col.name}' in {schema.source}"
                             + (f" ({int(bad.sum())} rows affected)" if bad.sum() > 1 else ""))
        out[col.name] = values.astype(int).to_numpy() if col.kind == "integer" else values.to_numpy()
    for col in schema.columns:
        if col.source:
            out[col.name] = col.bracket(out[col.source].to_numpy())
    _check_edits(out, schema, name)
    return out


def _check_edits(frame: pd.DataFrame, schema: Schema, name: str) -> None:
    """A row that an edit forbids would make the attack reason from a false premise: refuse it, naming the row."""
    for i, edit in enumerate(schema.edits):
        hit = edit.forbid.mask(frame)
        if hit.any():
            row = int(np.flatnonzero(hit)[0])
            values = ", ".join(f"{c} = {frame[c].iloc[row:row + 1].tolist()[0]!r}" for c in edit.forbid.columns)
            raise AuditError(f"row {row + 1} (line {row + 2}): {values} breaks the schema's edit "
                             f"'{edit.label or edit.forbid.as_dict()}'", name,
                             f"correct the row, or the edit constraints[{i}] in {schema.source}"
                             + (f" ({int(hit.sum())} rows affected)" if hit.sum() > 1 else ""))

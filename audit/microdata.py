"""Load confidential microdata (CSV or Parquet) and check every row against the schema."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .errors import AuditError
from .schema import Schema


def read_table(path: str | Path) -> pd.DataFrame:
    """Read CSV or Parquet as strings, naming the file in any error."""
    path = Path(path)
    if not path.exists():
        raise AuditError("file not found", str(path), "check the path")
    try:
        if path.suffix.lower() in (".parquet", ".pq"):
            frame = pd.read_parquet(path)
            return frame.astype({c: str for c in frame.columns if frame[c].dtype == object})
        return pd.read_csv(path, dtype=str, keep_default_na=False)
    except ImportError:
        raise AuditError("reading Parquet needs pyarrow", str(path), "pip install 'disclosure-audit[parquet]'") from None
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise AuditError(f"cannot read the table: {str(exc).splitlines()[0]}", str(path),
                         "give a CSV with a header row, or a Parquet file") from None


def load_microdata(path: str | Path, schema: Schema) -> pd.DataFrame:
    """Return the rows with geography as strings, categorical codes as strings and integers as ints."""
    return validate(read_table(path), schema, str(path))


def validate(frame: pd.DataFrame, schema: Schema, name: str = "<data>") -> pd.DataFrame:
    """Check columns and domains; the error names the first bad row (1-based data row and file line)."""
    needed = list(schema.geography) + list(schema.names)
    missing = [c for c in needed if c not in frame.columns]
    if missing:
        raise AuditError(f"missing column(s) {missing}; the file has {list(frame.columns)}", name,
                         "rename the columns to the schema's names or fix the schema")
    out = pd.DataFrame(index=range(len(frame)))
    for geo in schema.geography:
        out[geo] = frame[geo].astype(str).to_numpy()
    for col in schema.columns:
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
    return out

"""Streaming microdata: read a large file by geography, yielding chunks that hold whole units.

A national file does not fit in memory. CSV sorted by geography is read with pandas ``chunksize``;
Parquet (a file, or a folder of partitions) is read batch by batch with pyarrow. Rows of the last
group of a batch are carried over to the next one, so every chunk holds *whole* groups at the
``group`` geography level (the parent of the coarsest published level, so that a unit's prior rows
from its parent are complete too). Unsorted input is detected and refused with the fix.

Tabulation and problem building work on a frame, so they run per chunk; the atom domains of each
level come from the schema and schedule only (:func:`audit.problem.build.domains_for` never looks at the
data), so they are identical in every chunk.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import numpy as np

from ..errors import AuditError
from ..paths import input_file
from .microdata import as_strings, check_header, csv_header, csv_options, no_rows, validate
from ..specs.schedule import Schedule
from ..specs.schema_types import Schema
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

DEFAULT_CHUNK_ROWS = 20_000


def group_columns(schema: Schema, schedule: Schedule) -> list[str]:
    """Geography columns that define a chunk: the parent of the coarsest published level (or that level)."""
    depth = min(schema.geography.index(level) for level in schedule.levels)
    return list(schema.geography[: max(depth, 1)])


def _raw_batches(source, chunk_rows: int, columns: list[str] | None = None, delimiter: str = ","
                 ) -> Iterator[pd.DataFrame]:
    """Raw string frames from a DataFrame, a CSV file (split at ``delimiter``), or a Parquet file/folder."""
    if isinstance(source, pd.DataFrame):
        for start in range(0, len(source), chunk_rows):
            yield source.iloc[start: start + chunk_rows].reset_index(drop=True)
        return
    path = Path(source)
    if not path.exists():
        raise AuditError("file not found", str(path), "check the path")
    input_file(path, "data")
    if path.is_dir() or path.suffix.lower() in (".parquet", ".pq"):
        try:
            import pyarrow.dataset as ds
        except ImportError:
            raise AuditError("reading Parquet needs pyarrow", str(path),
                             "pip install 'disclosure-audit[parquet]'") from None
        try:
            dataset = ds.dataset(str(path), format="parquet", partitioning="hive")
            check_header(dataset.schema.names, str(path))
            for batch in dataset.to_batches(columns=columns, batch_size=chunk_rows):
                yield as_strings(batch.to_pandas())
        except (ValueError, OSError) as exc:  # pyarrow's ArrowInvalid is a ValueError
            raise AuditError(f"cannot read as Parquet: {str(exc).splitlines()[0]}", str(path),
                             "give a CSV file, a Parquet file or a folder of Parquet files only") from None
        return
    try:
        check_header(csv_header(path, delimiter), str(path))
        reader = pd.read_csv(path, dtype=str, keep_default_na=False, chunksize=chunk_rows, usecols=columns,
                             **csv_options(delimiter))
        yield from reader
    except (ValueError, OSError, pd.errors.ParserError) as exc:
        raise AuditError(f"cannot read the table: {str(exc).splitlines()[0]}", str(path),
                         "give a CSV with a header row, or a Parquet file") from None


def _keys(frame: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """One string key per row over the grouping columns (geography codes are strings)."""
    key = frame[cols[0]].astype(str).to_numpy(dtype=object)
    for c in cols[1:]:
        key = key + "\x1f" + frame[c].astype(str).to_numpy(dtype=object)
    return key


def stream_chunks(source, schema: Schema, schedule: Schedule, chunk_rows: int = DEFAULT_CHUNK_ROWS,
                  name: str | None = None) -> Iterator[pd.DataFrame]:
    """Validated frames, each holding whole groups (see :func:`group_columns`), in file order.

    The input must be sorted (grouped) by geography: a group that reappears after another one
    started is an error naming the fix.
    """
    cols = group_columns(schema, schedule)
    name = name or (str(source) if not isinstance(source, pd.DataFrame) else "<data>")
    carry: pd.DataFrame | None = None
    seen: set = set()
    offset = 0  # data rows validated so far (for error messages)
    for raw in _raw_batches(source, chunk_rows, delimiter=schema.delimiter):
        if not len(raw):
            continue
        missing = [c for c in cols if c not in raw.columns]
        if missing:
            validate(raw, schema, name)  # raises the standard missing-column error
        frame = raw if carry is None else pd.concat([carry, raw], ignore_index=True)
        keys = _keys(frame, cols)
        change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
        starts = np.concatenate([[0], change])
        for k in keys[starts[:-1]] if len(starts) > 1 else []:
            if k in seen:
                raise _unsorted(name, k, cols)
            seen.add(k)
        if keys[starts[-1]] in seen:
            raise _unsorted(name, keys[starts[-1]], cols)
        last = int(starts[-1])
        carry = frame.iloc[last:].reset_index(drop=True)
        if last:
            yield _validated(frame.iloc[:last], schema, name, offset)
            offset += last
    if carry is not None and len(carry):
        yield _validated(carry, schema, name, offset)
    elif not offset:
        raise no_rows(name)


def _unsorted(name: str, key: str, cols: list[str]) -> AuditError:
    return AuditError(f"the rows are not sorted by geography: {'/'.join(key.split(chr(31)))} "
                      f"({', '.join(cols)}) appears in two separate runs", name,
                      f"sort the file by {', '.join(cols)} (e.g. with pandas sort_values) or write "
                      "Parquet partitioned by geography")


def _validated(frame: pd.DataFrame, schema: Schema, name: str, offset: int) -> pd.DataFrame:
    try:
        return validate(frame.reset_index(drop=True), schema, name)
    except AuditError as exc:
        if offset and exc.message.startswith("row "):
            # re-number the row from the start of the file
            head, _, rest = exc.message.partition(": ")
            row = int(head.split()[1].strip()) + offset
            exc = AuditError(f"row {row} (line {row + 1}): {rest}", exc.where, exc.fix)
        raise exc from None


def count_units(source, schema: Schema, schedule: Schedule, chunk_rows: int = 1_000_000) -> dict[str, int]:
    """Units per published level, reading only the geography columns (for progress and ETA).

    The input is sorted by geography, so a level's units are its runs of equal keys: counting the
    changes keeps memory flat in the number of units.
    """
    geo = list(schema.geography)
    counts = {level: 0 for level in schedule.levels}
    last: dict[str, object] = {level: None for level in schedule.levels}
    for raw in _raw_batches(source, chunk_rows, None if isinstance(source, pd.DataFrame) else geo, schema.delimiter):
        if not len(raw):
            continue
        for level in schedule.levels:
            keys = _keys(raw, geo[: geo.index(level) + 1])
            counts[level] += int((keys[1:] != keys[:-1]).sum()) + int(keys[0] != last[level])
            last[level] = keys[-1]
    return counts

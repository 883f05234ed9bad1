"""How ``audit protect`` reads its rows: from a file sorted by geography (the order its audits sort them into), chunk
by chunk, and with ``--audit-only`` not kept at all (the audit streams the file: memory flat in the number of units);
a file not sorted is loaded whole."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..data.stream import _keys, _raw_batches, group_columns, stream_chunks
from ..errors import AuditError
from ..data.microdata import load_microdata
from ..inputs import Inputs, inputs_from
from ..specs.schedule import Schedule, load_schedule
from ..specs.schema import load_schema
from ..specs.schema_types import Schema
from ..lazy import LazyModule
from .runner import CHUNK_ROWS

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


def sorted_on_disk(path: Path, schema: Schema, schedule: Schedule, chunk_rows: int = CHUNK_ROWS) -> bool:
    """Whether the rows of the file at ``path`` are sorted by :func:`~audit.data.stream.group_columns` (as
    :meth:`~audit.scale.protect.ProtectPool.audit` sorts a loaded frame), so that streaming the file gives the
    same chunks. Reads only those columns; False for anything it cannot read (the whole load then says why)."""
    cols = group_columns(schema, schedule)
    last = None
    try:
        for raw in _raw_batches(path, chunk_rows, cols, schema.delimiter):
            if not len(raw):
                continue
            if any(c not in raw.columns for c in cols):
                return False
            keys = _keys(raw, cols)
            if last is not None and keys[0] < last:
                return False
            if len(keys) > 1 and not np.all(keys[1:] >= keys[:-1]):
                return False
            last = keys[-1]
    except AuditError:
        return False
    return True


def read_inputs(data: Path, schema: Path | None, tables: Path, rows: bool = True) -> Inputs:
    """The three inputs, the rows read from a file sorted by geography (:func:`sorted_on_disk`) chunk by chunk, each
    checked as it is read (the whole file's rows are never held as text); with ``rows`` False not even kept
    (``frame`` None: the audit reads them from ``data`` by geography, memory flat in the number of units). A file
    not sorted is loaded whole as :func:`~audit.inputs.inputs_from` does."""
    if schema is None:
        return inputs_from(data, schema, tables)
    the_schema = load_schema(schema)
    schedule = load_schedule(tables, the_schema)
    if not sorted_on_disk(Path(data), the_schema, schedule):
        frame = load_microdata(data, the_schema)
    elif rows:
        frame = pd.concat(list(stream_chunks(data, the_schema, schedule, CHUNK_ROWS, str(data))), ignore_index=True)
    else:
        frame = None
    return Inputs(the_schema, schedule, frame, str(data))

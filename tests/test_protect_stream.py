"""``audit protect`` reads a data file sorted by geography chunk by chunk (``--audit-only``: not even kept, the audit
streams the file), with the findings of the rows loaded whole; an unsorted file is loaded whole."""
from __future__ import annotations

import json

import pandas as pd

from audit.attacks.exact import ExactOptions
from audit.inputs import load_inputs
from audit.protection.protect import audit_pattern
from audit.scale.protect import ProtectPool
from audit.scale.source import read_inputs, sorted_on_disk
from test_protect_scale import _two_tracts


def _timeless(value):
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if "seconds" not in k and k not in ("parts", "created")}
    return [_timeless(v) for v in value] if isinstance(value, list) else value


def test_audit_only_streams_a_sorted_file_with_the_findings_of_the_rows_loaded(tmp_path):
    loaded, rules = _two_tracts(tmp_path)
    files = [tmp_path / n for n in ("data.csv", "schema.yaml", "tables.yaml")]
    streamed = read_inputs(*files, rows=False)
    assert streamed.frame is None and sorted_on_disk(files[0], streamed.schema, streamed.schedule)
    pd.testing.assert_frame_equal(read_inputs(*files).frame, loaded.frame)
    docs = []
    for inputs, out in ((streamed, tmp_path / "streamed"), (loaded, tmp_path / "loaded")):
        audit_pattern(inputs, ExactOptions(explain="none"), rules, out, pool=ProtectPool())
        docs.append(_timeless(json.loads((out / "findings.json").read_text())))
    assert docs[0] == docs[1] and docs[0]["summary"]["units"] == 6 and docs[0]["verdict"] == "fail"


def test_an_unsorted_file_is_loaded_whole(tmp_path):
    loaded, _ = _two_tracts(tmp_path)
    rows = pd.read_csv(tmp_path / "data.csv", dtype=str)
    rows.iloc[::-1].to_csv(tmp_path / "data.csv", index=False)  # t2 before t1
    inputs = read_inputs(tmp_path / "data.csv", tmp_path / "schema.yaml", tmp_path / "tables.yaml", rows=False)
    assert not sorted_on_disk(tmp_path / "data.csv", inputs.schema, inputs.schedule)
    assert len(inputs.frame) == len(loaded.frame) == len(load_inputs(*(tmp_path / n for n in (
        "data.csv", "schema.yaml", "tables.yaml"))).frame)

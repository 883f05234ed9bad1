"""The RAP-RANK bench's cases: the Census extract (SF1 block tables) and the Fulton ACS persons (k-way marginals).

Each case returns ``(problems, frame, geography, description)``; bench/rank.py attacks and scores them.
"""
from __future__ import annotations

import importlib.util
import itertools
import zlib
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

ROOT = Path(__file__).resolve().parents[1]
EXTRACT = "rhdf_bt_0solvar_extract.csv"
ACS = "FultonPUMS5full.csv"
# the 14 person columns of the cs208 Fulton extract (income, continuous, left out; geography: puma)
ACS_COLUMNS = ("sex", "age", "educ", "latino", "black", "asian", "married", "divorced", "uscitizen", "children",
               "disability", "militaryservice", "employed", "englishability")


def find(data: Path | None, name: str) -> Path:
    """``name`` in ``--data DIR``, else in the shared data folders."""
    cands = [data / name] if data else []
    cands += [ROOT.parent / "shared" / "data" / sub / name for sub in ("recon_replication/extract", "recon_replication/layouts", "cs208")]
    cands += [Path("/work/shared/data") / sub / name for sub in ("recon_replication/extract", "recon_replication/layouts", "cs208")]
    for c in cands:
        if c.exists():
            return c
    raise FileNotFoundError(f"{name} not found: pass --data DIR holding it")


def extract_case(data: Path | None, tracts: int, seed: int, round_to: int | None = None, keep: int | None = None):
    """Every block of ``tracts`` seeded tracts of the extract (all 28 when ``tracts`` is 0), SF1 block tables;
    ``keep``: every k-th of those blocks, about that many."""
    from audit.data.microdata import validate
    from audit.inputs import Inputs
    from audit.specs.schedule import Protection, load_schedule
    from audit.specs.schema import load_schema

    spec = importlib.util.spec_from_file_location("sf1_convert", ROOT / "samples" / "sf1" / "convert.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    schema = load_schema(ROOT / "samples" / "sf1" / "schema.yaml")
    schedule = load_schedule(ROOT / "samples" / "sf1" / "tables.yaml", schema)
    if round_to:
        rounding = Protection(round_to=round_to)
        schedule = replace(schedule, tables=tuple(replace(t, protection=rounding) for t in schedule.tables),
                           protection=rounding)
    raw = pd.read_csv(find(data, EXTRACT), dtype=str, keep_default_na=False)
    full = validate(mod.convert(raw), schema, "extract")
    tract_id = full["state"] + full["county"] + full["tract"]
    names = sorted(tract_id.unique())
    picked = names if not tracts or tracts >= len(names) else sorted(
        np.random.default_rng(seed).choice(names, size=tracts, replace=False).tolist())
    sub = full[tract_id.isin(picked)].reset_index(drop=True)
    if keep:
        key = sub["state"] + sub["county"] + sub["tract"] + sub["block"]
        every = key.drop_duplicates().tolist()
        if keep < len(every):
            step = len(every) / keep
            sub = sub[key.isin({every[int(i * step)] for i in range(keep)})].reset_index(drop=True)
    problems = Inputs(schema, schedule, sub, "extract").problems()
    return problems, full, schema, f"extract, {len(picked)} tracts"


def acs_schema_tables(frame: pd.DataFrame, way: int, folder: Path) -> tuple[Path, Path]:
    """Schema (geography ``puma``) and every ``way``-way marginal of the 14 columns, exact counts, as YAML files."""
    cols = {}
    for c in ACS_COLUMNS:
        codes = sorted(frame[c].unique().tolist())
        cols[c] = {"type": "categorical", "values": {str(v): str(v) for v in codes}}
    schema = {"unit": "person", "geography": ["puma"], "columns": cols}
    tables = {"tables": [{"id": "M" + "_".join(combo), "geography": "puma", "by": list(combo), "margins": False}
                         for combo in itertools.combinations(ACS_COLUMNS, way)]}
    (folder / "schema.yaml").write_text(yaml.safe_dump(schema, sort_keys=False))
    (folder / "tables.yaml").write_text(yaml.safe_dump(tables, sort_keys=False))
    return folder / "schema.yaml", folder / "tables.yaml"


def acs_persons(data: Path | None, pumas: int, persons: int, seed: int) -> tuple[pd.DataFrame, list[str]]:
    """``persons`` seeded persons of each of the first ``pumas`` PUMAs, the 14 columns."""
    raw = pd.read_csv(find(data, ACS), dtype=str)
    names = sorted(raw["puma"].unique())[:pumas]
    rng = np.random.default_rng(seed)
    parts = []
    for name in names:
        rows = raw[raw["puma"] == name]
        parts.append(rows.iloc[np.sort(rng.choice(len(rows), size=min(persons, len(rows)), replace=False))])
    frame = pd.concat(parts).reset_index(drop=True)[["puma", *ACS_COLUMNS]]
    return frame, names


def acs_case(data: Path | None, pumas: int, persons: int, way: int, seed: int):
    """``persons`` seeded persons of each of ``pumas`` PUMAs (one unit each), all ``way``-way marginals."""
    from audit.data.microdata import validate
    from audit.inputs import Inputs

    frame, names = acs_persons(data, pumas, persons, seed)
    schema, schedule = acs_spec(frame, way)
    frame = validate(frame, schema, "acs")
    problems = Inputs(schema, schedule, frame, "acs").problems()
    return problems, frame, schema, f"ACS Fulton, {len(names)} PUMAs x {persons} persons, all {way}-way marginals"


def acs_spec(frame: pd.DataFrame, way: int):
    """The ACS case's schema and schedule (every ``way``-way marginal, exact)."""
    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    with tempfile.TemporaryDirectory() as tmp:
        schema_path, tables_path = acs_schema_tables(frame, way, Path(tmp))
        schema = load_schema(schema_path)
        schedule = load_schedule(tables_path, schema)
    return schema, schedule


# ------------------------------------------------------------------ the paper's split (Dick et al., "Baselines")

LAYOUT = "sf1_vars_race_binaries.csv"
LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml: the SF1 schedule parses in a fraction of the time


@dataclass(frozen=True)
class PaperUnit:
    """One unit as the paper attacks it: the release of a random half ``D`` of its persons (``problem``, truth
    ``D``); the other half ``H`` is the holdout (for a tract: the tract baseline, ``prior`` its rows as a frame
    for ``init='parent'``); ``baselines`` are rankings ``((row atoms), weight)``, best first."""

    problem: object
    prior: pd.DataFrame
    baselines: dict
    u: int                      # min(unique rows of D, of H): the paper's u for every curve of the unit


def split_half(frame: pd.DataFrame, seed: int, key: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The paper's random partition of a unit's persons into ``D`` (published, attacked) and the holdout."""
    rng = np.random.default_rng([seed, zlib.crc32(key.encode())])
    perm = rng.permutation(len(frame))
    half = len(frame) // 2
    return (frame.iloc[np.sort(perm[half:])].reset_index(drop=True),
            frame.iloc[np.sort(perm[:half])].reset_index(drop=True))


def atoms_of(frame: pd.DataFrame, domains, skip: str = "") -> np.ndarray:
    """The frame's rows as atom indices of ``domains`` (the column ``skip`` left out)."""
    cols = [frame[d.name].map(d.lookup()).to_numpy(dtype=np.int64) for d in domains if d.name != skip]
    return np.column_stack(cols) if len(frame) else np.zeros((0, len(cols)), np.int64)


def with_block(parent: np.ndarray, blocks: np.ndarray, at: int, top: int) -> list[tuple[tuple, int]]:
    """The paper's strengthened coarse baseline with the block attribute: a row's weight is its count in the
    coarser geography times its block's count in ``D`` (block drawn from D's blocks, independently). Only the
    rows the first ``top`` ranks can hold (their rows among the ``top`` most frequent, ties kept)."""
    from audit.attacks.engines.rank_results import rank_rows

    xs = rank_rows(parent)
    xs = [kv for kv in xs if kv[1] >= xs[min(top, len(xs)) - 1][1]] if xs else xs
    bs = rank_rows(blocks)
    pairs = [(x[:at] + b + x[at:], fx * fb) for x, fx in xs for b, fb in bs]
    return sorted(pairs, key=lambda kv: (-kv[1], kv[0]))


def paper_unit(sub: pd.DataFrame, schema, schedule, seed: int, key: str, coarse: dict[str, pd.DataFrame],
               block: str = "") -> PaperUnit:
    """``sub`` (one unit's persons) split in half; the problem of ``D``'s release; holdout and ``coarse``
    baselines (name -> persons of a coarser geography, the unit's own left out) in the problem's atoms."""
    from audit.attacks.engines.rank_results import rank_rows
    from audit.inputs import Inputs

    d, h = split_half(sub, seed, key)
    (problem,) = Inputs(schema, schedule, d, key).problems()
    doms = problem.domains
    base = {"holdout": rank_rows(atoms_of(h, doms))}
    u = min(len(np.unique(atoms_of(d, doms), axis=0)), len(base["holdout"]))
    for name, rows in coarse.items():
        if block:
            at = problem.index(block)
            base[name] = with_block(atoms_of(rows, doms, skip=block), atoms_of(d, doms)[:, [at]], at, u)
        else:
            base[name] = rank_rows(atoms_of(rows, doms))
    return PaperUnit(problem, h, base, u)


def sf1_tract_spec(pct: pd.DataFrame | None, block_tables: Path = ROOT / "samples" / "sf1" / "tables.yaml"):
    """samples/sf1's schema and block tables at tract level (the sums of the tract's blocks' cells), with the
    tract-level PCT12 tables when ``pct`` (the layout) is given."""
    from audit.specs.schedule import load_schedule
    from audit.specs.schema import load_schema

    schema = yaml.safe_load((ROOT / "samples" / "sf1" / "schema.yaml").read_text())
    schema["geography"] = ["state", "county", "tract"]
    schema.pop("attacker", None)     # its quasi-identifiers name the block geography
    tables = [{**t, "geography": "tract"}
              for t in yaml.load(Path(block_tables).read_text(), Loader=LOADER)["tables"]]
    if pct is not None:
        spec = importlib.util.spec_from_file_location("sf1_make_tables", ROOT / "samples" / "sf1" / "make_tables.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        tables += [t for t in yaml.load(mod.make_tables(pct, {}, True), Loader=LOADER)["tables"] if t["geography"] == "tract"]
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "schema.yaml").write_text(yaml.safe_dump(schema, sort_keys=False))
        (Path(tmp) / "tables.yaml").write_text(yaml.safe_dump({"tables": tables}, sort_keys=False))
        loaded = load_schema(Path(tmp) / "schema.yaml")
        return loaded, load_schedule(Path(tmp) / "tables.yaml", loaded)


def with_block_column(schema, schedule, blocks: list[str]):
    """``block`` as a person column and every block table's cell one cell per block (``block in {b}`` added to
    its predicate): the tract's block tables, each person's block to be reconstructed. PCT12 stays tract-wide."""
    from audit.specs.query import Predicate
    from audit.specs.schema_types import Column

    column = Column("block", "categorical", tuple(blocks), {b: b for b in blocks})
    tables = []
    for t in schedule.tables:
        if not t.id.startswith("PCT"):
            cells = tuple(replace(c, id=f"{c.id}_{b}", predicate=c.predicate.conjoin(Predicate.of({"block": [b]})))
                          for b in blocks for c in t.cells)
            t = replace(t, cells=cells, lines=())
        tables.append(t)
    return replace(schema, columns=(column, *schema.columns)), replace(schedule, tables=tuple(tables))



def tract_case(data: Path | None, tracts: int, blocks: int, settings: tuple[str, ...], seed: int, pct: bool = True):
    """The paper's tract-level reconstruction on the extract: ``tracts`` seeded tracts among those whose state
    holds another tract of the extract (so a state baseline exists), each cut to ``blocks`` seeded blocks (0: all),
    its persons split in half; for each of ``settings`` (``with``, ``without`` the block attribute) a list of
    :class:`PaperUnit`. County and state baselines are the other tracts of the unit's county and state in the
    extract (28 tracts, most alone in their county)."""
    from audit.data.microdata import validate

    spec = importlib.util.spec_from_file_location("sf1_convert", ROOT / "samples" / "sf1" / "convert.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    full = mod.convert(pd.read_csv(find(data, EXTRACT), dtype=str, keep_default_na=False))
    tract_id = full["state"] + full["county"] + full["tract"]
    per_state = full.assign(t=tract_id).groupby("state")["t"].nunique()
    names = sorted(tract_id[full["state"].isin(per_state[per_state > 1].index)].unique())
    picked = sorted(np.random.default_rng(seed).choice(names, size=min(tracts, len(names)), replace=False).tolist())
    try:
        layout = pd.read_csv(find(data, LAYOUT), dtype=str, keep_default_na=False) if pct else None
    except FileNotFoundError:       # a GPU machine given --data without the layout: the block tables only
        layout = None
    base = sf1_tract_spec(layout)
    units: dict[str, list[PaperUnit]] = {s: [] for s in settings}
    for name in picked:
        sub = full[tract_id == name]
        kept = sorted(sub["block"].unique())
        if blocks and blocks < len(kept):
            kept = sorted(np.random.default_rng([seed, int(name)]).choice(kept, size=blocks, replace=False).tolist())
        sub = sub[sub["block"].isin(kept)].reset_index(drop=True)
        others = full[tract_id != name]
        state, county = sub["state"].iloc[0], sub["county"].iloc[0]
        coarse = {"county": others[(others["state"] == state) & (others["county"] == county)],
                  "state": others[others["state"] == state]}
        coarse = {k: validate(v.reset_index(drop=True), base[0], k) for k, v in coarse.items() if len(v)}
        for setting in settings:
            schema, schedule = with_block_column(*base, kept) if setting == "with" else base
            units[setting].append(paper_unit(validate(sub, schema, name), schema, schedule, seed, name, coarse,
                                             "block" if setting == "with" else ""))
    desc = {s: (f"extract, {len(picked)} tracts x {blocks or 'all'} blocks, tract-level, {s} the block attribute"
                f"{', PCT12' if layout is not None else ''}") for s in settings}
    return units, base[0].geography, desc


def acs_paper_case(data: Path | None, pumas: int, persons: int, way: int, seed: int):
    """The paper's ACS setting (Fig. 4): each PUMA's ``persons`` split in half, every ``way``-way marginal of
    ``D`` published, the holdout half the baseline."""
    from audit.data.microdata import validate

    frame, names = acs_persons(data, pumas, persons, seed)
    schema, schedule = acs_spec(frame, way)
    frame = validate(frame, schema, "acs")
    units = [paper_unit(frame[frame["puma"] == n].reset_index(drop=True), schema, schedule, seed, n, {})
             for n in names]
    return units, schema.geography, (f"ACS Fulton, {len(names)} PUMAs x {persons} persons halved, "
                                     f"all {way}-way marginals of D")


def extract_blocks(data: Path | None, blocks: int):
    """Every k-th block of the whole extract, about ``blocks`` (the same size mix as its 8,530; bench/scale.py's pick),
    under the SF1 block tables: ``(problems, whole frame, schema)``."""
    problems, full, schema, _ = extract_case(data, 0, 0, keep=blocks)
    return problems, full, schema

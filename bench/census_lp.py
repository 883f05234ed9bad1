"""The Census Bureau's reconstruction LPs: import, reconstruct from the published values, compare with the .sol.

For each ``model_*.lp.gz`` in the folder: blocks and persons, where the release's values came from,
then per unit (blocks with the block tables; the tract with block and tract tables coupled) whether
the tool proves one dataset, and how its verified full records agree with the Bureau's solution.
Times are CPU seconds (``time.process_time``) in this process.

    python bench/census_lp.py [--lp-dir ../shared/data/recon_replication/lp_tests] [--layout LAYOUT.csv]
"""
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from audit.release.census_lp import release_frame  # noqa: E402
from audit.release.census_lp_reader import read_lp  # noqa: E402
from audit.release.census_lp_solution import compare, read_solution  # noqa: E402
from audit.attacks.exact import ExactOptions  # noqa: E402
from audit.published import attack_unit, published_problems, releases_from_frame  # noqa: E402
from audit.specs.schedule import load_schedule  # noqa: E402
from audit.specs.schema import load_schema  # noqa: E402

RECON = next((p for p in (ROOT.parent / "shared" / "data" / "recon_replication",
                          Path("/work/shared/data/recon_replication")) if p.is_dir()), None)


def tract_schedule(layout: Path, folder: Path) -> Path:
    """samples/sf1/make_tables.py --tract: the block tables and PCT12, PCT12A-O."""
    spec = importlib.util.spec_from_file_location("make_tables", ROOT / "samples" / "sf1" / "make_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = folder / "tables_tract.yaml"
    module.main([str(layout), "--tract", "-o", str(out)])
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lp-dir", type=Path, default=RECON / "lp_tests" if RECON else None)
    parser.add_argument("--layout", type=Path,
                        default=RECON / "layouts" / "sf1_vars_race_binaries.csv" if RECON else None)
    parser.add_argument("--explain", default="none")
    args = parser.parse_args(argv)
    schema = load_schema(ROOT / "samples" / "sf1" / "schema.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        schedules = {"block tables": load_schedule(ROOT / "samples" / "sf1" / "tables.yaml", schema),
                     "block + tract tables": load_schedule(tract_schedule(args.layout, Path(tmp)), schema)}
    options = ExactOptions(explain=args.explain)
    for lp in sorted(args.lp_dir.glob("*.lp.gz")):
        sol = lp.with_name(lp.name.replace(".lp.gz", ".sol.gz"))
        bureau = read_solution(sol)
        for name, schedule in schedules.items():
            start = time.process_time()
            imported = release_frame(read_lp(lp), schema, schedule)
            releases, _ = releases_from_frame(imported.frame, schema, schedule, str(lp))
            read = time.process_time() - start
            print(f"{lp.name} with the {name}: {imported.notes()[0]}; read in {read:.2f} s")
            for problem in published_problems(releases, schema, schedule):
                t = time.process_time()
                result = attack_unit(problem, options)
                seconds = time.process_time() - t
                c = compare(result, bureau, schema)
                print(f"  {c['level']} {c['unit']}: {c['persons']} persons, {result.solutions} dataset(s)"
                      f"{' (exhausted)' if result.exhausted else ''}, reconstructed {c['reconstructed']}, "
                      f"{c['verified_records']} verified full records, {c['agree']} agree with the .sol"
                      f"{', differ: ' + str(c['differ']) if c['differ'] else ''}"
                      f"{', the .sol breaks: ' + ', '.join(c['breaks']) if c['breaks'] else ''}; {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())

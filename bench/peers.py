"""The peers' documented tables through our exact audit and secondary suppression, beside their figures (issue 31).

    python bench/peers.py [--tables z1 z2 simpleheuristic linked z3:100] [--cost cells]
                          [--exact-rounds 40] [--max-iterations 60] [--max-n-z3 5]
                          [--record PATH [--note TEXT]]

Tables (data and provenance in tests/data/peers/README.md; ``z3`` is the whole of SSBtools' z3
and ``z3:100,400`` its regions of those kostragr): the peer's primary rule, then our suppression under
protection levels 1 below and 1 above (``Rule("protection_levels")``, as tests/test_peers.py), the
default options otherwise. Prints per table: cells, primaries, our secondary cells, CPU seconds
(``time.process_time``, the protection alone), and the hidden cells our exact re-audit leaves revealed
(pinned at one value / narrower than the levels), beside what the peer publishes: its primaries and
secondaries, its time where recorded, and our exact audit of its own pattern where it is published.
R is not installed here, so GaussSuppression is not run side by side: its figures are its
documentation's (z1, z2), its test's (z1) or issue 31's (z2, z3 times; z3's 155 secondary cells,
which its tests assert only as a sum of row indices).

``peer_tables()`` lists the tables (name, peer, data file, rule, documented figures, how to build the
data, schema and schedule into a folder): bench and other scripts import it.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "bench")]

import pandas as pd  # noqa: E402
import record  # noqa: E402

from audit.attacks.exact import ExactOptions  # noqa: E402
from audit.policy.rules import Rule, Rules  # noqa: E402
from audit.protection.options import Policy, ProtectOptions  # noqa: E402
from audit.protection.secondary import suppress_unit, too_narrow  # noqa: E402
from test_peers import (GAUSS_SUPPRESSED, LEVELS, PEERS, _cross_table, _gauss_key, _intervals, counts_of,  # noqa: E402
                        linked_context, suppressed_context, z2_context, z2_documented, z3_context)


@dataclass(frozen=True)
class PeerTable:
    """One peer table: how to publish it, and what the peer documents about it.

    ``setup(folder)`` writes data.csv, schema.yaml and tables.yaml (the primaries suppressed, block
    ``b1``) into ``folder`` and returns the unit's context, the primary cells and every count.
    ``pattern()`` is the peer's own hidden cells as our keys, where published.
    """

    name: str
    peer: str
    data: Path
    rule: str
    source: str
    setup: Callable = field(repr=False)
    primary: int | None = None
    secondary: int | None = None
    seconds: float | None = None
    pattern: Callable[[], list[str]] | None = field(default=None, repr=False)


def _counted(folder: Path, primary: list[str]):
    """The unit with ``primary`` suppressed, those cells and every count (read with none suppressed)."""
    counts = counts_of(suppressed_context(folder, []))
    return suppressed_context(folder, primary), primary, counts


def _z1(folder: Path):
    table = pd.read_csv(PEERS / "gausssuppression_z1.csv")
    return _counted(folder, _cross_table(folder, table, ("region", "hovedint"), "ant", table["ant"] <= 3)[1])


def _simpleheuristic(folder: Path):
    table = pd.read_csv(PEERS / "sdctable_simpleheuristic.csv")
    return _counted(folder, _cross_table(folder, table, ("v1", "v2"), "freq", table["primary"] == 1)[1])


def _linked(folder: Path):
    return _counted(folder, linked_context(folder)[1])


def _z2_pattern() -> list[str]:
    doc = z2_documented()
    return sorted(doc.loc[doc["suppressed"] == 1, "key"])


def _z3(kostragr: tuple[str, ...] | None, max_n: int):
    return lambda folder: z3_context(folder, kostragr, max_n)


def peer_tables(z3_parts: tuple[tuple[str, ...] | None, ...] = (("100",), None), max_n_z3: int = 5) -> list[PeerTable]:
    """The peer tables, the whole of z3 and its kostragr parts as asked (``None``: the whole)."""
    tables = [
        PeerTable("z1", "GaussSuppression", PEERS / "gausssuppression_z1.csv", "maxN 3",
                  "test-GaussSuppressionFromData.R: rows 12, 13, 22, 23, 42, 43 suppressed", _z1, 3, 3,
                  pattern=lambda: [_gauss_key(i) for i in GAUSS_SUPPRESSED]),
        PeerTable("z2", "GaussSuppression", PEERS / "gausssuppression_z2.csv", "maxN 3, protectZeros FALSE",
                  "GaussSuppressionFromData's documented example (reference/GaussSuppressionFromData.md); "
                  "0.07 s in issue 31", z2_context, 9, 15, 0.07, pattern=_z2_pattern),
        PeerTable("simpleheuristic", "sdcTable", PEERS / "sdctable_simpleheuristic.csv", "the test's 9 primaries",
                  "test-simpleheuristic.R: SIMPLEHEURISTIC with attacker problems adds x|b", _simpleheuristic, 9, 1,
                  pattern=lambda: ["T:x,b"]),
        PeerTable("linked", "sdcTable", PEERS / "sdctable_linked.csv", "maxN 3, both tables",
                  "test-linked-tables.r: protectLinkedTables() adds N in both tables", _linked, 10, 2,
                  pattern=lambda: ["A:N", "B:N"]),
    ]
    for part in z3_parts:
        name = "z3" if part is None else "z3:" + ",".join(part)
        whole = part is None and max_n_z3 == 5
        tables.append(PeerTable(name, "GaussSuppression", PEERS / "gausssuppression_z3.csv",
                                f"maxN {max_n_z3}, zeros primary",
                                "test-GaussSuppressionFromData.R (pattern only as sum(which(suppressed)) == 599685); "
                                "621 + 155 cells, 0.77 s in issue 31" if whole else "no published pattern",
                                _z3(part, max_n_z3), 621 if whole else None, 155 if whole else None,
                                0.77 if whole else None))
    return tables


def revealed(ctx, hidden) -> tuple[int, int]:
    """Hidden cells the exact integer intervals pin at one value, and those narrower than the levels."""
    got = _intervals(ctx, hidden)
    return sum(iv.lo == iv.hi for iv in got.values()), len({k for k, *_ in too_narrow(got, LEVELS)})


def measure(table: PeerTable, options: ProtectOptions, folder: Path | None = None,
            audited: Callable[[dict], None] | None = None) -> dict:
    """Our figures for one table: cells, primaries, our secondary cells, CPU seconds, what stays revealed
    (ours and, where published, the peer's pattern). ``audited`` sees the figures known before the
    protection (cells, primaries, revealed with the primaries alone)."""
    folder = folder or Path(tempfile.mkdtemp(prefix=f"peer-{table.name.replace(':', '-')}-"))
    ctx, primary, counts = table.setup(folder)
    out = {"table": table.name, "cells": len(counts), "primary": len(primary), "alone": revealed(ctx, ())}
    if audited:
        audited(out)
    rules = Rules("levels", (Rule("protection_levels", settings=LEVELS),))
    start = time.process_time()
    unit = suppress_unit(ctx, Policy.from_rules(rules), options)
    out.update(seconds=time.process_time() - start, status=unit.status, secondary=len(unit.complementary),
               minimal=unit.minimal, lower_bound=unit.lower_bound)
    out["ours"] = revealed(ctx, unit.complementary) if unit.status == "protected" else None
    if table.pattern is not None:
        theirs = sorted(set(table.pattern()) - set(primary))
        out["theirs"] = revealed(ctx, theirs)
        out["their_secondary"] = len(theirs)
    return out


def _parts(names: list[str]) -> tuple[tuple[str, ...] | None, ...]:
    return tuple(None if n == "z3" else tuple(n.split(":", 1)[1].split(",")) for n in names if n.startswith("z3"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", nargs="+", default=["z1", "z2", "simpleheuristic", "linked", "z3:100"],
                    help="names; z3 is the whole table, z3:100,400 the regions of those kostragr")
    ap.add_argument("--cost", default="cells", choices=("cells", "persons"))
    ap.add_argument("--exact-rounds", type=int, default=ProtectOptions.exact_rounds)
    ap.add_argument("--max-iterations", type=int, default=ProtectOptions.max_iterations)
    ap.add_argument("--max-n-z3", type=int, default=5)
    record.add_arguments(ap)
    args = ap.parse_args()
    names = args.tables
    options = ProtectOptions(exact=ExactOptions(explain="none"), cost=args.cost, exact_rounds=args.exact_rounds,
                             max_iterations=args.max_iterations)
    tables = [t for t in peer_tables(_parts(names), args.max_n_z3) if t.name in names]
    print("# levels 1 below and 1 above; 'revealed' = hidden cells pinned / too narrow under our exact intervals; "
          "CPU seconds of our protection")
    head = (f"{'table':<16} {'cells':>5} {'prim':>5} {'alone':>7} | {'ours: sec':>9} {'CPU s':>7} {'revealed':>8} "
            f"{'min':>4} | {'peer: prim':>10} {'sec':>4} {'s':>5} {'revealed':>8}")
    print(head)
    print("-" * len(head))
    rows = []
    for table in tables:
        r = measure(table, options, audited=lambda a: print(  # before a long protection: shown if it is stopped
            f"{table.name:<16} {a['cells']:>5} {a['primary']:>5} {'{}/{}'.format(*a['alone']):>7} | ", end="", flush=True))
        ours = "{}/{}".format(*r["ours"]) if r["ours"] else r["status"]
        theirs = "{}/{}".format(*r["theirs"]) if "theirs" in r else "-"
        print(f"{r['secondary']:>9} {r['seconds']:>7.2f} {ours:>8} {'yes' if r['minimal'] else 'no':>4} | "
              f"{table.primary or '-':>10} {table.secondary or '-':>4} "
              f"{table.seconds if table.seconds is not None else '-':>5} {theirs:>8}", flush=True)
        rows.append([table.name, table.peer, table.rule, r["cells"], r["primary"], "{}/{}".format(*r["alone"]),
                     r["secondary"], f"{r['seconds']:.2f}", ours, "yes" if r["minimal"] else "no",
                     table.primary or "-", table.secondary or "-",
                     table.seconds if table.seconds is not None else "-", theirs])
    print()
    for t in tables:
        print(f"{t.name}: {t.peer}, {t.rule}; {t.source}")
    record.write_from_args(
        ap, args, f"Secondary suppression of the peers' tables ({', '.join(names)}) beside the peers' figures",
        "peers", ["table", "peer", "primary rule", "cells", "primaries", "revealed by the primaries alone",
                  "our secondaries", "our CPU s", "ours revealed", "proved minimal", "peer's primaries",
                  "peer's secondaries", "peer's s", "peer's pattern revealed"], rows,
        "Protection levels 1 below and 1 above; 'revealed' counts hidden cells our exact intervals pin at one "
        "value / leave narrower than the levels. The peers' figures are their documentation's or tests' (R is "
        "not run here): " + "; ".join(f"{t.name}: {t.source}" for t in tables) + ".")


if __name__ == "__main__":
    main()

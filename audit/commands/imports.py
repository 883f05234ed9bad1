"""``audit import``: peers' specifications (a tau-Argus batch file, an SSBtools formula) as the schema,
table schedule and policy ``audit run`` reads."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..imports.written import Imported, write
from ..outputs.terminal import echo
from . import OutOpt

ForceOpt = Annotated[bool, typer.Option("--force", help="Replace files an earlier import wrote in --out.")]


def _report(imported: Imported, out: Path, force: bool) -> None:
    files = write(imported, out, force)
    for line in imported.notes:
        echo(line, err=True)
    echo(f"wrote {', '.join(str(f) for f in files)}", err=True)
    data = f"--published {out / 'release.csv'}" if imported.release is not None else str(out / "data.csv")
    echo(f"next: audit run {data} -s {out / 'schema.yaml'} -t {out / 'tables.yaml'}"
         + (f" -r {out / 'rules.yaml'}" if imported.rules is not None else ""), err=True)


def register(app: typer.Typer) -> None:
    group = typer.Typer(help="Read another tool's specification (tau-Argus, SSBtools formulas) as our YAML.",
                        no_args_is_help=True)
    app.add_typer(group, name="import")

    @group.command("tauargus")
    def tauargus(
        batch: Annotated[Path, typer.Argument(metavar="BATCH.arb", help="A tau-Argus batch file: <OPENMICRODATA>, "
                                              "<OPENMETADATA>, <SPECIFYTABLE>, <SAFETYRULE>, <APRIORI>.")],
        out: OutOpt = Path("imported"),
        force: ForceOpt = False,
    ) -> None:
        """Write a tau-Argus batch file's tables, safety rules and a-priori statuses as schema.yaml,
        tables.yaml, rules.yaml and data.csv; print what could not be mapped."""
        from ..imports.tauargus import import_batch

        _report(import_batch(batch), out, force)

    @group.command("formula")
    def formula(
        data: Annotated[Path, typer.Argument(help="Microdata CSV (one row per record, or with --freq one row per "
                                                  "combination and its count).")],
        formula: Annotated[str, typer.Option("--formula", "-f", help="SSBtools model formula, e.g. '~ region * sex + age'.")],
        freq: Annotated[Optional[str], typer.Option("--freq", help="Column of counts (GaussSuppression's freqVar): "
                                                    "each row stands for that many records.")] = None,
        response: Annotated[Optional[str], typer.Option("--response", help="Integer column to publish sums of "
                                                        "(numVar) besides the counts.")] = None,
        max_n: Annotated[Optional[int], typer.Option("--max-n", min=1, help="GaussSuppression's maxN: counts up to "
                                                     "it are suppressed (suppress_below maxN + 1).")] = None,
        out: OutOpt = Path("imported"),
        force: ForceOpt = False,
    ) -> None:
        """Write the tables an SSBtools formula lists (one per term no other term contains, with margins), the
        columns it names (a column that groups another, e.g. eu over geo, becomes its hierarchy), and the data."""
        from ..imports.formula import import_formula

        _report(import_formula(data, formula, freq=freq, response=response, max_n=max_n), out, force)

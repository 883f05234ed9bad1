"""``audit rank``: RAP-RANK confidence-ranked reconstruction, scored against baselines (needs the ``rank`` extra)."""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ..attacks.engines.rank_options import RankOptions, resolve_device
from ..attacks.extras import RANK_WRITES, write_ranking
from ..findings.provenance import fingerprint
from ..outputs.terminal import echo
from . import DataArg, GeographyOpt, InferOpt, OutOpt, QuietOpt, SchemaOpt, SeedOpt, TablesOpt, inputs_from, output_folder


def register(app: typer.Typer) -> None:
    @app.command()
    def rank(
        data: DataArg,
        tables: TablesOpt,
        schema: SchemaOpt = None,
        runs: Annotated[int, typer.Option("--runs", "-k", min=1, help="Independent randomized runs K; rows are ranked by how often they appear.")] = 16,
        steps: Annotated[int, typer.Option("--steps", min=0, help="Adam steps per run.")] = 300,
        init: Annotated[str, typer.Option("--init", help="Start: uniform (random dataset) or parent (rows sampled from the parent geography).")] = "uniform",
        device: Annotated[str, typer.Option("--device", help="auto (GPU when PyTorch sees one), cpu or cuda.")] = "auto",
        lr: Annotated[float, typer.Option("--lr", min=0, help="Adam learning rate on the logits.")] = 0.1,
        top: Annotated[Optional[int], typer.Option("--top", min=1, help="Keep only the top N ranked rows per unit in rank.json (default: all).")] = None,
        seed: SeedOpt = 0,
        out: OutOpt = Path("audit-rank"),
        infer_schema: InferOpt = False,
        geography: GeographyOpt = None,
        quiet: QuietOpt = False,
    ) -> None:
        """Rank reconstructed rows by confidence (RAP-RANK) and score them against holdout and parent baselines."""
        options = RankOptions(runs=runs, steps=steps, lr=lr, init=init, device=device, seed=seed)
        output_folder(out, inputs={"DATA": data, "--schema": schema, "--tables": tables}, writes=RANK_WRITES)
        resolve_device(device)                      # needs torch: fails early with the install hint
        inputs = inputs_from(data, schema, tables, infer_schema, geography)
        doc, results = write_ranking(inputs, options, out, top, fingerprint(data, schema, tables))
        if not quiet:
            pooled = doc["pooled"]
            xs = pooled["k_over_u"]
            at = {x: i for i, x in enumerate(xs)}
            show = [x for x in (0.1, 0.25, 0.5, 1.0) if x in at]
            def fmt(curve):
                return " ".join(f"{curve[at[x]]:.2f}" for x in show) if curve else "n/a"
            echo(f"{pooled['units']} units, {runs} runs x {steps} steps on {results.device} "
                       f"({results.seconds:.1f} s). Match rate at k/u = {', '.join(map(str, show))}:")
            echo(f"  attack ({init}): {fmt(pooled['attack'])}")
            for name, curve in pooled["baselines"].items():
                echo(f"  {name}: {fmt(curve)}")
            if pooled["attack"] and max(pooled["attack"]) == 0:     # say why, once per distinct reason
                for note in dict.fromkeys(n for u in doc["units"] for n in u["notes"] if n.startswith("no ")):
                    echo(f"  {note}")
            echo(f"Ranking: {out / 'rank.json'}, curves: {out / 'rank.svg'} "
                       "(confidential: contains reconstructed records)")

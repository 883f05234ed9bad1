"""``audit protect`` on the workers of ``audit run``: its audits' units and its search's tasks
(:mod:`audit.protection.group`) on the same bounded local pool or Dask cluster (:func:`audit.scale.runner.run_units`)."""
from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from ..attacks.exact import ExactOptions
from ..data.stream import group_columns
from ..errors import Interrupted
from ..findings.model import Findings
from ..inputs import Inputs
from ..protection.group import Group, Search, failed_group, protect_group
from .runner import ScaleOptions, run_scaled, run_units
from .worker import Limits, _apply_limits
from ..lazy import LazyModule

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)


@dataclass(frozen=True)
class ProtectPool:
    """Where ``audit protect`` runs its units: ``workers`` local processes (each under ``RLIMIT_AS`` of
    ``memory_mb``), or a Dask ``scheduler``; with one worker, no scheduler and no memory bound (``local``),
    everything in this process. Made by the command line (:mod:`audit.commands.protect`) and passed to
    :func:`audit.protection.protect.protect`, which does not import this stage."""

    workers: int = 1
    scheduler: Any = None
    memory_mb: int | None = None

    def __post_init__(self):
        ScaleOptions(workers=self.workers, memory_mb=self.memory_mb)  # the same checks, with the options' names

    @property
    def local(self) -> bool:
        """Everything in this process: one worker, no scheduler, no memory bound."""
        return self.workers == 1 and self.scheduler is None and not self.memory_mb

    def audit(self, inputs: Inputs, exact: ExactOptions, rules, out: Path | None = None,
              on_unit: Callable | None = None, on_total: Callable | None = None) -> Findings:
        """``audit run`` at scale (:func:`~audit.scale.runner.run_scaled`) on the inputs' rows on this pool:
        each unit's findings go to parts on disk as it finishes and the document reads them back one at a
        time (memory flat in the units). Inputs with no rows loaded (``frame`` None,
        :func:`~audit.scale.source.streamed_inputs`) are read from their file chunk by chunk. The claim store is
        written to ``out`` (None: none kept). An inconsistent release stops it, as in one process; Ctrl-C is a
        ``KeyboardInterrupt``."""
        scale = ScaleOptions(workers=self.workers, scheduler=self.scheduler, memory_mb=self.memory_mb)
        source = inputs.data_path if inputs.frame is None else _in_order(inputs.frame, group_columns(inputs.schema, inputs.schedule))
        with _scratch(out) as folder:
            try:
                return run_scaled(source, inputs.schema, inputs.schedule, exact, scale, out or folder,
                                  inputs.data_path, on_unit, on_total, rules, folder / "parts", input_errors=True)
            except Interrupted:  # the parts are the scratch folder's: nothing for --resume there
                raise KeyboardInterrupt from None

    def search(self, tasks, search: Search, record: Callable[[dict, int], None]) -> None:
        """:func:`protect_task` on every (group, None, index) of ``tasks``; ``record(result, index)`` as each finishes."""
        scale = ScaleOptions(workers=self.workers, scheduler=self.scheduler, memory_mb=self.memory_mb,
                             task=protect_task, failed=failed_group)
        run_units(tasks, search, Limits(self.memory_mb, None, os.getpid()), scale, record)


def _in_order(frame, columns: list[str]):
    """The rows sorted by ``columns`` (stable, as the stream needs them): the frame itself, not a copy, when they
    already are (a file sorted by geography)."""
    if pd.MultiIndex.from_frame(frame[columns]).is_monotonic_increasing:
        return frame
    return frame.sort_values(columns, kind="stable")


def protect_task(group: Group, search: Search, prior: None, limits: Limits) -> dict:
    """One task of the search in a worker (:func:`~audit.protection.group.protect_group`); past the worker's
    memory bound, every unit of it undecided. No hard time limit: each of its attacks keeps ``unit_seconds``."""
    _apply_limits(limits)
    try:
        return protect_group(group, search)
    except MemoryError:
        return failed_group(group, search, "out-of-memory", f"memory limit of {limits.memory_mb} MB per worker reached")


@contextmanager
def _scratch(out: Path | None) -> Iterator[Path]:
    """A folder for an audit's parts (in ``out`` when given), removed when it is done or stopped."""
    if out is not None:
        Path(out).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix=".audit-parts-", dir=out))
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)

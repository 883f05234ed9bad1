"""RAP-RANK's options, device choice and seeded generators (the attack: :mod:`audit.attacks.engines.rank`)."""
from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from ...errors import AuditError, OptionalDependencyMissing
from ...problem.build import Problem


INITS = ("uniform", "parent")
DEVICES = ("auto", "cpu", "cuda")
GRID = tuple(round(i / 20, 2) for i in range(1, 21))
TORCH_CPU = "pip install torch==2.13.0"   # PyTorch's CPU build (a bare "torch" pulls several GB of CUDA)
HINT = f"{TORCH_CPU} && pip install 'disclosure-audit[rank]'"
# ``audit run --rank``'s schedule, the ranking at release scale: on the extract's blocks 40 Adam steps at lr 0.75
# give the match-rate curves and re-identification figures of ``audit rank``'s 300 at 0.1
# (bench/results/rank/extract-cpu-schedule.md); ``audit rank`` keeps 300 at 0.1 (the ACS case's curves move)
RUN_SCHEDULE = {"steps": 40, "lr": 0.75}


def torch_available() -> bool:
    """Whether PyTorch is installed, found without importing it (an import costs seconds per run)."""
    import importlib.util
    return importlib.util.find_spec("torch") is not None


def _torch():
    try:
        import torch
    except ImportError:
        raise OptionalDependencyMissing("torch", "rank", TORCH_CPU) from None
    return torch


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU is a usage error."""
    torch = _torch()
    if device not in DEVICES:
        raise AuditError(f"unknown --device '{device}'", "--device", f"use one of {list(DEVICES)}")
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise AuditError("--device cuda but PyTorch sees no CUDA GPU", "--device",
                         "use --device cpu (or auto), or install a CUDA build of torch")
    return device


def _seed(seed: int, *parts: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence([seed & 0xFFFFFFFF, *parts]))


def unit_key(problem: Problem) -> int:
    return zlib.crc32("/".join((problem.level, *problem.geo)).encode())


@dataclass(frozen=True)
class RankOptions:
    """Knobs of the attack; defaults are what ``audit rank`` uses."""

    runs: int = 16
    steps: int = 300
    lr: float = 0.1
    init: str = "uniform"
    init_mass: float | None = None  # softmax mass on a start row's atoms (None: 0.9 parent, 0.5 uniform)
    device: str = "auto"
    seed: int = 0
    grid: tuple[float, ...] = GRID
    batch_elements: int | None = None  # bound on runs * units * rows * queries per tensor program
                                       # (None: 2**22 on CPU, 2**28 on CUDA, ~5 GB of activations)
    combine: str = "auto"           # answers: auto (factor, small units row by row), factor (Gram matrix of the slots),
                                    # matmul (log space) or gather
    confidence: float = 0.95
    keep: float = 0.5               # share of terms in each step's loss while exploring (1: all)
    explore: float = 0.5            # share of the steps that explore
    project: bool = True            # where no rounded run reproduces the release, each -> the SAT solver's
    project_rows: int = 64          # consistent dataset nearest it by phase, on units of at most this many rows
    threads: int | None = 1         # CPU threads for torch (1: fastest on a shared machine, deterministic)

    def __post_init__(self):
        if self.runs < 1:
            raise AuditError(f"--runs must be at least 1, not {self.runs}", "--runs", "e.g. --runs 16")
        if self.steps < 0:
            raise AuditError(f"--steps must be non-negative, not {self.steps}", "--steps", "e.g. --steps 300")
        if not self.lr > 0:
            raise AuditError(f"--lr must be above 0, not {self.lr}", "--lr", "e.g. --lr 0.1")
        if self.seed < 0:
            raise AuditError(f"--seed must be 0 or more, not {self.seed}", "--seed", "e.g. --seed 0")
        if self.init not in INITS:
            raise AuditError(f"unknown --init '{self.init}'", "--init", f"use one of {list(INITS)}")
        if self.device not in DEVICES:
            raise AuditError(f"unknown --device '{self.device}'", "--device", f"use one of {list(DEVICES)}")
        if self.init_mass is None:
            object.__setattr__(self, "init_mass", 0.9 if self.init == "parent" else 0.5)
        if not 0 < self.init_mass < 1:
            raise AuditError("init_mass must be between 0 and 1", "--init-mass", "e.g. 0.8")
        if self.combine not in ("auto", "factor", "gather", "matmul"):
            raise ValueError("combine is auto, factor, gather or matmul")
        if not self.grid or any(not 0 < x <= 1 for x in self.grid):
            raise AuditError("the k/u grid must hold values in (0, 1]", "--grid", "e.g. 0.05,0.1,...,1")

"""The complementary-suppression scorer (audit.protection.recovery) against a null space per candidate."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from audit.protection.recovery import Recovery
from audit.protection.suppress import determined, relations


def _grid_lines(shape: tuple[int, ...]) -> tuple[list, int]:
    """A table with margins over ``shape`` (the last index of each axis the margin): its lines, its cells."""
    full = tuple(s + 1 for s in shape)
    at = {cell: k for k, cell in enumerate(itertools.product(*(range(s) for s in full)))}
    lines = []
    for axis, size in enumerate(shape):
        for cell in at:
            if cell[axis] == size:
                parts = [at[cell[:axis] + (v,) + cell[axis + 1:]] for v in range(size)]
                lines.append((at[cell], parts))
    return lines, len(at)


@pytest.mark.parametrize("seed", range(6))
def test_scores_equal_a_null_space_per_candidate(seed):
    rng = np.random.default_rng(seed)
    lines, n = _grid_lines((3, 3, 2) if seed % 2 else (4, 3))
    rel = relations(lines, n)
    hidden = rng.random(n) < (0.4 + 0.05 * seed if seed % 2 else 0.1 + 0.05 * seed)
    primary = hidden & (rng.random(n) < 0.6)
    found = Recovery(rel, hidden)
    assert np.array_equal(found.fixed, determined(rel, hidden))
    candidates = np.flatnonzero(~hidden).tolist()
    expected = []
    for k in candidates:
        trial = hidden.copy()
        trial[k] = True
        fixed = determined(rel, trial)
        expected.append((int((fixed & primary).sum()), int(fixed.sum())))
    assert found.scores(primary, candidates) == expected
    assert found.scores(primary, candidates) == Recovery(rel, hidden, {}).scores(primary, candidates)

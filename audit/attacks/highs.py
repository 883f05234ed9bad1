"""HiGHS started quietly: the one place the package makes a ``highspy.Highs``."""
from __future__ import annotations

import os
import sys

_banner_done = False
ITERATION_WORK, MIP_WORK = 1_000, 100_000  # solver work (propagations' worth) of a simplex iteration, a MIP node
_work = [0]  # HiGHS work done in this process by run(): a unit's meter reads its difference


def run(h) -> None:
    """``h.run()``, its simplex iterations and branch-and-bound nodes added to this process's HiGHS work."""
    h.run()
    info = h.getInfo()
    _work[0] += ITERATION_WORK * max(int(info.simplex_iteration_count), 0) + MIP_WORK * max(int(info.mip_node_count), 0)


def work() -> int:
    """HiGHS work done in this process so far by :func:`run` (see :data:`ITERATION_WORK`)."""
    return _work[0]


def highs(**options):
    """A ``highspy.Highs`` with ``output_flag`` off and ``options`` set (``threads=1, random_seed=0``...).

    HiGHS 1.16 prints its banner to the process's standard output when the first solver is made,
    before any option can be set; that would corrupt JSON or CSV written to stdout (``audit ... -o -``,
    the library used from a script), so the first one is made with file descriptor 1 sent to /dev/null.
    """
    import highspy

    global _banner_done
    if _banner_done:
        h = highspy.Highs()
    else:
        sys.stdout.flush()
        try:
            saved, null = os.dup(1), os.open(os.devnull, os.O_WRONLY)
        except OSError:  # no standard output to protect
            saved = null = None
        try:
            if null is not None:
                os.dup2(null, 1)
            h = highspy.Highs()
        finally:
            if saved is not None:
                os.dup2(saved, 1)
                os.close(saved)
                os.close(null)
        _banner_done = True
    h.setOptionValue("output_flag", False)
    for name, value in options.items():
        h.setOptionValue(name, value)
    return h

"""HiGHS started quietly: the one place the package makes a ``highspy.Highs``."""
from __future__ import annotations

import os
import sys

_banner_done = False
ITERATION_WORK, MIP_WORK = 1_000, 100_000  # solver work (propagations' worth) of a simplex iteration, a MIP node
_work = [0]  # HiGHS work done in this process by run(): a unit's meter reads its difference


def run(h) -> None:
    """``h.run()``, its simplex iterations and branch-and-bound nodes added to this process's HiGHS work."""
    import highspy

    if h.run() == highspy.HighsStatus.kError and h.getModelStatus() == highspy.HighsModelStatus.kNotset:
        from ..errors import InternalError
        raise InternalError("HiGHS refused to solve (an option it rejects, such as a second thread count)")
    info = h.getInfo()
    _work[0] += ITERATION_WORK * max(int(info.simplex_iteration_count), 0) + MIP_WORK * max(int(info.mip_node_count), 0)


def work() -> int:
    """HiGHS work done in this process so far by :func:`run` (see :data:`ITERATION_WORK`)."""
    return _work[0]


def highs(**options):
    """A ``highspy.Highs`` with ``output_flag`` off, one thread and ``options`` set (``random_seed=0``...).

    HiGHS sizes one scheduler per process from the first solve's ``threads``, and a later solver asking for
    another count fails without solving ("Not Set"): so every solver made here runs on one thread (the
    workers give the parallelism). Before, the linear attack's default-thread solve left the exact attack's
    later one-thread solves of the same process unsolved.

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
    h.setOptionValue("threads", 1)
    for name, value in options.items():
        h.setOptionValue(name, value)
    return h

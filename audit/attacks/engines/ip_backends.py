"""The MILP back-ends of :class:`~audit.attacks.engines.ip.IpEngine`: HiGHS, and Gurobi when it imports and
its licence accepts the model."""
from __future__ import annotations

import logging

import numpy as np

from .ip_model import INF
from ..highs import highs

log = logging.getLogger("audit.attacks.engines.ip")

FEASIBLE, INFEASIBLE, LIMIT = "feasible", "infeasible", "limit"
GUROBI_SIZE_LIMIT = 10010


class _GurobiRefused(Exception):
    """The installed Gurobi licence does not accept this model."""


class _Backends:
    """Solves the engine's model with HiGHS or Gurobi; mixed into :class:`~audit.attacks.engines.ip.IpEngine`
    (reads ``model``, ``time_limit``, ``threads``, ``seed``, ``tolerance``; sets ``last_iterations``, ``calls``,
    ``backend``)."""

    def _pick_backend(self, backend: str) -> str:
        if backend == "highs":
            return "highs"
        try:
            import gurobipy  # noqa: F401
        except ImportError:
            if backend == "gurobi":
                raise
            return "highs"
        return "gurobi"

    def _solve(self, cells: list[str] | None, extra: list = (), extra_vars: list = (),
               objective: dict[int, float] | None = None, nodes: int | None = None) -> tuple[str, np.ndarray | None]:
        """Solve with the base rows, the rows of ``cells`` (all when None) and extra rows/vars.

        ``nodes``: a branch-and-bound node limit instead of the time limit (deterministic work);
        the simplex iterations made are left in ``last_iterations``.
        """
        self.calls += 1
        self.last_iterations = 0
        keep = None if cells is None else set(cells)
        rows = [r for r in self.model.rows if r[3] is None or keep is None or r[3] in keep] + list(extra)
        lb, ub, integer = list(self.model.lb), list(self.model.ub), list(self.model.integer)
        for vlb, vub, vint in extra_vars:
            lb.append(vlb)
            ub.append(vub)
            integer.append(vint)
        if self.backend == "gurobi":
            try:
                return self._gurobi(rows, lb, ub, integer, objective, nodes)
            except _GurobiRefused as err:
                log.warning("Gurobi refused the model (%s); falling back to HiGHS", err)
                self.backend = "highs"
        return self._highs(rows, lb, ub, integer, objective, nodes)

    def _highs(self, rows, lb, ub, integer, objective, nodes=None):
        import highspy

        h = highs()
        h.setOptionValue("time_limit", float(self.time_limit) if nodes is None else INF)
        if nodes is not None:
            h.setOptionValue("mip_max_nodes", int(nodes))
        h.setOptionValue("threads", self.threads)
        h.setOptionValue("random_seed", self.seed)
        for option in ("mip_feasibility_tolerance", "primal_feasibility_tolerance"):
            h.setOptionValue(option, float(self.tolerance))
        lp = highspy.HighsLp()
        ncol = len(lb)
        lp.num_col_, lp.num_row_ = ncol, len(rows)
        cost = np.zeros(ncol)
        for k, v in (objective or {}).items():
            cost[k] = v
        lp.col_cost_ = cost
        lp.col_lower_ = np.asarray(lb, dtype=float)
        lp.col_upper_ = np.asarray(ub, dtype=float)
        lp.row_lower_ = np.asarray([r[1] for r in rows], dtype=float)
        lp.row_upper_ = np.asarray([r[2] for r in rows], dtype=float)
        start, index, value = [0], [], []
        for coef, *_ in rows:
            index += list(coef.keys())
            value += list(coef.values())
            start.append(len(index))
        lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
        lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = ncol, len(rows)
        lp.a_matrix_.start_ = np.asarray(start, dtype=np.int32)
        lp.a_matrix_.index_ = np.asarray(index, dtype=np.int32)
        lp.a_matrix_.value_ = np.asarray(value, dtype=float)
        lp.integrality_ = [highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in integer]
        h.passModel(lp)
        h.run()
        self.last_iterations = max(int(h.getInfo().simplex_iteration_count), 0)
        status = h.getModelStatus()
        S = highspy.HighsModelStatus
        if status == S.kOptimal or (status in (S.kTimeLimit, S.kSolutionLimit, S.kInterrupt)
                                    and h.getInfo().primal_solution_status == 2):
            return FEASIBLE, np.asarray(h.getSolution().col_value)
        if status == S.kInfeasible:
            return INFEASIBLE, None
        return LIMIT, None

    def _gurobi(self, rows, lb, ub, integer, objective, nodes=None):
        import gurobipy as gp

        try:
            env = gp.Env(empty=True)
            env.setParam("OutputFlag", 0)
            env.start()
            model = gp.Model(env=env)
            if nodes is None:
                model.Params.TimeLimit = self.time_limit
            else:
                model.Params.NodeLimit = nodes
            model.Params.Threads = self.threads
            model.Params.Seed = self.seed
            model.Params.FeasibilityTol = model.Params.IntFeasTol = self.tolerance
            xs = model.addVars(len(lb), lb=lb, ub=ub,
                               vtype=[gp.GRB.INTEGER if i else gp.GRB.CONTINUOUS for i in integer])
            for coef, lo, hi, _ in rows:
                expr = gp.LinExpr([(v, xs[k]) for k, v in coef.items()])
                if lo == hi:
                    model.addLConstr(expr, gp.GRB.EQUAL, lo)
                    continue
                if lo > -INF:
                    model.addLConstr(expr, gp.GRB.GREATER_EQUAL, lo)
                if hi < INF:
                    model.addLConstr(expr, gp.GRB.LESS_EQUAL, hi)
            if objective:
                model.setObjective(gp.quicksum(v * xs[k] for k, v in objective.items()))
            model.optimize()
            self.last_iterations = int(model.IterCount)
        except gp.GurobiError as err:
            if getattr(err, "errno", None) == GUROBI_SIZE_LIMIT or "size-limited" in str(err).lower() \
                    or "licen" in str(err).lower():
                raise _GurobiRefused(str(err).strip().splitlines()[0]) from None
            raise
        if model.SolCount > 0:
            return FEASIBLE, np.array([xs[k].X for k in range(len(lb))])
        if model.Status in (gp.GRB.INFEASIBLE, gp.GRB.INF_OR_UNBD):
            return INFEASIBLE, None
        return LIMIT, None

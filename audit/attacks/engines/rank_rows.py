"""RAP-RANK's answers for batches of small units, row by row in slot-major layout (:class:`.rank_program._Program`).

A unit of a few rows (the extract's blocks: 7.5 persons on average, most under 6) needs fewer products per row
(one per published cell) than the Gram matrix of its slots has entries (the left x right Gram of the SF1 race
queries is five times the cells). Here each row's products are taken in log space by one matmul through the
queries' incidence and summed over the unit's rows. The tensors are slot-major, ``(slots or terms, rows or
runs)``: on CPU a selection of whole contiguous rows is an order of magnitude faster than along the last axis,
and the loss's gradient is written out (:func:`row_loss`) rather than traced through a dozen term-wide ops.
"""
from __future__ import annotations

from .rank_options import _torch


def row_answers(prog, slots):
    """The answers of ``slots`` ``(R, N, S)``, slot-major ``(queries, R)``: each query's product of slots per row
    in log space (one matmul through the queries' incidence, pad rows sent to exp(-1e4) = 0 by an extra row),
    summed over the unit's rows."""
    torch = prog.torch
    R, N, S = slots.shape
    flat = slots.reshape(R * N, S).t()
    logm = torch.cat([torch.log(flat.clamp_min(1e-30)), prog.log_mask], 0)       # (S + 1, R*N)
    return torch.exp(prog.row_incidence @ logm).view(-1, R, N).sum(2)


def row_residual(prog, ans):
    """How far each term lies outside its bounds, ``(R, terms)``, from :func:`row_answers`."""
    a = ans.index_select(0, prog.term_index)
    return (a - a.clamp(prog.lo_t, prog.hi_t)).abs().t()


def _loss_function():
    torch = _torch()

    class _Loss(torch.autograd.Function):
        """Per (unit, run), the weighted squared distance of its terms' answers to their bounds, with the
        gradient written out: one pass over the terms each way instead of the residual's dozen."""

        @staticmethod
        def forward(ctx, ans, index, lo, hi, weight):
            a = ans.index_select(0, index)
            d = a - a.clamp(lo, hi)
            wd = d * weight
            ctx.save_for_backward(index, wd)
            ctx.rows = ans.shape[0]
            return (wd * d).sum(0)

        @staticmethod
        def backward(ctx, grad):
            index, wd = ctx.saved_tensors
            out = wd.new_zeros((ctx.rows, wd.shape[1]))
            return out.index_add_(0, index, wd * (2 * grad)), None, None, None, None

    return _Loss.apply


_LOSS = None


def row_loss(prog, ans, weight):
    """``sum_t weight * residual^2`` per (unit, run), ``(R,)``; ``weight`` slot-major ``(terms, R)``."""
    global _LOSS
    if _LOSS is None:
        _LOSS = _loss_function()
    return _LOSS(ans, prog.term_index, prog.lo_t, prog.hi_t, weight)

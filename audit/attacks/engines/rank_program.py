"""RAP-RANK's tensor program for a batch of (unit, run) pairs: relaxed rows, answers and residuals.

``combine="factor"`` keeps one logits tensor per group of columns with the same number of
atoms (one softmax per group, no per-column slices whose backward fills a full-size zero tensor each), maps
each group's softmaxes to its clause slots with one block matrix, and answers every query of at most two
clauses from the slots' Gram matrix (one batched matmul); longer queries are products of slots, taken in log
space through a small dense incidence (one matmul per product table) where they span several slots.
``auto`` (the default) is ``factor``, except that a batch of small units is answered row by row
(:mod:`.rank_rows`) where that takes fewer products than the Gram matrix. ``matmul`` (products in log space
through a dense incidence) and ``gather`` are the earlier forms, kept to measure against.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from .rank_encoding import _Encoding, _Term, factor_plan, split_plan
from .rank_options import _torch
from .rank_rows import row_answers, row_loss, row_residual


class _Program:
    """The tensors of one batch: slot matrices, answer plan, and every unit's terms (repeated per run)."""

    def __init__(self, enc: _Encoding, terms: Sequence[Sequence[_Term]], runs: int, rowmask: np.ndarray, dev,
                 combine: str = "factor"):
        torch = self.torch = _torch()
        self.enc, self.dev = enc, dev
        self.combine, self._rows_allowed = ("factor", True) if combine == "auto" else (combine, False)
        B, T = len(terms), max(1, max(len(t) for t in terms))
        cols = {name: np.zeros((B, T), dt) for name, dt in
                (("q1", np.int64), ("q2", np.int64), ("lo", np.float32), ("hi", np.float32), ("w", np.float32),
                 ("has_lo", np.float32), ("has_hi", np.float32), ("check", bool))}
        for b, unit in enumerate(terms):   # one array per unit, not eight numpy stores per term
            if not unit:
                continue
            a = np.array([(t.q1, t.q2, t.lo, t.hi, t.w, t.check) for t in unit], dtype=np.float64)
            n = len(unit)
            cols["q1"][b, :n], cols["q2"][b, :n] = a[:, 0] + 1, a[:, 1] + 1
            for name, j in (("lo", 2), ("hi", 3)):
                finite = np.isfinite(a[:, j])
                cols["has_" + name][b, :n] = finite
                cols[name][b, :n] = np.where(finite, a[:, j], 0.0)
            cols["w"][b, :n], cols["check"][b, :n] = a[:, 4], a[:, 5] != 0
        for name, arr in cols.items():
            setattr(self, name, torch.tensor(np.repeat(arr, runs, axis=0), device=dev))
        # units of a level usually publish the same cells: one index for every row then (a gather's backward
        # is a scatter-add over the whole batch), and no divisor when every term is a count or sum
        q1 = cols["q1"]
        self.shared_q1 = torch.tensor(q1[0], device=dev) if (q1 == q1[0]).all() else None
        self.no_divisor = not cols["q2"].any()
        self.mask = torch.tensor(rowmask, device=dev, dtype=torch.float32)
        self.groups = enc.groups()
        self.per_row = False
        if self.combine == "factor":
            self._factor_tensors()
        else:
            self.mats, self.gather, self.incidence = enc.tensors(torch, dev)

    def _factor_tensors(self) -> None:
        """Per group a block matrix (its columns' atoms -> their slots). Slots are numbered after the constant
        slot 0, group by group, the widest column last: its slots meet no slot of their own column, so its
        Gram block is skipped and the answers read from ``[wide^T rest, rest^T rest]``, both contiguous."""
        torch, enc = self.torch, self.enc
        mats = [m.cpu().numpy() for m in enc.tensors(torch, "cpu")[0]]
        counts = [m.shape[1] for m in mats]
        wide = int(np.argmax(counts))
        self.groups = sorted(([c for c in g if c != wide] + [wide] * (wide in g) for g in self.groups),
                             key=lambda g: wide in g)
        base, total, self.blocks = [0] * len(mats), 1, []
        for cols in self.groups:
            a = enc.sizes[cols[0]]
            width = sum(counts[c] for c in cols)
            block = np.zeros((len(cols) * a, width), dtype=np.float32)
            at = 0
            for i, c in enumerate(cols):
                block[i * a:(i + 1) * a, at:at + counts[c]] = mats[c]
                base[c] = total + at
                at += counts[c]
            total += width
            self.blocks.append(torch.tensor(block, device=self.dev))
        low, high, order = factor_plan(enc.query_slots, base, 0, total)
        self.split = base[wide]
        n_rest = self.split
        a, b = np.divmod(low, total)
        a, b = np.maximum(a, b), np.minimum(a, b)                 # a: the later slot (in wide, if either is)
        low = np.where(a >= self.split, (a - self.split) * n_rest + b, counts[wide] * n_rest + a * n_rest + b)
        self.low, self.high, self.order = (torch.tensor(x, device=self.dev) for x in (low, high, order))
        self.select = [self._selection(m) for m in self.blocks]
        self.halves = None
        if len(high):   # longer queries: a left x right Gram when its gathers and products cost less
            order_cols = sorted(range(len(counts)), key=lambda c: -counts[c])
            best = high.size                                          # gathers of the direct product
            for m in range(1, min(4, len(counts))):
                right = {base[c] + j for c in order_cols[:m] for j in range(counts[c])}
                plan = split_plan(high, right, 0)
                cost = plan[0].size + plan[1].size + len(plan[0]) * len(plan[1]) / 8
                if cost < best:
                    best, self.halves = cost, tuple(torch.tensor(x, device=self.dev) for x in plan)
        # per row (rank_rows) rather than a Gram matrix when the Gram has more entries than the rows have
        # answers (small units: the extract's blocks of 1-6 rows), where every unit has the same count terms
        gram = (counts[wide] + n_rest) * n_rest + (len(self.halves[0]) * len(self.halves[1]) if self.halves else 0)
        self.per_row = (self._rows_allowed and self.shared_q1 is not None and self.no_divisor and bool((self.shared_q1 > 0).all())
                        and self.mask.shape[1] * len(enc.query_slots) < gram)
        if self.per_row:   # slot-major bounds (open ends infinite) and each term's query in the plan's order
            inf = torch.tensor(np.inf, device=self.dev)
            self.lo_t = torch.where(self.has_lo > 0, self.lo, -inf).t().contiguous()
            self.hi_t = torch.where(self.has_hi > 0, self.hi, inf).t().contiguous()
            self.term_index = self.shared_q1 - 1
            inc = np.zeros((len(enc.query_slots), total), dtype=np.float32)     # queries x (slots 1.., mask)
            for q, slots in enumerate(enc.query_slots):
                for col, j in slots:
                    inc[q, base[col] + j - 1] += 1.0
            inc[:, -1] = 1.0
            self.row_incidence = torch.tensor(inc, device=self.dev)
            self.log_mask = torch.where(self.mask > 0, 0.0, -1e4).reshape(1, -1)
        self.tables = {}   # a product table -> its log-space incidence (slots x products), when over one slot wide
        for table in ([self.halves[0], self.halves[1]] if self.halves is not None else [self.high]):
            t = table.cpu().numpy()
            if t.ndim == 2 and t.shape[1] > 1 and len(t):
                inc = np.zeros((total, len(t)), dtype=np.float32)
                for j in range(t.shape[1]):
                    np.add.at(inc, (t[:, j], np.arange(len(t))), 1.0)
                inc[0] = 0.0                                      # the constant slot: a factor of 1
                self.tables[id(table)] = torch.tensor(inc, device=self.dev)

    def _selection(self, block):
        """The atom of each slot when every slot is one atom of weight 1 (an index_select then), else None."""
        m = block.cpu().numpy()
        if ((m == 0) | (m == 1)).all() and (m.sum(0) == 1).all():
            idx = m.argmax(0)
            return "same" if np.array_equal(idx, np.arange(len(m))) else self.torch.tensor(idx, device=self.dev)
        return None

    # -- parameters ------------------------------------------------------------------------------
    def leaves(self, init: np.ndarray) -> list:
        """The optimised logits from ``init`` (runs x rows x all atoms, columns in order)."""
        torch, o = self.torch, self.enc.offsets
        if self.combine != "factor":
            return [torch.tensor(init, device=self.dev, requires_grad=True)]
        out = []
        for cols in self.groups:
            part = np.stack([init[..., o[c]:o[c + 1]] for c in cols], axis=2)     # (R, N, k, A)
            out.append(torch.tensor(np.ascontiguousarray(part), device=self.dev, requires_grad=True))
        return out

    def column_probs(self, leaves) -> list:
        """Each column's softmaxes (R, N, atoms), in column order."""
        torch, o = self.torch, self.enc.offsets
        if self.combine != "factor":
            return [torch.softmax(leaves[0][..., o[c]:o[c + 1]], dim=-1) for c in range(len(self.enc.sizes))]
        out = [None] * len(self.enc.sizes)
        for cols, t in zip(self.groups, leaves):
            p = _softmax(torch, t)
            for i, c in enumerate(cols):
                out[c] = p[:, :, i]
        return out

    def forward(self, leaves):
        """Relaxed answers ``(R, 1 + queries)`` of the current logits."""
        if self.combine != "factor":
            return self.answers(self.column_probs(leaves))
        torch = self.torch
        return self._factored(torch.cat([self._slots(_softmax(torch, t).flatten(2), m, sel)
                                         for t, m, sel in zip(leaves, self.blocks, self.select)], dim=-1))

    def _slots(self, flat, block, select):
        if select is None:
            return flat @ block
        return flat if isinstance(select, str) else flat.index_select(-1, select)

    def integer_answers(self, rows):
        """Answers on integer datasets ``rows`` (R x N x columns, a tensor of atom indices)."""
        torch, sizes = self.torch, self.enc.sizes
        onehot = torch.nn.functional.one_hot
        if self.combine != "factor":
            return self.answers([onehot(rows[..., c], a).float() for c, a in enumerate(sizes)])
        return self._factored(torch.cat([self._slots(onehot(rows[..., cols], sizes[cols[0]]).float().flatten(2), m, sel)
                                         for cols, m, sel in zip(self.groups, self.blocks, self.select)], dim=-1))

    # -- answers ---------------------------------------------------------------------------------
    def answers(self, ps):
        """The earlier forms: per-column softmaxes -> slots -> log-space matmul or gathered products."""
        torch = self.torch
        mass = torch.cat([p @ m for p, m in zip(ps, self.mats)] + [torch.ones_like(ps[0][..., :1])], dim=-1)
        if self.combine == "matmul":
            prod = torch.exp(torch.log(mass.clamp_min(1e-30)) @ self.incidence)
        else:
            prod = mass.index_select(-1, self.gather[:, 0])
            for j in range(1, self.gather.shape[1]):
                prod = prod * mass.index_select(-1, self.gather[:, j])
        ans = (prod * self.mask[..., None]).sum(1)
        return torch.cat([torch.ones_like(ans[:, :1]), ans], dim=1)

    def _factored(self, slots):
        """Answers from the slots' Gram matrix (every query of <= 2 clauses) and products of gathered
        slots (longer ones); ``slots`` is (R, N, S) without the constant slot 0, prepended here. Small units:
        per row, slot-major (:func:`.rank_rows.row_answers`)."""
        if self.per_row:
            return row_answers(self, slots)
        torch = self.torch
        mass = torch.cat([torch.ones_like(slots[..., :1]), slots], dim=-1)
        masked = mass * self.mask[..., None]
        rest, k = mass[..., :self.split], self.split
        gram = torch.cat([(masked[..., k:].transpose(1, 2) @ rest).flatten(1),
                          (masked[..., :k].transpose(1, 2) @ rest).flatten(1)], 1)
        parts = [gram.index_select(1, self.low)]
        if self.halves is not None:
            left, right, flat = self.halves
            lp, rp = self._product(masked, mass, left), self._product(mass, mass, right)
            parts.append((lp.transpose(1, 2) @ rp).flatten(1).index_select(1, flat))
        elif len(self.high):
            parts.append(self._product(masked, mass, self.high).sum(1))
        ans = torch.cat(parts, dim=1).index_select(1, self.order)
        return torch.cat([torch.ones_like(ans[:, :1]), ans], dim=1)

    def _product(self, first, mass, table):
        """Per row, the product of each table row's slots (the first taken from ``first``, the masked mass or the
        mass itself). Over several slots, in log space through one dense incidence: one matmul of (slots x
        products) where the gathers cost a pass over (rows x products) per slot, each scattered back in the
        backward pass (3-4x the time on the SF1 blocks' race queries)."""
        inc = self.tables.get(id(table))
        if inc is not None:
            prod = self.torch.exp(self.torch.log(mass.clamp_min(1e-30)) @ inc)
            return prod if first is mass else prod * self.mask[..., None]
        prod = first.index_select(-1, table[:, 0])
        for j in range(1, table.shape[1]):
            prod = prod * mass.index_select(-1, table[:, j])
        return prod

    def orient(self, x):
        """A per-term tensor ``(R, terms)`` in the layout :meth:`loss` takes (slot-major on the per-row path)."""
        return x.t().contiguous() if self.per_row else x

    def loss(self, ans, weight):
        """Per (unit, run), the terms' weighted squared residuals; ``weight`` as :meth:`orient` gives it."""
        if self.per_row:
            return row_loss(self, ans, weight)
        r = self.residual(ans)
        return (weight * r * r).sum(1)

    def residual(self, ans):
        """How far each term lies outside ``[lo * d, hi * d]`` (0 inside)."""
        if self.per_row:
            return row_residual(self, ans)
        torch = self.torch
        a = torch.gather(ans, 1, self.q1) if self.shared_q1 is None else ans.index_select(1, self.shared_q1)
        if self.no_divisor:     # d = 1
            return torch.relu(self.lo - a) * self.has_lo + torch.relu(a - self.hi) * self.has_hi
        d = torch.gather(ans, 1, self.q2)
        return (torch.relu(self.lo * d - a) * self.has_lo + torch.relu(a - self.hi * d) * self.has_hi)


def _softmax(torch, t):
    """Softmax over the last axis, by elementwise ops (2-3x faster than torch.softmax's kernel on the
    short rows here on CPU), and as a sigmoid for two atoms."""
    if t.shape[-1] == 2:
        s = torch.sigmoid(t[..., 1] - t[..., 0])
        return torch.stack([1 - s, s], dim=-1)
    e = torch.exp(t - t.detach().amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)

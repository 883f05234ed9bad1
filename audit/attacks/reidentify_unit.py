"""Re-identification in one unit: who is unique on the quasi-identifiers, and what the exact attack
proves or the ranking attack guesses about each person (the release-level measure:
:mod:`audit.attacks.reidentify`)."""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from ..specs.attacker import AttackerModel, Attribute
from ..problem.claims import REFUTED, UNDECIDED, VERIFIED, Claim, Verdict, distinct_rows
from ..problem.build import Problem
from ..lazy import LazyModule
from ..memo import keep

pd = LazyModule("pandas")  # imported on first use (audit/lazy.py)

MAX_COMBINATIONS = 4096  # atom combinations one quasi-identifier value may span before it is left unproved


def unique_mask(keys: np.ndarray) -> np.ndarray:
    """Which rows of an integer key matrix occur exactly once."""
    keys = np.asarray(keys)
    if not len(keys):
        return np.zeros(0, dtype=bool)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    return counts[inverse.ravel()] == 1


def _mode(keys: np.ndarray) -> np.ndarray | None:
    """The most frequent row (ties: the smallest, as ``np.unique(axis=0)`` orders rows): the rows shifted to
    start at 0 in each column, so that :func:`distinct_rows` takes them as mixed-radix numbers."""
    keys = np.asarray(keys, dtype=np.int64)
    if not len(keys):
        return None
    if keys.ndim != 2:
        values, counts = distinct_rows(keys)
        return values[int(np.argmax(counts))]
    low = keys.min(axis=0)
    values, counts = distinct_rows(keys - low, tuple((keys.max(axis=0) - low + 1).tolist()))
    return values[int(np.argmax(counts))] + low


def uniqueness(frame: pd.DataFrame, schema) -> pd.DataFrame:
    """Per microdata row: unique in its unit on the quasi-identifiers (``unique``), and on them plus the
    sensitive attributes (``unique_with_sensitive``) -- the Bureau's BSAb and BSAbER flags."""
    attacker: AttackerModel = schema.attacker
    geo = list(schema.geography[: schema.geography.index(attacker.geography) + 1])
    unit = frame.groupby(geo, sort=False, dropna=False).ngroup().to_numpy(dtype=np.int64)
    qi = np.column_stack([unit] + [a.code_of(frame[a.column].tolist()) for a in attacker.quasi_identifiers])
    sens = np.column_stack([a.code_of(frame[a.column].tolist()) for a in attacker.sensitive])
    return pd.DataFrame({"unique": unique_mask(qi), "unique_with_sensitive": unique_mask(np.hstack([qi, sens]))},
                        index=frame.index)


@dataclass
class UnitMeasure:
    """One unit's counts, and (exact attack) the verified claims that pin failing persons' values."""

    counts: dict
    # ("confirmed" | "inferred_unlike", attribute or combination) -> the claims pinning those persons' values
    pins: dict[tuple[str, str], list[Verdict]] = field(default_factory=dict)
    undecided: list[Verdict] = field(default_factory=list)  # claims the engine could not settle (fail closed)

    def failing(self, max_confirmed: int | None, max_inferred: int | None) -> list[Verdict]:
        """The pinning claims of the persons a rule with these bounds fails on, attribute by attribute
        (and each measured combination), each claim once."""
        out: dict[Claim, Verdict] = {}
        for name, entry in self.counts.get("attributes", {}).items():
            for kind, bound in (("confirmed", max_confirmed), ("inferred_unlike", max_inferred)):
                if bound is not None and entry[kind] > bound:
                    out.update((v.claim, v) for v in self.pins.get((kind, name), ()))
        return list(out.values())


_CODES: dict[tuple, tuple[dict, dict]] = {}  # (attacker, its columns' domains) -> codes and touches, as units share them


def _codes(problem: Problem, attacker: AttackerModel) -> tuple[dict[str, np.ndarray], dict[str, list[set]]]:
    """Per attribute of the attacker model, each atom's code (:meth:`Attribute.atom_codes`), and per
    quasi-identifier the codes each atom touches: worked out once for the units whose columns have the same
    atoms (a state's blocks), read only."""
    attrs = (*attacker.quasi_identifiers, *attacker.sensitive)
    domains = tuple(problem.domains[problem.index(a.column)] for a in attrs)
    memo = (attacker, domains)
    found = _CODES.get(memo)
    if found is None:
        codes = {a.name: a.atom_codes(d.atoms) for a, d in zip(attrs, domains)}
        for array in codes.values():
            array.flags.writeable = False
        touches = {a.name: [set(a.code_of(sorted(atom, key=str)).tolist()) for atom in d.atoms]
                   for a, d in zip(attrs, domains) if a in attacker.quasi_identifiers}
        found = keep(_CODES, memo, (codes, touches), 4)
    return found


class _Persons:
    """One unit's persons as the attacker model sees them: code keys of the true rows, per attribute."""

    def __init__(self, problem: Problem, attacker: AttackerModel):
        self.problem, self.attacker = problem, attacker
        self.qis, self.sensitive = attacker.quasi_identifiers, attacker.sensitive
        self.qi_cols = sorted({problem.index(a.column) for a in self.qis})
        self.s_cols = sorted({problem.index(a.column) for a in self.sensitive})
        self.codes, self.touches = _codes(problem, attacker)
        truth = problem.truth if problem.truth is not None else np.zeros((0, len(problem.domains)), np.int64)
        self.truth = truth
        self.qi = self.keys(truth, self.qis)
        self.sens = self.keys(truth, self.sensitive)
        self.unique = unique_mask(self.qi)
        self._baselines: dict = {}  # the prior they were worked out for, its keys, and (prior, members) -> baselines
        self.notes = [f"the published tables do not tell apart every code of '{a.name}': it is measured at what "
                      "they distinguish" for a in (*self.qis, *self.sensitive) if (self.codes[a.name] < 0).any()]

    def keys(self, rows: np.ndarray, attrs: Sequence[Attribute]) -> np.ndarray:
        """Code index per attribute; where an atom mixes codes, -1 - atom (the atom itself)."""
        out = np.zeros((len(rows), len(attrs)), dtype=np.int64)
        for j, a in enumerate(attrs):
            col = self.problem.index(a.column)
            codes = self.codes[a.name][rows[:, col]] if len(rows) else np.zeros(0, np.int64)
            out[:, j] = np.where(codes >= 0, codes, -1 - rows[:, col]) if len(rows) else 0
        return out

    def baselines(self, prior: np.ndarray | None, members: Sequence[int] | None = None) -> dict[str, np.ndarray]:
        """Per person: unlike the unit's majority, and whether each baseline's guess is right, on the
        sensitive attributes ``members`` (indices; all of them by default) taken together. Worked out once
        per prior and members (a unit's counts ask for each several times; the parent's rows are many)."""
        cols = list(range(len(self.sensitive))) if members is None else list(members)
        memo = tuple(cols)  # the memo holds one prior's baselines: it is emptied when another prior comes
        if self._baselines.get("prior") is not prior:
            self._baselines = {"prior": prior}
        if memo in self._baselines:
            return self._baselines[memo]
        sens = self.sens[:, cols]
        mode = _mode(sens)
        right = (sens == mode).all(axis=1) if mode is not None else np.zeros(0, bool)
        if prior is not None and len(prior):
            if "keys" not in self._baselines:
                self._baselines["keys"] = self.keys(np.asarray(prior), self.sensitive)
            parent = _mode(self._baselines["keys"][:, cols])
        else:
            parent = mode
        out = self._baselines[memo] = {"unlike": ~right, "unit_mode": right,
                                       "parent_mode": (sens == parent).all(axis=1) if parent is not None else right}
        return out

    def counts(self, prior, putative, confirmed, inferred, by_attribute, open_by_attribute=None) -> dict:
        """The unit's counts: the Bureau's measures (every sensitive value together) and, under
        ``attributes``, each sensitive attribute and combination on its own (``open_by_attribute``:
        the exact attack's undecided values, n x attributes)."""
        base = self.baselines(prior)
        unlike = base["unlike"]
        return {
            "persons": len(self.truth), "unique": int(self.unique.sum()),
            "unique_with_sensitive": int(unique_mask(np.hstack([self.qi, self.sens])).sum()),
            "putative": int(putative.sum()), "confirmed": int(confirmed.sum()), "inferred": int(inferred.sum()),
            "by_attribute": {a.name: int(by_attribute[:, j].sum()) for j, a in enumerate(self.sensitive)},
            "unlike": int(unlike.sum()), "inferred_unlike": int((inferred & unlike).sum()),
            "baselines": {name: [int(base[name].sum()), int((base[name] & unlike).sum())]
                          for name in ("unit_mode", "parent_mode")},
            "attributes": {name: self._attribute(prior, members, putative, by_attribute, open_by_attribute)
                           for name, members in self.attacker.measured.items()},
        }

    def _attribute(self, prior, members, putative, by_attribute, open_by_attribute) -> dict:
        """One attribute's (or combination's) counts: persons linked with its value proved (``confirmed``),
        proved (``inferred``), unlike the unit's majority on it, both, the baselines, and undecided."""
        proved = by_attribute[:, list(members)].all(axis=1)
        base = self.baselines(prior, members)
        unlike = base["unlike"]
        out = {"confirmed": int((putative & proved).sum()), "inferred": int(proved.sum()), "unlike": int(unlike.sum()),
               "inferred_unlike": int((proved & unlike).sum()),
               "baselines": {name: [int(base[name].sum()), int((base[name] & unlike).sum())]
                             for name in ("unit_mode", "parent_mode")}}
        if open_by_attribute is not None:
            held = (by_attribute | open_by_attribute)[:, list(members)].all(axis=1) & ~proved
            out["undecided"] = {"confirmed": int((putative & held).sum()), "inferred_unlike": int((unlike & held).sum())}
        return out

    # -- exact attack -----------------------------------------------------------------------------
    def _allowed(self, key: np.ndarray) -> tuple[list[list[int]] | None, bool]:
        """Per quasi-identifying base column, every atom a person with this key may be in: the atoms that
        touch its code (or, where the person's atom mixes codes, any code that atom touches); and whether
        those atoms hold nobody else (each lies inside the code), so that their rows are the persons
        with this key."""
        out, exact = [], True
        for col in self.qi_cols:
            atoms = set(range(len(self.problem.domains[col])))
            for j, a in enumerate(self.qis):
                if self.problem.index(a.column) == col:
                    k, touches = int(key[j]), self.touches[a.name]
                    codes = touches[-1 - k] if k < 0 else {k}
                    atoms &= {i for i, t in enumerate(touches) if t & codes}
                    exact = exact and k >= 0 and all(self.codes[a.name][i] == k for i in atoms)
            out.append(sorted(atoms))
        return (out if np.prod([len(a) for a in out]) <= MAX_COMBINATIONS else None), exact

    def proofs(self, result, verify: Callable[[Claim], Verdict] | None = None) -> dict:
        """What the exact attack proves about each person (see the module docstring).

        A sensitive value c of a person whose quasi-identifiers allow the atom combinations T is proved
        when, for every t in T, no row in t can have another value: the unit has one dataset; or the
        verified claims R(t, m) and R(t + s, m) say all m rows in t have it; or ``verify`` (the exact
        engine) verifies R(t + a, 0) for every atom a outside c. Linked: every count R(t, m) proved
        (R(t, 0) by ``verify``), summing to one.
        """
        p, truth, n = self.problem, self.truth, len(self.truth)
        # pin() looks up claims over the quasi-identifiers, plus one column or the sensitive ones: only
        # those widths are indexed (hashing every verified claim's assignment was a tenth of this measure)
        widths = {len(self.qi_cols), len(self.qi_cols) + 1, len(self.qi_cols) + len(self.s_cols)}
        verified = {v.claim.assignment: v for v in result.verdicts
                    if v.status == VERIFIED and len(v.claim.assignment) in widths}
        whole = bool(result.reconstructed)  # one consistent dataset: every true claim holds in all
        groups: dict[tuple, list[int]] = {}
        for i, t in enumerate(map(tuple, truth[:, self.qi_cols].tolist())):
            groups.setdefault(t, []).append(i)
        zeros: dict[tuple, Verdict] = {}
        memo: dict[tuple, tuple] = {}

        def pin(assign: tuple, m: int) -> Verdict | None:
            v = verified.get(assign)
            if v is not None and v.claim.m == m:
                return v
            return Verdict(Claim(assign, m), VERIFIED) if whole and assign else None

        def zero(assign: tuple) -> Verdict:
            """R(assign, 0): true in the one dataset, or asked of the engine once."""
            if assign not in zeros:
                zeros[assign] = Verdict(Claim(assign, 0), VERIFIED) if whole else verify(Claim(assign, 0))
            return zeros[assign]

        def counted(t: tuple) -> bool:
            m, base = len(groups.get(t, ())), tuple(zip(self.qi_cols, t))
            if whole or (not base and p.n_rows == (m, m)) or (base and pin(base, m) is not None):
                return True
            return bool(base) and m == 0 and verify is not None and zero(base).status == VERIFIED

        def joint(t: tuple) -> Verdict | None:
            """R(t + the sensitive atoms its rows share, m), when proved with R(t, m)."""
            rows = groups.get(t)
            first = truth[rows[0], self.s_cols] if rows else None
            if not rows or not (truth[rows][:, self.s_cols] == first).all() or not counted(t):
                return None
            return pin(tuple(sorted(tuple(zip(self.qi_cols, t)) + tuple(zip(self.s_cols, first.tolist())))),
                       len(rows))

        def holds(t: tuple, j: int, code: int) -> tuple[str, Verdict | None]:
            """(proved | not | undecided, a claim the proof rests on) for 'every row in t has this code'."""
            if (t, j, code) in memo:
                return memo[(t, j, code)]
            a = self.sensitive[j]
            col, inside = p.index(a.column), self.codes[a.name] == code
            rows, base = groups.get(t, []), tuple(zip(self.qi_cols, t))
            atoms = set(truth[rows, col].tolist())
            own = pin(tuple(sorted(base + ((col, atoms.pop()),))), len(rows)) \
                if len(atoms) == 1 and counted(t) else None
            outside = np.flatnonzero(~inside).tolist()
            if not inside[truth[rows, col]].all():
                out: tuple = ("not", None)  # a true row in t has another value
            elif rows and (joint(t) or own):
                out = ("proved", joint(t) or own)
            elif whole:
                out = ("proved", zero(tuple(sorted(base + ((col, outside[0]),)))) if outside and base else None)
            elif verify is None:
                out = ("not", None)
            else:
                out = ("proved", None)
                for atom in outside:
                    v = zero(tuple(sorted(base + ((col, atom),))))
                    if v.status == REFUTED:
                        out = ("not", None)
                        break
                    out = (out[0] if v.status == VERIFIED else "undecided", out[1] or v)
            memo[(t, j, code)] = out
            return out

        linked, proved, undecided = np.zeros(n, bool), np.zeros(n, bool), np.zeros(n, bool)
        by_attr = np.zeros((n, len(self.sensitive)), bool)
        open_attr = np.zeros((n, len(self.sensitive)), bool)
        pins: list[list[Verdict | None]] = [[None] * len(self.sensitive) for _ in range(n)]
        allowed_of: dict[tuple, tuple] = {}
        for i in range(n):
            key = tuple(self.qi[i].tolist())
            if key not in allowed_of:
                allowed_of[key] = self._allowed(self.qi[i])
            allowed, exact = allowed_of[key]
            if allowed is None:
                continue
            combos = list(itertools.product(*allowed))
            statuses = []
            for j in range(len(self.sensitive)):
                code = int(self.sens[i, j])
                got = [holds(t, j, code) for t in combos] if code >= 0 else [("not", None)]
                status = "not" if any(s == "not" for s, _ in got) else \
                    "undecided" if any(s == "undecided" for s, _ in got) else "proved"
                by_attr[i, j], open_attr[i, j] = status == "proved", status == "undecided"
                statuses.append(status)
                if status == "proved":
                    pins[i][j] = next((v for _, v in got if v is not None), None)
            proved[i] = all(s == "proved" for s in statuses)
            undecided[i] = "not" not in statuses and not proved[i]
            linked[i] = exact and bool(self.unique[i]) and sum(len(groups.get(t, ())) for t in combos) == 1 \
                and all(counted(t) for t in combos)
        held = [v for v in zeros.values() if v.status == UNDECIDED]
        return {"linked": linked, "proved": proved, "by_attribute": by_attr, "undecided": undecided,
                "open_by_attribute": open_attr, "pins": pins, "held": held}

    # -- ranking attack ---------------------------------------------------------------------------
    def guesses(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per person: whether a reconstructed row has their quasi-identifiers, and the sensitive keys of the
        best-ranked such row (``rows`` in rank order)."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1, len(self.problem.domains))
        first: dict[tuple, int] = {}
        for i, key in enumerate(map(tuple, self.keys(rows, self.qis).tolist())):
            first.setdefault(key, i)
        sens = self.keys(rows, self.sensitive)
        at = np.array([first.get(tuple(k), -1) for k in self.qi.tolist()], dtype=np.int64)
        found = at >= 0
        guess = np.where(found[:, None], sens[np.maximum(at, 0)] if len(sens) else 0, -(1 << 40))
        return found, guess


def measure_exact(result, attacker: AttackerModel, prior: np.ndarray | None = None,
                  verify: Callable[[Claim], Verdict] | None = None, proofs: dict | None = None) -> UnitMeasure:
    """One unit's re-identification and inference by the exact attack (a ``UnitResult``; ``verify``: the
    engine's claim check, for what the verdicts leave open). ``proofs``: what the attack proves of each
    person (:meth:`_Persons.proofs`), used when given, else worked out and put there (None: not kept);
    it does not depend on the prior."""
    persons = _Persons(result.problem, attacker)
    got = proofs if proofs else persons.proofs(result, verify)
    if proofs is not None and not proofs:
        proofs.update(got)
    confirmed = got["linked"] & got["proved"]
    counts = persons.counts(prior, got["linked"], confirmed, got["proved"], got["by_attribute"],
                            got["open_by_attribute"])
    unlike = persons.baselines(prior)["unlike"]
    counts["undecided"] = {"confirmed": int((got["linked"] & got["undecided"]).sum()),
                           "inferred_unlike": int((unlike & got["undecided"]).sum())}
    pins: dict[tuple[str, str], list[Verdict]] = {}
    for name, members in attacker.measured.items():
        proved = got["by_attribute"][:, list(members)].all(axis=1)
        # a combination falls with any one of its values: one attribute's pin is enough to defeat
        pinned = [next((got["pins"][i][j] for j in members if got["pins"][i][j] is not None), None)
                  for i in range(len(proved))]
        for kind, who in (("confirmed", got["linked"] & proved),
                          ("inferred_unlike", proved & persons.baselines(prior, members)["unlike"])):
            pins[(kind, name)] = [pinned[i] for i in np.flatnonzero(who) if pinned[i] is not None]
    if persons.notes:
        counts["notes"] = persons.notes
    return UnitMeasure(counts, pins, got["held"])


def proofs(result, attacker: AttackerModel, verify: Callable[[Claim], Verdict] | None = None) -> dict[str, np.ndarray]:
    """Per person of a unit (its true rows, in order): ``linked``, ``proved`` (every sensitive value),
    ``by_attribute`` (n x sensitive attributes) and ``undecided``, from the exact attack's ``UnitResult``."""
    got = _Persons(result.problem, attacker).proofs(result, verify)
    return {k: got[k] for k in ("linked", "proved", "by_attribute", "undecided")}


def measure_ranking(problem: Problem, ranked: Sequence, attacker: AttackerModel,
                    prior: np.ndarray | None = None) -> UnitMeasure:
    """One unit's re-identification and inference by a ranking (``((row atoms), frequency)``, best first):
    the top-n rows, n the unit's persons, are the reconstruction."""
    persons = _Persons(problem, attacker)
    top = [row for row, _ in list(ranked)[: problem.n_rows[1]]]
    found, guess = persons.guesses(np.array(top, dtype=np.int64))
    right = (guess == persons.sens) & (persons.sens >= 0)
    inferred = found & right.all(axis=1)
    putative = found & persons.unique
    counts = persons.counts(prior, putative, putative & inferred, inferred, found[:, None] & right)
    if persons.notes:
        counts["notes"] = persons.notes
    return UnitMeasure(counts)

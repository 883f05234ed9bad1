"""Cell statuses in the codes of the tools agencies use, both ways (docs/peers.md has the crosswalk
with its sources).

Writing maps each of our statuses to one code per system; reading maps every code a system defines to
the status it means for an attacker (published, or hidden as a primary or a secondary cell). Several
statuses share a code (a rounded count is "safe" to tau-Argus), so ``write(read(code))`` is the code
written for that meaning: a file written, read and written again is the same file.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import AuditError

PUBLISHED, PRIMARY, SECONDARY, STRUCTURAL, ROUNDED, NOISY = (
    "published", "primary", "secondary", "structural zero", "rounded", "noisy")
STATUSES = (PUBLISHED, PRIMARY, SECONDARY, STRUCTURAL, ROUNDED, NOISY)
HIDDEN = (PRIMARY, SECONDARY)


@dataclass(frozen=True)
class Codes:
    """One status in each system: tau-Argus's CellStatus number and SBS letter, sdcTable's sdcStatus,
    SDMX CL_CONF_STATUS, and GaussSuppression's ``primary`` / ``suppressed`` flags."""

    tau_argus: int
    sbs: str
    sdctable: str
    sdmx: str
    gauss: tuple[bool, bool]

    def __post_init__(self):
        if not 0 <= self.tau_argus <= 14 or self.sbs not in SBS_READ or self.sdctable not in SDCTABLE_READ \
                or self.sdmx not in SDMX_READ:
            raise ValueError(f"not a code of its system: {self}")


# tau-Argus: tauargus/model/CellStatus.java (sdcTools/tauargus); SBS letters: TauArgus::WriteSBSStaart
# (sdcTools/libtauargus, src/TauArgus.cpp); sdcTable: makeProblem()'s "Cell Status Codes" (R/makeProblem.R);
# SDMX: the global codelist SDMX:CL_CONF_STATUS (1.3); GaussSuppression: the primary and suppressed
# columns of GaussSuppressionFromData(output = "publish").
TAU_ARGUS_READ = {0: None, 1: PUBLISHED, 2: PUBLISHED, 3: PRIMARY, 4: PRIMARY, 5: PRIMARY, 6: PRIMARY, 7: PRIMARY,
                  8: PRIMARY, 9: PRIMARY, 10: PUBLISHED, 11: SECONDARY, 12: SECONDARY, 13: PUBLISHED, 14: STRUCTURAL}
SBS_READ = {"V": PUBLISHED, "A": PRIMARY, "B": PRIMARY, "C": PRIMARY, "F": PRIMARY, "D": SECONDARY, "-": STRUCTURAL}
SDCTABLE_READ = {"s": PUBLISHED, "z": PUBLISHED, "u": PRIMARY, "x": SECONDARY, "w": SECONDARY}
# a pre-tabulated table's (.tab, <STATUS> column) letters: S safe, P protected (forced to publish), U unsafe,
# M secondary by hand, E empty (an empty cell publishes 0: structural here)
TAB_READ = {"S": PUBLISHED, "P": PUBLISHED, "U": PRIMARY, "M": SECONDARY, "E": STRUCTURAL}
SDMX_READ = {"F": PUBLISHED, "A": PRIMARY, "C": PRIMARY, "G": PRIMARY, "M": PRIMARY, "O": PRIMARY, "T": PRIMARY,
             "D": SECONDARY, "S": SECONDARY, "N": SECONDARY, "E": SECONDARY, "X": SECONDARY}

CROSSWALK = {
    PUBLISHED: Codes(1, "V", "s", "F", (False, False)),
    PRIMARY: Codes(5, "A", "u", "A", (True, True)),        # our primaries are counts under the threshold
    SECONDARY: Codes(11, "D", "x", "D", (False, True)),
    STRUCTURAL: Codes(14, "-", "s", "F", (False, False)),  # no row can fall in it: published, 0 to everyone
    ROUNDED: Codes(1, "V", "s", "F", (False, False)),
    NOISY: Codes(1, "V", "s", "F", (False, False)),
}
SYSTEMS = ("tau_argus", "sbs", "sdctable", "sdmx", "gauss")


def code(status: str, system: str):
    """The code ``system`` gives our ``status`` (a pair of flags for ``gauss``)."""
    if status not in CROSSWALK:
        raise AuditError(f"unknown status '{status}'", "status", f"use one of {list(STATUSES)}")
    return getattr(CROSSWALK[status], system)


def read(value: str, system: str, where: str) -> str:
    """Our status for one code as ``system`` writes it (``gauss``: "primary,suppressed" flags);
    ``where`` names the file and row for the error."""
    text = str(value).strip()
    if system == "status":
        found = text if text in STATUSES else None
    elif system == "tau_argus":
        try:
            number = abs(int(float(text)))  # tau-Argus's audit writes a failing cell's status negated
        except ValueError:
            number = None
        found = TAU_ARGUS_READ.get(number)
    elif system == "gauss":
        primary, _, suppressed = text.partition(",")
        flags = [_flag(primary, where), _flag(suppressed, where)]
        found = (PRIMARY if flags[0] else SECONDARY) if flags[1] else PUBLISHED
    else:
        table = {"sbs": SBS_READ, "tab": TAB_READ, "sdctable": SDCTABLE_READ, "sdmx": SDMX_READ}[system]
        found = table.get(text.upper() if system in ("sbs", "tab", "sdmx") else text.lower())
    if found is None:
        known = {"status": STATUSES, "tau_argus": [k for k, v in TAU_ARGUS_READ.items() if v], "sbs": list(SBS_READ),
                 "tab": list(TAB_READ), "sdctable": list(SDCTABLE_READ), "sdmx": list(SDMX_READ), "gauss": ["TRUE", "FALSE"]}[system]
        raise AuditError(f"'{text}' is not a {system} status code", where, f"use one of {list(known)}")
    return found


def _flag(text: str, where: str) -> bool:
    t = text.strip().upper()
    if t in ("TRUE", "T", "1"):
        return True
    if t in ("FALSE", "F", "0"):
        return False
    raise AuditError(f"'{text}' is not a GaussSuppression flag", where, "use TRUE or FALSE")


NAMES = {"status": "status", "tau_argus": "tau-Argus status", "sbs": "tau-Argus SBS status",
         "tab": "tau-Argus .tab status",
         "sdctable": "sdcTable sdcStatus", "sdmx": "SDMX CONF_STATUS", "gauss": "GaussSuppression primary, suppressed"}


def describe(system: str, raw: str) -> str:
    """A code as its system names it, e.g. "tau-Argus status 11"."""
    return f"{NAMES[system]} {raw}"

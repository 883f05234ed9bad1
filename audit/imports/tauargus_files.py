"""tau-Argus's specification files read as they are written: metadata (``.rda``), batch files (``.arb``:
``<SPECIFYTABLE>``, ``<SAFETYRULE>``, ``<APRIORI>``) and a-priori files (``.hst``). Every error names the
file and line."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from ..errors import AuditError
from ..paths import check_lines, input_file
from ..specs.schema_hierarchy import read_hrc

TOTAL = "Total"  # tau-Argus's default total code
# .hst commands: S safe, U unsafe (primary), P protected (never suppressed), M / ML secondary (hidden),
# C / W cost, PL protection levels, AB a-priori bounds
HST_STATUS = {"S": "safe", "U": "unsafe", "P": "protected", "M": "secondary", "ML": "secondary"}


def scaled(text: str, name: str, decimals: int, where: str) -> int:
    """A number of a tau-Argus file (a decimal point or comma) in units of its last of ``decimals``."""
    try:
        value = Fraction(text.replace(",", ".")) * 10 ** decimals
    except (ValueError, ZeroDivisionError):
        raise AuditError(f"'{name}' is '{text}', not a number", where, "give numbers (a decimal point or comma)") from None
    if value.denominator != 1:
        raise AuditError(f"'{name}' is {text}, more decimals than <DECIMALS> {decimals}", where,
                         f"round it, or raise <DECIMALS> for {name}")
    return int(value)


def read_text(path: Path, what: str) -> list[str]:
    """The lines of a text file (UTF-8, else Latin-1 as tau-Argus's Windows files often are)."""
    if not input_file(Path(path), what).is_file():
        raise AuditError("file not found" if not Path(path).exists() else f"is a folder, not a {what}", str(path),
                         f"give the path of the {what}")
    check_lines(Path(path))
    raw = Path(path).read_bytes()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    return text.splitlines()


def _tokens(text: str, where: str) -> list[str]:
    """Words and quoted strings of a metadata line (quotes removed)."""
    out = []
    for m in re.finditer(r'"([^"]*)"|(\S+)', text):
        out.append(m.group(1) if m.group(1) is not None else m.group(2))
    if text.count('"') % 2:
        raise AuditError("a quote is not closed", where, 'close the quoted name, e.g. <HIERCODELIST> "region.hrc"')
    return out


@dataclass(frozen=True)
class Variable:
    """One variable of an ``.rda`` file: where it is in a fixed-width record (``start``, ``length``; 0 in a
    free-format file), and its ``<...>`` attributes (upper case, each with its arguments)."""

    name: str
    start: int
    length: int
    attributes: dict = field(default_factory=dict)
    line: str = ""

    def has(self, *tags: str) -> bool:
        return any(t in self.attributes for t in tags)

    @property
    def explanatory(self) -> bool:
        return self.has("RECODEABLE", "CATEGORICAL")

    @property
    def numeric(self) -> bool:
        return self.has("NUMERIC")

    @property
    def decimals(self) -> int:
        return int((self.attributes.get("DECIMALS") or ["0"])[0])

    @property
    def total(self) -> str:
        return (self.attributes.get("TOTCODE") or [TOTAL])[0]


@dataclass(frozen=True)
class Metadata:
    path: Path
    variables: tuple[Variable, ...]
    separator: str | None = None  # None: fixed-width records (.asc)
    names_in_front: bool = False  # <NAMESINFRONT>: the data's first line names the variables

    def variable(self, name: str, where: str) -> Variable:
        found = next((v for v in self.variables if v.name.lower() == name.lower()), None)
        if found is None:
            raise AuditError(f"variable '{name}' is not in {self.path}", where,
                             f"use one of {[v.name for v in self.variables]}")
        return found


def read_rda(path: Path) -> Metadata:
    """A tau-Argus metadata file: ``NAME start length [missing codes]`` (fixed width) or ``NAME [length ...]``
    after ``<SEPARATOR> ";"`` (free format), each followed by its ``<ATTRIBUTE> args`` lines."""
    path = Path(path)
    variables: list[dict] = []
    separator, names_in_front = None, False
    for number, line in enumerate(read_text(path, ".rda metadata file"), 1):
        where = f"{path}:{number}"
        text = line.strip()
        if not text or text.startswith("//"):
            continue
        if text.startswith("<"):
            # one line may hold several attributes: <NUMERIC> <SHADOW>
            for tag, args in re.findall(r"<([^>]+)>([^<]*)", text):
                tag, values = tag.strip().upper(), _tokens(args, where)
                if tag == "SEPARATOR":
                    if variables or len(values) != 1 or len(values[0]) != 1:
                        raise AuditError("<SEPARATOR> takes one quoted character before the first variable", where,
                                         'e.g. <SEPARATOR> ";" on the first line')
                    separator = values[0]
                elif tag == "NAMESINFRONT" and not variables:
                    names_in_front = True
                elif not variables:
                    raise AuditError(f"<{tag}> comes before any variable", where,
                                     "start the file with a variable line: NAME start length")
                else:
                    variables[-1]["attributes"][tag] = values
            continue
        words = _tokens(text, where)
        if separator is None:
            if len(words) < 3 or not (words[1].isdigit() and words[2].isdigit()) or int(words[1]) < 1:
                raise AuditError(f"'{text}' is not 'NAME start length' of a fixed-width record", where,
                                 'give each variable its start column and length, e.g. Size 9 2, or put '
                                 '<SEPARATOR> ";" on the first line for a free-format (CSV) file')
            start, length = int(words[1]), int(words[2])
        else:
            start, length = 0, 0
        if any(v["name"].lower() == words[0].lower() for v in variables):
            raise AuditError(f"variable '{words[0]}' is defined twice", where, "give every variable its own name")
        variables.append({"name": words[0], "start": start, "length": length, "attributes": {}, "line": where})
    if not variables:
        raise AuditError("no variables", str(path), "an .rda file lists one variable a line: NAME start length")
    return Metadata(path, tuple(Variable(**v) for v in variables), separator, names_in_front)


@dataclass(frozen=True)
class Rule:
    """One safety rule of ``<SAFETYRULE>``: its name (FREQ, NK, P, ZERO, ...), integer or decimal arguments,
    and its place among the rules of its kind (tau-Argus: the first ones the individual level, later the
    holding level)."""

    name: str
    args: tuple[float, ...]
    index: int


@dataclass(frozen=True)
class TableSpec:
    """A ``<SPECIFYTABLE>``: explanatory variables, response (``<freq>`` for a frequency table), shadow and
    cost, its rules, a-priori files and the batch line it is on."""

    explanatory: tuple[str, ...]
    response: str
    shadow: str = ""
    cost: str = ""
    where: str = ""
    rules: tuple[Rule, ...] = ()
    rules_where: str = ""
    apriori: tuple = ()  # (path, separator, where)

    @property
    def frequency(self) -> bool:
        return self.response.lower() == "<freq>"


@dataclass(frozen=True)
class Batch:
    path: Path
    microdata: Path | None
    tabledata: Path | None
    metadata: Path
    tables: tuple[TableSpec, ...]
    other: tuple[tuple[str, str], ...]  # (command, where) of commands that set nothing we read


def _quoted_list(text: str, where: str) -> list[str]:
    names = re.findall(r'"([^"]*)"', text)
    if not names or re.sub(r'"[^"]*"|\s', "", text):
        raise AuditError(f"expected quoted variable names, not '{text.strip()}'", where,
                         'e.g. <SPECIFYTABLE> "Size""Region"|"Var2"||')
    return names


def _specify(text: str, where: str) -> TableSpec:
    parts = text.split("|")
    if len(parts) < 2:
        raise AuditError("a table needs explanatory variables and a response, separated by '|'", where,
                         'e.g. <SPECIFYTABLE> "Size""Region"|"Var2"|| (or |<freq>|| for a frequency table)')
    explanatory = _quoted_list(parts[0], where)
    unquote = lambda s: s.strip().strip('"').strip()  # noqa: E731
    response = unquote(parts[1])
    if not response:
        raise AuditError("no response variable", where, "name one after the first '|', or <freq> for counts")
    cost = unquote(parts[3].split(",")[0]) if len(parts) > 3 else ""
    return TableSpec(tuple(explanatory), response, unquote(parts[2]) if len(parts) > 2 else "", cost, where)


RULE_ARGS = {"FREQ": (2,), "NK": (2,), "P": (1, 2, 3), "ZERO": (1,), "REQ": (4,), "WGT": (1,), "MIS": (1,),
             "MAN": (1,)}


def _rules(text: str, where: str) -> tuple[Rule, ...]:
    out: list[Rule] = []
    for part in (p.strip() for p in text.split("|")):
        if not part:
            continue
        m = re.fullmatch(r"([A-Za-z]+)\s*\(([^()]*)\)", part)
        name = m.group(1).upper() if m else ""
        if name not in RULE_ARGS:
            raise AuditError(f"'{part}' is not a safety rule", where,
                             "use FREQ(n,range), NK(n,k), P(p,n) or P(p,q,n), ZERO(range), REQ(...), WGT(0|1), "
                             "MIS(0|1) or MAN(margin), separated by '|'")
        try:
            args = tuple(float(a) for a in m.group(2).split(","))
        except ValueError:
            raise AuditError(f"'{part}': arguments must be numbers", where, "e.g. NK(2,75)") from None
        if len(args) not in RULE_ARGS[name]:
            raise AuditError(f"'{part}' takes {' or '.join(map(str, RULE_ARGS[name]))} numbers", where,
                             {"FREQ": "e.g. FREQ(3,30)", "NK": "e.g. NK(2,75)", "P": "e.g. P(10,1)"}.get(name, ""))
        out.append(Rule(name, args, sum(r.name == name for r in out)))
    return tuple(out)


def read_arb(path: Path) -> Batch:
    """A tau-Argus batch file: the data and metadata it opens, its tables with their safety rules and
    a-priori files; other commands are kept by name (the caller says they were not mapped)."""
    path = Path(path)
    here = path.parent
    microdata = tabledata = metadata = None
    tables: list[TableSpec] = []
    other = []
    for number, line in enumerate(read_text(path, ".arb batch file"), 1):
        where = f"{path}:{number}"
        text = line.strip()
        if not text or text.startswith("//") or text.startswith("\\\\"):
            continue
        m = re.match(r"(<[A-Za-z]+>)\s*(.*)", text)
        if not m:
            raise AuditError(f"'{text}' is not a batch command", where, "each line starts with a <COMMAND>")
        command, rest = m.group(1).upper(), m.group(2)
        if command in ("<OPENMICRODATA>", "<OPENTABLEDATA>", "<OPENMETADATA>"):
            file = beside(here, _quoted_list(rest, where)[0])
            if command == "<OPENMICRODATA>":
                microdata = file
            elif command == "<OPENTABLEDATA>":
                tabledata = file
            else:
                metadata = file
        elif command == "<SPECIFYTABLE>":
            tables.append(_specify(rest, where))
        elif command == "<SAFETYRULE>":
            if not tables or tables[-1].rules_where:
                raise AuditError("<SAFETYRULE> must follow its <SPECIFYTABLE>", where,
                                 "give each table one <SAFETYRULE> line right after it")
            tables[-1] = _replace(tables[-1], rules=_rules(rest, where), rules_where=where)
        elif command in ("<APRIORI>", "<APRIORY>"):
            m2 = re.fullmatch(r'"([^"]+)"\s*,\s*(\d+)\s*,\s*"([^"]+)"(.*)', rest.strip())
            if not m2:
                raise AuditError(f"'{rest.strip()}' is not 'FILE, table, separator'", where,
                                 'e.g. <APRIORI> "last_year.hst", 1, ";"')
            number_ = int(m2.group(2))
            if not 1 <= number_ <= len(tables):
                raise AuditError(f"table {number_} is not specified above", where,
                                 f"number the tables from 1 to {len(tables)} in the order of <SPECIFYTABLE>")
            t = tables[number_ - 1]
            tables[number_ - 1] = _replace(t, apriori=t.apriori + ((beside(here, m2.group(1)), m2.group(3), where),))
        else:
            other.append((command, where))
    if metadata is None:
        raise AuditError("no <OPENMETADATA>", str(path), 'add <OPENMETADATA> "FILE.rda" after the data file')
    if microdata is None and tabledata is None:
        raise AuditError("no <OPENMICRODATA> (nor <OPENTABLEDATA>)", str(path), 'add <OPENMICRODATA> "FILE.asc"')
    if not tables:
        raise AuditError("no <SPECIFYTABLE>", str(path), 'add e.g. <SPECIFYTABLE> "Size""Region"|<freq>||')
    return Batch(path, microdata, tabledata, metadata, tuple(tables), tuple(other))


def beside(folder: Path, name: str) -> Path:
    """``name`` in ``folder``, matched without regard to case when only that finds it (tau-Argus's batch
    files come from Windows: TestRecode.arb opens "tau_testW.rda" for Tau_TestW.rda)."""
    path = folder / name.replace("\\", "/")
    if not path.exists() and path.parent.is_dir():
        found = [p for p in path.parent.iterdir() if p.name.lower() == path.name.lower()]
        if len(found) == 1:
            return found[0]
    return path


def hierarchy_file(var: Variable, folder: Path) -> tuple[dict, list[str], dict]:
    """A variable's ``<HIERCODELIST>`` ``.hrc`` file (UTF-8, else Latin-1): node -> its codes, every code in
    file order, and the schema's entry naming the file."""
    lead = (var.attributes.get("HIERLEADSTRING") or ["@"])[0]
    if lead != "@":
        raise AuditError(f"hierarchy lead string '{lead}' is not read", var.line,
                         "write the .hrc file with '@' (tau-Argus's default) and drop <HIERLEADSTRING>")
    path = beside(folder, var.attributes["HIERCODELIST"][0])
    spec = {"from": var.name, "hrc": str(path.resolve())}
    try:
        tree, listed = read_hrc(path, "utf-8", f"{var.name}_h")
    except AuditError:
        tree, listed = read_hrc(path, "latin-1", f"{var.name}_h")
        spec["encoding"] = "latin-1"
    return tree, list(listed), spec


def _replace(spec: TableSpec, **changes) -> TableSpec:
    return TableSpec(**{**spec.__dict__, **changes})


@dataclass(frozen=True)
class HstLine:
    """One a-priori line: the cell's codes (one per explanatory variable, the total code for a margin), its
    command (S, U, P, M, ML, C, W, PL, AB) and numbers (a cost; lower and upper protection levels)."""

    codes: tuple[str, ...]
    command: str
    values: tuple[float, ...]
    where: str


def read_hst(path: Path, separator: str, dimensions: int) -> list[HstLine]:
    """An ``.hst`` a-priori file: per line ``code; code; ...; COMMAND[; number[; number]]``, ``dimensions``
    codes (the table's explanatory variables), fields split at ``separator``."""
    out = []
    for number, line in enumerate(read_text(Path(path), ".hst a-priori file"), 1):
        where = f"{path}:{number}"
        if not line.strip():
            continue
        fields = [f.strip().strip('"').strip() for f in line.split(separator)]
        if len(fields) <= dimensions:
            raise AuditError(f"{len(fields)} fields split at '{separator}'; a line needs the {dimensions} codes of "
                             "the table's variables and a command", where,
                             f"e.g. {separator.join(['code'] * dimensions)}{separator}u (or check the separator in "
                             "<APRIORI>)")
        command = fields[dimensions].upper()
        needs = {"C": 1, "W": 1, "PL": 2, "AB": 2}.get(command, 0)
        if command not in HST_STATUS and not needs:
            raise AuditError(f"unknown a-priori command '{fields[dimensions]}'", where,
                             "use S (safe), U (unsafe), P (protected), M or ML (secondary), C cost, PL lower upper")
        try:
            values = tuple(float(v.replace(",", ".")) for v in fields[dimensions + 1: dimensions + 1 + needs])
        except ValueError:
            raise AuditError(f"'{command}' needs {needs} number(s) after it", where,
                             f"e.g. {separator.join(['code'] * dimensions)}{separator}{command}{separator}5") from None
        if len(values) != needs:
            raise AuditError(f"'{command}' needs {needs} number(s) after it", where,
                             f"e.g. {separator.join(['code'] * dimensions)}{separator}{command}"
                             + f"{separator}5" * needs)
        if command in ("C", "W") and values[0] < 0 or command == "PL" and min(values) < 0:
            raise AuditError(f"'{command}' needs numbers 0 or more, not {values}", where, "give a non-negative value")
        out.append(HstLine(tuple(fields[:dimensions]), command, values, where))
    return out

"""The HTML report: self-contained, escaped, plain language, capped on large runs; renders in headless chromium
with no console error and no network request (install: apt-get install -y chromium)."""
from __future__ import annotations

import base64
import copy
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from audit.cli import run
from audit.findings.files import read_findings
from audit.outputs.report import CLAIMS_PER_UNIT, render
from audit.outputs.words import claim_text, describe_value

ROOT = Path(__file__).resolve().parents[1]
PROTECTED = ROOT / "tests" / "data" / "protected"
HOUSEHOLDS = ROOT / "audit" / "samples_data" / "households"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]

RANK = {"pooled": {"k_over_u": [0.1, 0.25, 0.5, 1.0], "attack": [0.9, 0.8, 0.7, 0.5],
                   "baselines": {"holdout": [0.4, 0.4, 0.4, 0.4], "tract": [0.5, 0.45, 0.42, 0.4]}},
        "units": [{"geo": "000100/1003", "rows": 5, "ranked": [], "attack": [1.0, 1.0, 0.8, 0.6],
                   "baselines": {"holdout": [0.5, 0.5, 0.5, 0.5]}}]}
LINEAR = {"secret": "hisp", "accuracy": 0.96, "baseline": 0.7, "ci": [0.9, 0.99], "n_rows": 100, "n_queries": 200,
          "method": "lstsq", "sweep": [{"mitigation": m, "param": p, "accuracy": a, "answer_rmse": p / 2}
                                       for m in ("round", "noise") for p, a in ((1, 0.95), (5, 0.8), (20, 0.6))]}
PROTECTION = {"strategy": "suppress", "totals": {"units_protected": 1, "cells_suppressed": 2,
                                                 "persons_in_suppressed_cells": 3},
              "before": {"verdict": "fail", "summary": {"derived_singletons": 568}, "failing": []},
              "after": {"verdict": "pass", "summary": {"derived_singletons": 0}, "failing": []},
              "recommendation": {"strategy": "suppress", "cells": {"000100/1003": ["P18:family", "P19:size1"]},
                                 "cells_suppressed": 2},
              "units": [{"geo": "000100/1003", "status": "protected", "cells": ["P18:family", "P19:size1"],
                         "minimal": False, "lower_bound": 1}]}


@pytest.fixture(scope="module")
def findings(tmp_path_factory) -> Path:
    """A real run on one household block (5 households), with rank/linear/protection results beside it."""
    out = tmp_path_factory.mktemp("hh")
    data = out / "data.csv"
    data.write_text((PROTECTED / "data.csv").read_text())
    given = tmp_path_factory.mktemp("given")  # results made elsewhere, passed by name
    for name, doc in (("rank", RANK), ("linear", LINEAR)):
        (given / f"{name}.json").write_text(json.dumps(doc))
    (out / "protection.json").write_text(json.dumps(PROTECTION))
    code = run(["run", str(data), "-s", str(HOUSEHOLDS / "schema.yaml"), "-t", str(HOUSEHOLDS / "tables.yaml"),
                "-o", str(out), "--explain-budget", "10", "--quiet", "--rank-results", str(given / "rank.json"),
                "--linear-results", str(given / "linear.json")])
    assert code == 1  # the unprotected block fails the default rules
    return out / "findings.json"


def test_report_is_self_contained_and_complete(findings):
    html = (findings.parent / "report.html").read_text()
    doc = json.loads(findings.read_text())
    assert "CONFIDENTIAL" in html and 'id="verdict"' in html and "FAIL" in html
    for rule in doc["failing"]:
        assert rule["rule"] in html
    # no external resource: nothing loaded from a URL, and a CSP that forbids any network request
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?https?:", html, re.I)
    assert "default-src 'none'" in html
    assert "<svg" in html and 'id="chart-columns"' in html and 'id="chart-rank"' in html
    assert 'class="chart-linear"' in html and "96.0%" in html  # linear accuracy
    assert "000100/1003: P18:family" in html and "passes</b> the policy" in html  # recommended protection
    assert "Exactly one household in block 000100/1003: Householder&#39;s sex:" in html
    assert 'id="memo"' in html and "Recommended protection: suppress (2 cells suppressed" in html
    assert "<dt>not proved minimal</dt><dd>000100/1003: 2 cells, at least 1 needed</dd>" in html
    for section in ("units", "claims", "ranking", "linear", "protection", "appendix"):
        assert f'id="{section}"' in html
    assert "python-sat" in html and "seed" in html  # appendix: versions and seeds


def test_absent_optional_results_are_explained(findings):
    doc = json.loads(findings.read_text())
    html = render(doc)
    assert html.count("Not run.") == 2 and "No recommendation was computed" in html


def test_plain_language_from_schema_labels():
    schema = {"unit": "household", "columns": {"hhsex": {"kind": "categorical", "labels": {"0": "Male", "1": "Female"}},
                                              "age": {"kind": "integer", "labels": {}},
                                              "race": {"kind": "categorical", "labels": {"W": "White", "B": "Black"}}}}
    c = {"columns": {"hhsex": "1", "age": "65-74", "race": "W|B"}, "m": 1}
    assert claim_text(c, schema, {"level": "block", "geo": "1001"}) == \
        "Exactly one household in block 1001: Female; age: 65 to 74; White or Black."
    schema["columns"]["hhsex"]["title"] = "Householder's sex"
    schema["columns"]["age"]["title"] = "Age"
    assert claim_text(c, schema, {"level": "block", "geo": "1001"}) == \
        "Exactly one household in block 1001: Householder's sex: Female; Age: 65 to 74; White or Black."
    assert describe_value(schema, "age", "36") == "36"
    assert claim_text({**c, "m": 2}, schema, {"level": "block", "geo": "1"}).startswith("Exactly two households")


def test_values_are_escaped(findings):
    doc = json.loads(findings.read_text())
    evil = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    doc["schema"]["columns"]["hhsex"]["labels"] = {k: evil for k in doc["schema"]["columns"]["hhsex"]["labels"]}
    doc["units"][0]["geo"] = evil
    doc["inputs"]["tables"] = evil
    html = render(doc)
    assert evil not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert html.count("<script>") == 1  # only the report's own table sorter


def test_large_runs_are_capped(findings):
    doc = json.loads(findings.read_text())
    u = doc["units"][0]
    doc["units"] = []
    for i in range(260):
        v = copy.deepcopy(u)
        v["geo"] = f"000100/{i:04d}"
        doc["units"].append(v)
    doc["summary"]["units"] = 260
    html = render(doc)
    assert "Showing the 200 riskiest of 260 units; 60 more are in findings.json, and the search" in html
    assert html.count('class="claim"') == 20 * CLAIMS_PER_UNIT  # 20 units x 10 claims
    assert "more are in findings.json" in html and 'id="chart-distribution"' in html
    assert len(_unit_data(html)["rows"]) == 260 and "finds any of them" in html


def _unit_data(html: str) -> dict:
    return json.loads(html.split('<script type="application/json" id="unit-data">', 1)[1].split("</script>", 1)[0])


def test_the_unit_search_covers_the_riskiest_of_a_state(findings, monkeypatch):
    """A state's report does not grow with its blocks: the search's index holds the riskiest units only."""
    import audit.outputs.report as report

    monkeypatch.setattr(report, "INDEX_UNITS", 230)
    doc = json.loads(findings.read_text())
    u = doc["units"][0]
    doc["units"] = [{**copy.deepcopy(u), "geo": f"000100/{i:04d}"} for i in range(260)]
    doc["summary"]["units"] = 260
    html = render(doc)
    assert len(_unit_data(html)["rows"]) == 230 and "the search below finds any of the 230 riskiest." in html


def test_report_command_rerenders_with_other_rules(findings, tmp_path):
    out = tmp_path / "r.html"
    assert run(["report", str(findings), "--out", str(out), "--rules", "lenient", "--junit", str(tmp_path / "j.xml"),
                "--quiet"]) == 0
    assert "lenient" in out.read_text() and (tmp_path / "j.xml").is_file()
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert run(["report", str(bad)]) == 2


def test_pass_report(tmp_path):
    assert run(["run", str(PROTECTED / "data.csv"), "-s", str(PROTECTED / "schema.yaml"), "-t",
                str(PROTECTED / "tables.yaml"), "-o", str(tmp_path), "--quiet"]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "PASS" in html and "No derived singleton claim" in html


# ------------------------------------------------------------------ headless chromium (DevTools protocol)

class DevTools:
    """A minimal client for the Chrome DevTools Protocol over a websocket (standard library only)."""

    def __init__(self, ws_url: str):
        m = re.match(r"ws://([^:/]+):(\d+)(/.*)", ws_url)
        self.sock = socket.create_connection((m.group(1), int(m.group(2))), timeout=30)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET {m.group(3)} HTTP/1.1\r\nHost: {m.group(1)}:{m.group(2)}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            head += self.sock.recv(1)
        assert b" 101 " in head.split(b"\r\n")[0], head
        self.next_id, self.events = 0, []

    def _send(self, text: str) -> None:
        data = text.encode()
        mask = os.urandom(4)
        n = len(data)
        header = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else
                                  bytes([0x80 | 126]) + struct.pack(">H", n) if n < 65536 else
                                  bytes([0x80 | 127]) + struct.pack(">Q", n))
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def _exact(self, n: int) -> bytes:
        buf = b""
        while len(buf) < n:
            chunk = self.sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("devtools socket closed")
            buf += chunk
        return buf

    def _recv(self) -> dict:
        message = b""
        while True:
            b0, b1 = self._exact(2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack(">H", self._exact(2))[0]
            elif n == 127:
                n = struct.unpack(">Q", self._exact(8))[0]
            payload = self._exact(n)
            opcode = b0 & 0x0F
            if opcode == 9:  # ping
                continue
            if opcode == 8:
                raise ConnectionError("devtools closed the websocket")
            message += payload
            if b0 & 0x80:
                return json.loads(message)

    def call(self, method: str, session: str | None = None, **params) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params}
        if session:
            msg["sessionId"] = session
        self._send(json.dumps(msg))
        while True:
            reply = self._recv()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> None:
        end = time.time() + timeout
        while not any(e.get("method") == method for e in self.events):
            if time.time() > end:
                raise TimeoutError(method)
            self.events.append(self._recv())

    def drain(self, seconds: float) -> None:
        self.sock.settimeout(seconds)
        try:
            while True:
                self.events.append(self._recv())
        except (socket.timeout, TimeoutError):
            pass
        finally:
            self.sock.settimeout(30)


@pytest.fixture
def chromium(tmp_path):
    if not CHROMIUM.exists():
        pytest.skip("headless browser test needs Debian chromium at /usr/bin/chromium "
                    "(apt-get update && apt-get install -y chromium)")
    profile = tempfile.mkdtemp(prefix="audit-chromium-")
    proc = subprocess.Popen([str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
                             "--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    url, end = None, time.time() + 60
    while url is None and time.time() < end:
        line = proc.stderr.readline()
        if not line and proc.poll() is not None:
            break
        m = re.search(r"DevTools listening on (ws://\S+)", line)
        url = m.group(1) if m else None
    if url is None:
        proc.kill()
        pytest.fail("chromium did not start its DevTools endpoint")
    try:
        yield DevTools(url)
    finally:
        proc.kill()
        proc.wait(timeout=30)
        shutil.rmtree(profile, ignore_errors=True)


def open_page(chromium: DevTools, page: Path, width: int, height: int):
    """Load ``page`` in a new tab of ``width`` x ``height`` px; returns (session, js) where ``js(expr)``
    evaluates an expression in the page."""
    target = chromium.call("Target.createTarget", url="about:blank")["targetId"]
    session = chromium.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page", "Runtime", "Network", "Log"):
        chromium.call(f"{domain}.enable", session)
    chromium.call("Emulation.setDeviceMetricsOverride", session, width=width, height=height, deviceScaleFactor=1,
                  mobile=False)
    chromium.call("Page.navigate", session, url=page.as_uri())
    chromium.wait_for("Page.loadEventFired")

    def js(expr: str):
        return chromium.call("Runtime.evaluate", session, expression=expr, returnByValue=True)["result"].get("value")
    return session, js


def page_problems(chromium: DevTools) -> tuple[list, list]:
    """Requests the page made to anything but itself, and its console errors and exceptions."""
    requests = [e["params"]["request"]["url"] for e in chromium.events if e.get("method") == "Network.requestWillBeSent"]
    errors = [e["params"] for e in chromium.events
              if e.get("method") == "Runtime.exceptionThrown"
              or (e.get("method") == "Runtime.consoleAPICalled" and e["params"]["type"] in ("error", "assert"))
              or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error")]
    return [u for u in requests if not u.startswith(("file:", "data:", "about:"))], errors


def test_report_renders_in_headless_chromium(findings, chromium, tmp_path):
    page = findings.parent / "report.html"
    session, js = open_page(chromium, page, 1200, 900)

    # the sortable table works: sorting by unit name keeps every row
    rows = js("document.querySelectorAll('#unit-table tbody tr').length")
    js("document.querySelector('#unit-table th.sortable').click(); 1")
    assert js("document.querySelectorAll('#unit-table tbody tr').length") == rows >= 1
    chromium.drain(0.5)
    verdict = js("document.querySelector('#verdict .word').innerText")
    assert verdict.startswith("FAIL")
    assert js("document.querySelector('#confidential').innerText").startswith("CONFIDENTIAL")
    assert js("document.querySelectorAll('svg').length") >= 4
    assert js("document.querySelector('#verdict').getBoundingClientRect().top") < 300  # verdict at the top
    shot = base64.b64decode(chromium.call("Page.captureScreenshot", session, format="png")["data"])
    assert shot[:8] == b"\x89PNG\r\n\x1a\n" and len(shot) > 10_000
    (findings.parent / "report.png").write_bytes(shot)
    external, errors = page_problems(chromium)
    assert external == [] and errors == []
    assert any(e.get("method") == "Network.requestWillBeSent" and e["params"]["request"]["url"].startswith("file:")
               for e in chromium.events)  # the network domain did see the page load
    if os.environ.get("AUDIT_KEEP_SCREENSHOT"):
        shutil.copy(findings.parent / "report.png", os.environ["AUDIT_KEEP_SCREENSHOT"])


def test_screenshot_cli_shows_verdict(findings, tmp_path):
    """The plain --screenshot route (no DevTools) also renders the page."""
    if not CHROMIUM.exists():
        pytest.skip("needs /usr/bin/chromium (apt-get update && apt-get install -y chromium)")
    shot = tmp_path / "shot.png"
    dom = subprocess.run([str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom",
                          (findings.parent / "report.html").as_uri()], capture_output=True, text=True, timeout=120)
    assert "FAIL – do not publish as planned" in dom.stdout
    subprocess.run([str(CHROMIUM), *CHROMIUM_FLAGS, f"--user-data-dir={tmp_path / 'profile'}",
                    f"--screenshot={shot}", "--window-size=1200,900", (findings.parent / "report.html").as_uri()],
                   capture_output=True, timeout=120)
    assert shot.read_bytes()[:4] == b"\x89PNG"


# ------------------------------------------------------------------ the SF1 sample's report, as a reviewer reads it

SF1 = ROOT / "samples" / "sf1"


@pytest.fixture(scope="module")
def sf1_report(tmp_path_factory) -> tuple[str, dict, Path]:
    """The report of a real run on the SF1 sample (10 blocks, 175 persons): html, findings, path."""
    out = tmp_path_factory.mktemp("sf1")
    assert run(["run", str(SF1 / "data.csv"), "-s", str(SF1 / "schema.yaml"), "-t", str(SF1 / "tables.yaml"),
                "-o", str(out), "--quiet"]) == 1
    return (out / "report.html").read_text(), json.loads((out / "findings.json").read_text()), out / "report.html"


def visible_text(html: str) -> str:
    """What a reader sees: the page without its style, script, tags and attributes."""
    from html import unescape

    return unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(style|script)>.*?</\1>", "", html, flags=re.S)))


def test_sf1_claims_are_written_in_labels(sf1_report):
    html, doc, _ = sf1_report
    sentences = re.findall(r'<div class="claim">\s*<div>(.*?)</div>', html)
    assert len(sentences) >= 10
    names = [c for c in doc["schema"]["columns"]]
    for text in sentences:
        assert "Sex: " in text and "Age: " in text, text
        for name in names:  # no raw column name ("white N", "sex: M") anywhere in the sentence
            assert not re.search(rf"\b{name}\b", text), (name, text)
    # each explaining cell reads "label = published value", the value the unit publishes
    unit = next(u for u in doc["units"] if u["cells"]["explaining"])
    cells = re.findall(r'<span class="cell" title="([^"]+)">([^<]*) = <b>(\d+)</b></span>', html)
    assert cells and len(cells) == html.count('<span class="cell"')
    for key, label, value in cells:
        assert label.replace("&#39;", "'") == doc["cell_labels"][key]
    published = {k: v for u in doc["units"] for k, v in u["cells"]["explaining"].items() if u["geo"] == unit["geo"]}
    shown = re.search(rf'{re.escape(unit["geo"])}</b>.*?</details>', html, re.S).group(0)
    for key, label, value in re.findall(r'<span class="cell" title="([^"]+)">([^<]*) = <b>(\d+)</b>', shown):
        assert published[key] == int(value)
    # the verdict box names cells by label, never by id
    verdict = re.search(r'<section id="verdict".*?</section>', html, re.S).group(0)
    assert not any(key in verdict for key in doc["cell_labels"])
    assert "SEX BY AGE: " in verdict


def test_sf1_summary_signoff_and_baseline(sf1_report):
    html, doc, path = sf1_report
    text = visible_text(html)
    for leak in (r"\bnull\b", r"\bNone\b", r"\[\]", r"\{\}", r"\b1 [a-z ]*units\b"):
        assert not re.search(leak, text), leak
    memo = re.search(r'<div id="memo">.*?</div>', html, re.S).group(0)
    assert "can be rebuilt over every published attribute" in memo and "Worst block: " in memo
    assert "run audit protect" in memo  # no protection.json beside these findings
    signoff = re.search(r'<table id="signoff-table">.*?</table>', html, re.S).group(0)
    rows = re.findall(r"<tr><td>([^<]+)</td><td>([^<]+)</td><td><span class=\"tag (pass|fail|review|confidential)\">", signoff)
    tables = {k.split(":", 1)[0] for k in doc["cell_labels"]}
    assert {r[0].split(":", 1)[0] for r in rows if r[1] == "table"} == tables
    assert {r[0] for r in rows if r[1] == "audit file"} == {"findings.json", "claims.csv.gz", "junit.xml", "report.html"}
    assert {r[2] for r in rows if r[1] == "audit file"} == {"confidential"}  # never a red "fail"
    assert ("P12: SEX BY AGE", "table", "fail") in rows  # counts of one in every block
    assert "drawn at random from all the persons of its tract" in html and "Baseline: " in text


def test_block7_says_why_there_is_no_baseline(tmp_path):
    block7 = ROOT / "samples" / "block7"
    run(["run", str(block7 / "data.csv"), "-s", str(block7 / "schema.yaml"), "-t", str(block7 / "tables.yaml"),
         "-o", str(tmp_path), "--quiet"])
    html = (tmp_path / "report.html").read_text()
    assert "no level above block" in html and "Baseline: " not in visible_text(html)
    assert "1 geographic unit ·" in visible_text(html)
    # a hidden mean or median is named by its cell's label and statistic, as a hidden count is by its label
    doc = read_findings(tmp_path / "findings.json")
    labels = doc.cell_labels
    numeric = [k for u in doc.units for k in (u.get("intervals") or {}) if k.count(":") == 2]
    assert numeric
    assert all(f"{labels[k.rpartition(':')[0]]} ({k.rpartition(':')[2]})" in html for k in numeric[:3])


def test_sf1_report_in_headless_chromium(sf1_report, chromium):
    """At 1280 px: no horizontal overflow, no console error, no request beyond the file itself."""
    _, _, page = sf1_report
    _, js = open_page(chromium, page, 1280, 900)
    chromium.drain(0.5)
    assert js("document.documentElement.scrollWidth") <= 1280
    assert js("document.querySelectorAll('details.unit').length") >= 10
    assert js("document.querySelector('#memo').getBoundingClientRect().top") < 400  # the summary on the first screen
    assert js("document.documentElement.scrollHeight") < 12_000  # was 43,000 px before units and tables folded
    assert js("[...document.querySelectorAll('#toc a')].every(a => document.querySelector(a.getAttribute('href')))")
    assert page_problems(chromium) == ([], [])


def test_grids_colour_cells_and_highlight_claims(tmp_path, chromium):
    """A cross-classified table with primary and secondary suppression, drawn as a grid: cells
    coloured by status, hidden ones with their proved interval, and a hidden count's row highlighting
    its cell; at 1280 px with no overflow, console error or network request."""
    tables = tmp_path / "tables.yaml"
    tables.write_text("protection: {suppress_below: 2, complementary: true}\n"
                      "tables:\n  - {id: T, title: Households by sex and size, geography: block, by: [hhsex, size]}\n")
    head, *rows = (PROTECTED / "data.csv").read_text().splitlines()
    male1, male2, female1 = rows[1], rows[2], rows[3]  # households of size 1, 2 and 1
    female2 = ",".join(male2.split(",")[:2] + ["1"] + male2.split(",")[3:])
    data = tmp_path / "data.csv"  # one female household of size 2: primary, and a secondary to hide it
    data.write_text("\n".join([head] + [male1, male2, female1] * 3 + [female2]) + "\n")
    assert run(["run", str(data), "-s", str(PROTECTED / "schema.yaml"), "-t", str(tables),
                "-o", str(tmp_path / "out"), "--quiet"]) in (0, 1)
    doc = json.loads((tmp_path / "out" / "findings.json").read_text())
    grid = doc["units"][0]["grid"]
    assert {code[0] for code in grid.values()} >= {"p", "P", "S"}
    (table,) = doc["tables"]
    assert [a["column"] for a in table["by"]] == ["hhsex", "size"] and len(table["cells"]) == len(grid)
    page = tmp_path / "out" / "report.html"
    _, js = open_page(chromium, page, 1280, 900)
    chromium.drain(0.5)
    assert js("document.querySelectorAll('table.grid tbody tr').length") == 3  # Male, Female, Total
    assert js("document.querySelectorAll('table.grid td.s-pri').length") == sum(c == "P" for c in grid.values())
    assert js("document.querySelectorAll('table.grid td.s-sec').length") == sum(c == "S" for c in grid.values())
    colours = js("[...new Set([...document.querySelectorAll('table.grid td[data-k]')]"
                 ".map(td => getComputedStyle(td).backgroundColor))].length")
    assert colours >= 3  # published, primary, secondary look different
    legend = js("[...document.querySelectorAll('#tables .legend .g')].map(e => e.textContent)")
    assert {"published", "primary suppression", "secondary suppression"} <= set(legend)
    hidden = js("document.querySelector('table.grid td.s-pri').textContent")
    assert re.fullmatch(r"\[\d+(–\d+)?\]", hidden)  # the interval an attacker can prove
    row = "document.querySelector('#intervals tr[data-cells]')"
    key = js(f"{row}.getAttribute('data-cells')")
    js(f"{row}.dispatchEvent(new MouseEvent('mouseenter')); 1")
    lit = js("[...document.querySelectorAll('td.hl')].map(td => td.closest('table').dataset.t + ':' + td.dataset.k)")
    assert lit == [key]
    assert js("document.documentElement.scrollWidth") <= 1280
    assert page_problems(chromium) == ([], [])


def test_sf1_claims_highlight_their_cells(sf1_report, chromium):
    """Clicking a claim highlights exactly its explaining cells in the unit's grid and opens them."""
    _, doc, page = sf1_report
    _, js = open_page(chromium, page, 1280, 900)
    claim = "document.querySelector('.claim[data-cells]')"
    keys = js(f"{claim}.getAttribute('data-cells')").split()
    js(f"{claim}.click(); 1")
    lit = js("[...document.querySelectorAll('td.hl')].map(td => td.closest('table').dataset.t + ':' + td.dataset.k)")
    assert sorted(lit) == sorted(keys) and keys
    assert js("[...document.querySelectorAll('td.hl')].every(td => td.closest('details.gt').open)")
    assert sum("grid" in u for u in doc["units"]) == 10 and js("document.querySelectorAll('details.grid-unit').length") == 10
    assert js("document.documentElement.scrollWidth") <= 1280
    assert page_problems(chromium) == ([], [])


def test_unit_list_search_and_filter_in_headless_chromium(findings, chromium, tmp_path):
    """In a run of more units than the list shows, the search finds any unit by its key or name and the
    filter keeps the units of one status; rows drawn by the filter read as the template's own."""
    doc = json.loads(findings.read_text())
    u = doc["units"][0]
    doc["units"], doc["checks"] = [], []
    for i in range(260):
        v = copy.deepcopy(u)
        v["geo"] = f"000100/{i:04d}"
        v["status"] = "timeout" if i == 250 else "done"
        doc["units"].append(v)
        if i % 3 == 0:
            doc["checks"].append({"rule": "derived_singletons", "unit": v["geo"], "outcome": "fail", "count": 1,
                                   "message": "a derived singleton"})
    doc["summary"]["units"] = 260
    page = tmp_path / "report.html"
    page.write_text(render(doc))
    _, js = open_page(chromium, page, 1280, 900)
    rows = "document.querySelectorAll('#unit-table tbody tr')"

    def find(text: str, show: str = "") -> tuple[int, str]:
        js(f"(() => {{ const s = document.querySelector('#unit-search'), f = document.querySelector('#unit-show');"
           f" s.value = {json.dumps(text)}; f.value = {json.dumps(show)}; s.dispatchEvent(new Event('input')); }})()")
        return js(f"{rows}.length"), js("document.querySelector('#unit-count').textContent")

    served = js(f"[...{rows}].map(r => r.innerText)")
    assert len(served) == 200 and not any("000100/0259" in r for r in served)
    assert find("0259") == (1, "1 of 260 match")  # beyond the 200 listed
    assert js(f"{rows}[0].innerText").startswith("block 000100/0259")
    assert find("block 000100/0003")[0] == 1 and js(f"{rows}[0].innerText") == served[1]  # the same row, drawn by JS
    assert find("", "fail") == (87, "87 of 260 match")
    assert js(f"[...{rows}].every(r => r.classList.contains('bad'))")
    assert find("02", "fail")[0] == sum(i % 3 == 0 and "02" in f"000100/{i:04d}" for i in range(260))
    assert find("", "unfinished")[0] == 1 and js(f"{rows}[0].querySelector('.tag.warn').textContent") == "timeout"
    assert find("no such unit") == (0, "0 of 260 match")
    find("000100/0000")  # a unit whose claims are written out: its row links to them, and the link unfolds them
    js("document.querySelector('#claims details.unit[open]').open = false; 1")
    link = js(f"{rows}[0].querySelector('a.to').getAttribute('href')")
    assert link == "#claims-000100/0000"
    js(f"{rows}[0].querySelector('a.to').click(); 1")
    assert js(f"document.getElementById('{link[1:]}').open") is True
    assert find("", "pass") == (173, "173 of 260 match")
    assert find("000100/0") == (200, "260 of 260 match; the 200 riskiest are shown")
    assert find("") == (200, "")  # cleared: the listed rows again
    options = js("[...document.querySelectorAll('#unit-show option')].map(o => o.textContent)")
    assert "failing a rule (87)" in options and "not finished (timeout, too large, error) (1)" in options
    assert js("document.documentElement.scrollWidth") <= 1280
    assert page_problems(chromium) == ([], [])


ADULT = """age, workclass, sex, hours-per-week, native-country
39, State-gov, Male, 40, Cuba
50, Private, Male, 13, Cuba
28, Private, Female, 40, India
49, Private, Female, 16, India
31, Private, Female, 50, India
42, State-gov, Male, 40, India
"""
ADULT_SCHEMA = """unit: person
geography: [native-country]
columns:
  age: {type: integer, min: 17, max: 90}
  workclass: {type: categorical, values: [State-gov, Private]}
  sex: {type: categorical, values: [Male, Female]}
  hours-per-week: {type: integer, min: 1, max: 99}
recodes:
  work: {from: workclass, map: {gov: [State-gov], priv: [Private]}, labels: {gov: Government, priv: Private sector}}
"""
ADULT_TABLES = """protection: {suppress_below: 3}
tables:
  - {id: T1, title: Sex by work, geography: native-country, by: [sex, work]}
  - id: T2
    title: Hours
    geography: native-country
    stats: [count, mean(hours-per-week)]
    decimals: 2
    cells: [{id: A, label: Adults, where: {age: {min: 17}}}]
"""


def test_a_new_users_report_reads_well(tmp_path):
    """UCI Adult's shape (', ' separators, hyphenated names, a labelled map recode): the report counts
    'native-country units', rounds a mean's bounds, glosses its terms and never shows its own files as 'fail'."""
    for name, text in (("data.csv", ADULT), ("schema.yaml", ADULT_SCHEMA), ("tables.yaml", ADULT_TABLES)):
        (tmp_path / name).write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    assert run(["run", str(tmp_path / "data.csv"), "-s", str(tmp_path / "schema.yaml"), "-t",
                str(tmp_path / "tables.yaml"), "-o", str(out), "--quiet"]) == 1
    html = (out / "report.html").read_text(encoding="utf-8")
    text = " ".join(visible_text(html).split())
    assert "native-countrys" not in text and "2 native-country units" in text
    assert "Worst native-country: Cuba (2 persons: 0 rebuilt in full, 4 derived singleton claims)." in text
    assert "Hours: Adults (mean(hours-per-week)) 36.5 36.5 36.5 exact" in text  # 146/4 = 36.5, not 36.50
    assert "Hours: Adults (mean(hours-per-week)) 1 99 26.5 exact" in text  # Cuba's hidden mean: (40 + 13) / 2
    doc = json.loads((out / "findings.json").read_text())
    india = next(u for u in doc["units"] if u["geo"] == "India")
    assert india["intervals"]["T2:A:mean(hours-per-week)"] == [36.5, 36.5]  # the JSON keeps the value itself
    assert "Sex by work: Male, Private sector 1 1 1 exact" in text  # the map recode's label, not 'priv'
    signoff = re.search(r'<table id="signoff-table">.*?</table>', html, re.S).group(0)
    files = re.findall(r'<td>audit file</td><td><span class="tag (\w+)">', signoff)
    assert files and set(files) == {"confidential"}
    assert ("Terms : a derived singleton claim says that exactly one person has some values and follows only from "
            "combining several published numbers; a direct one is published as a count of one;") in text
    assert "an outer bound is an interval sure to hold the count, possibly wider than the true range" in text

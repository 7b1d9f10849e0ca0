"""The mutation-analysis report (docs/mutation.md "Report"): the paper's tables from one store.

    python3 -m dirigo.mutation_report DB [--out FILE.md] [--svg FILE.svg] [--dirigo BIN]
        [--source auto|cpu|gpu] [--only P,...] [--tol 1e-2] [--seed 0] [--top 12]

Table 1 pipeline counts (overall and by KernelBench level when substrate names carry one, L1_...),
Table 2 per-family miss rates of the official check and the other input protocols, the protocol
audit (every protocol `dirigo score` scores: built-in, dirigo's verdicts, harnesses), Table 3 the
greedy suites at budgets 1, 2, 3, 5 (full pool and held out) against the baseline, and the miss
patterns: which sets of protocols miss the same witnessed mutants, as a table and an UpSet-style
SVG. Every rate comes from `dirigo score --json` / `dirigo suite --json` (the C++ side decides
kills, witnesses and suites); this module only reads the store's raw mutant rows (status, rule,
family) for the counts before the kill matrix and lays the numbers out.
"""
from __future__ import annotations

import argparse
import os
import re
import sqlite3
import sys
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

from dirigo.report import find_dirigo, score as run_score, suite as run_suite

OFFICIAL = "kernelbench_v0"
BUDGETS = (1, 2, 3, 5)  # the paper's Table 3 columns


class ReportError(Exception):
    """A store the report cannot be made from; the message says why and what to run."""


def percent(part: int, whole: int) -> str:
    """The form of `dirigo score`'s tables: "12.5% (1/8)", "–" when nothing is counted."""
    return "–" if whole == 0 else f"{100.0 * part / whole:.1f}% ({part}/{whole})"


def level_of(problem: str) -> str | None:
    """KernelBench level from a substrate name (scripts/mutation-substrates.py names them L<level>_<id>)."""
    m = re.match(r"L(\d+)_", problem)
    return f"level {m.group(1)}" if m else None


def table(cols: list[str], rows: list[list[str]], left: int = 1) -> str:
    """Markdown table; the first `left` columns are text, the rest numbers (right-aligned)."""
    out = "| " + " | ".join(cols) + " |\n|" + "|".join("---" if i < left else "---:" for i in range(len(cols))) + "|\n"
    return out + "".join("| " + " | ".join(r) + " |\n" for r in rows)


# ---------------------------------------------------------------------------------------------------------
# the store's rows before the kill matrix

def store_rows(db: str) -> dict:
    """Per substrate (by problem name) the mutant counts by status, and every mutant's rule and family.
    Raises ReportError for a store without a kill matrix, so the caller prints one line."""
    if not os.path.isfile(db):
        raise ReportError(f"{db}: no such results store")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        missing = [t for t in ("substrates", "mutants", "inputs", "runs") if t not in tables]
        if missing:
            raise ReportError(f"{db}: not a kill-matrix store (no table {', '.join(missing)}; docs/mutation.md)")
        n_sub, n_mut, n_in = (con.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0]
                              for t in ("substrates", "mutants", "inputs"))
        if n_in == 0:
            raise ReportError(f"{db}: no kill matrix yet ({n_sub} substrates, {n_mut} mutants, no inputs): "
                              "register and run substrates first (python3 -m dirigo.bundle_km prep / run)")
        name = {sid: problem or Path(path).stem for sid, path, problem in con.execute(
            "SELECT s.id, s.path, (SELECT i.problem FROM inputs i WHERE i.substrate_id = s.id LIMIT 1) "
            "FROM substrates s")}
        seen = Counter(name.values())
        # two substrates of one problem stay apart, named as `dirigo score` names them
        name = {sid: n + (f"#{sid}" if seen[n] > 1 else "") for sid, n in name.items()}
        by_substrate: dict = {n: Counter() for n in name.values()}
        for sid, status, n in con.execute("SELECT substrate_id, status, COUNT(*) FROM mutants GROUP BY 1, 2"):
            by_substrate.setdefault(name.get(sid, f"#{sid}"), Counter())[status] += n
        mutants = {mid: (rule, family) for mid, rule, family in con.execute("SELECT id, rule, family FROM mutants")}
        return {"by_substrate": by_substrate, "mutants": mutants}
    finally:
        con.close()


# ---------------------------------------------------------------------------------------------------------
# tables

def groups_of(names) -> list[str]:
    """Columns of Table 1: "all", then each level present (and "no level" when some names have none)."""
    levels = {level_of(n) for n in names}
    if levels <= {None}:
        return ["all"]
    return ["all"] + sorted(l for l in levels if l) + (["no level"] if None in levels else [])


def in_group(problem: str, group: str) -> bool:
    return group == "all" or (level_of(problem) or "no level") == group


def pipeline_table(store: dict, sc: dict) -> str:
    groups = groups_of(list(store["by_substrate"]) + list(sc["population_by_problem"]))
    def st(group, *statuses):
        return sum(c[s] for n, c in store["by_substrate"].items() if in_group(n, group) for s in statuses)
    def pop(group, key):
        return sum(p[key] for n, p in sc["population_by_problem"].items() if in_group(n, group))
    rows = []
    def line(label, f, show=True):
        vals = [f(g) for g in groups]
        if show or any(vals):
            rows.append([label] + [str(v) for v in vals])
    line("problems (substrates in the store)",
         lambda g: sum(1 for n in store["by_substrate"] if in_group(n, g)))
    line("... with a kill matrix (inputs drawn)",
         lambda g: sum(1 for n in sc["population_by_problem"] if in_group(n, g)))
    line("mutants generated", lambda g: st(g, *{s for c in store["by_substrate"].values() for s in c}))
    line("− not compiled yet (registered with --no-compile, or the substrate skipped)",
         lambda g: st(g, "generated", "skipped"), show=False)
    line("− non-compiling", lambda g: st(g, "non-compiling"))
    line("= compiled", lambda g: st(g, "unique", "duplicate"))
    line("− duplicate compiled image (of another mutant or of the substrate)", lambda g: st(g, "duplicate"))
    line("= unique", lambda g: st(g, "unique"))
    line("− on problems without a kill matrix", lambda g: st(g, "unique") - pop(g, "mutants"), show=False)
    line("− equivalent (dirigo VERIFIED, not precision)", lambda g: pop(g, "equivalent"))
    line("− not run", lambda g: pop(g, "not_run"))
    line("= run", lambda g: pop(g, "mutants") - pop(g, "equivalent") - pop(g, "not_run"))
    line("− quarantined (crash or timeout on some input)", lambda g: pop(g, "quarantined"))
    line("− unwitnessed (no valid input kills them)", lambda g: pop(g, "unwitnessed"))
    line("= **witnessed**", lambda g: pop(g, "witnessed"))
    text = table(["stage"] + groups, rows)
    stopped = sc["population"]["unwitnessed_nonfinite"]
    if stopped:
        text += (f"\nOf the unwitnessed, {stopped} stopped the CPU interpreter at a NaN/inf intermediate where the "
                 "substrate compares (no comparison here; likely kills on a GPU).\n")
    return text


def input_protocols(sc: dict) -> list[dict]:
    """The protocols that run inputs, the official check first."""
    ps = [p for p in sc["protocols"] if not p["dirigo"]]
    return sorted(ps, key=lambda p: p["name"] != OFFICIAL)


def family_table(store: dict, sc: dict) -> str:
    ps = input_protocols(sc)
    rules: dict = {}
    for mid in sc["witnessed_mutants"]:
        rule, fam = store["mutants"].get(mid, ("?", "?"))
        rules.setdefault(fam, set()).add(rule)
    cols = ["family", "rules with a witness", "witnessed"] + [
        f"{p['name']} (tol {p['tol']:g})" + (" — official" if p["name"] == OFFICIAL else "") for p in ps]
    rows = []
    for fam in sc["families"]:
        n = sc["population_by_family"][fam]["witnessed"]
        cells = [fam, str(len(rules.get(fam, ()))), str(n)]
        for p in ps:
            t = p["by_family"].get(fam)
            cells.append(percent(t["missed"], t["witnessed"]) if t else "–")
        rows.append(cells)
    total = ["**total**", str(len(set().union(*rules.values())) if rules else 0), str(sc["population"]["witnessed"])]
    total += ["**" + percent(p["total"]["missed"], p["total"]["witnessed"]) + "**" for p in ps]
    return table(cols, rows + [total])


def top_rules_table(store: dict, sc: dict, top: int) -> str:
    official = next((p for p in sc["protocols"] if p["name"] == OFFICIAL), None)
    if official is None or not official["missed_mutants"]:
        return ""
    witnessed = Counter(store["mutants"].get(m, ("?", "?")) for m in sc["witnessed_mutants"])
    missed = Counter(store["mutants"].get(m, ("?", "?")) for m in official["missed_mutants"])
    order = sorted(missed, key=lambda k: (-missed[k], k))[:top]
    rows = [[rule, fam, percent(missed[(rule, fam)], witnessed[(rule, fam)])] for rule, fam in order]
    return table(["rule", "family", f"missed by {OFFICIAL} / witnessed"], rows, left=2)


def audit_table(sc: dict) -> str:
    rows = []
    for p in sc["protocols"]:
        if p.get("harness"):
            kind = "harness (verdicts)"
        elif p["dirigo"]:
            kind = "dirigo check (verdicts)"
        else:
            kind = f"inputs, tol {p['tol']:g}"
        if p["dirigo"]:
            checked = percent(p["checked"]["missed"], p["checked"]["witnessed"])
            false_rej = f"{p['problems_rejecting']} of {p['substrates_checked']} substrates"
        else:
            checked = "–"
            false_rej = f"{p['inputs_rejecting']} of {p['inputs_selected']} inputs ({p['problems_rejecting']} problems)"
            if p["inputs_uncompared"]:
                false_rej += f"; {p['inputs_uncompared']} not compared"
        name = f"**{p['name']}**" if p["name"] == OFFICIAL else p["name"]
        rows.append([name, kind, percent(p["total"]["missed"], p["total"]["witnessed"]), str(p["total"]["unrun"]),
                     checked, false_rej, str(p["problems_without_inputs"]) if not p["dirigo"] else "–"])
    return table(["protocol", "kind", "missed (of witnessed)", "not run in full", "missed, checked mutants only",
                  "false rejections of the correct substrate", "problems with no valid input"], rows, left=2)


def suite_table(su: dict) -> str:
    at = {b: i for i, b in enumerate(su["budgets"])}
    budgets = [b for b in BUDGETS if b in at]
    def rate(x):
        return f"{100.0 * x:.1f}%"
    rows = [[f"full pool ({su['witnessed']})"] + [rate(su["detection_full"][at[b]]) for b in budgets]
            + [rate(su["baseline_full"])],
            [f"held-out mutants ({su['held_out']})"] + [rate(su["detection_held_out"][at[b]]) for b in budgets]
            + [rate(su["baseline_held_out"])]]
    text = table(["scored on"] + [f"b={b}" for b in budgets] + [f"{su['baseline']} (official)"], rows)
    return text + (f"\nGreedy suite that reaches every coverable mutant: median {su['median_full_cover']:g} inputs "
                   f"per problem, at most {su['max_full_cover']} (tol {su['tol']:g}, split seed {su['seed']}).\n")


# ---------------------------------------------------------------------------------------------------------
# miss patterns

def unmeasured(sc: dict) -> list[str]:
    """Protocols that measured nothing: an input protocol the gate left no input on any problem or that
    ran in full on no witnessed mutant, a verdict protocol without a verdict on any witnessed mutant.
    They would miss every mutant or have no answer anywhere, so the patterns leave them out (the audit
    still lists them)."""
    return [p["name"] for p in sc["protocols"]
            if (p["checked"]["witnessed"] == 0 if p["dirigo"] else
                p["problems_without_inputs"] == len(sc["problems"]) or p["total"]["witnessed"] == 0)]


def miss_patterns(sc: dict) -> tuple[list[str], list[tuple[frozenset, int]], int]:
    """(protocols, [(set of protocols missing, mutants)] most common first, mutants missed by none)."""
    skip = set(unmeasured(sc))
    protocols = [p for p in sc["protocols"] if p["name"] not in skip]
    names = [p["name"] for p in protocols]
    unrun = {m for p in protocols for m in p.get("unrun_mutants", [])}  # a pattern needs every protocol's answer
    missing: dict = {m: set() for m in sc["witnessed_mutants"] if m not in unrun}
    for p in protocols:
        for m in p["missed_mutants"]:
            if m in missing:
                missing[m].add(p["name"])
    counts = Counter(frozenset(s) for s in missing.values())
    none = counts.pop(frozenset(), 0)
    order = {n: i for i, n in enumerate(names)}
    patterns = sorted(counts.items(), key=lambda kv: (-kv[1], sorted(order[n] for n in kv[0])))
    return names, patterns, none


def patterns_table(names: list[str], patterns, none: int, witnessed: int, top: int) -> str:
    if not patterns:
        return f"No witnessed mutant is missed by any protocol ({witnessed} witnessed).\n"
    rows = [[str(n), percent(n, witnessed)] + ["●" if p in s else "" for p in names] for s, n in patterns[:top]]
    text = table(["mutants", "of witnessed"] + names, rows, left=0)
    rest = patterns[top:]
    if rest:
        text += f"\n{len(rest)} more patterns: {sum(n for _, n in rest)} mutants.\n"
    return text + f"\nMissed by no protocol: {percent(none, witnessed)}.\n"


def upset_svg(names: list[str], patterns, totals: dict, top: int) -> str:
    """UpSet picture by hand (no plotting dependency): one bar per miss pattern (its mutants), under it
    the pattern's dots (filled = that protocol misses), at the left each protocol's total misses."""
    shown = patterns[:top]
    col, row, bar_h, name_w, set_w, pad = 26, 20, 150, 150, 90, 12
    x0 = pad + name_w + set_w + pad
    top_y = pad + 34  # below the title and the tallest bar's count
    y_matrix = top_y + bar_h + 10
    width = max(x0 + max(1, len(shown)) * col + pad, 480)  # the title's width
    height = y_matrix + len(names) * row + pad + 16
    peak = max([n for _, n in shown] + [1])
    peak_set = max(list(totals.values()) + [1])
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{pad}" y="{pad + 8}" font-size="12">Miss patterns of the witnessed mutants '
           '(filled = the protocol misses them)</text>']
    if not shown:
        out.append(f'<text x="{x0}" y="{top_y + bar_h // 2}">no witnessed mutant is missed by any protocol</text>')
    for k, (s, n) in enumerate(shown):
        x = x0 + k * col
        h = bar_h * n / peak
        out.append(f'<rect class="bar" x="{x + 4}" y="{top_y + bar_h - h:.1f}" width="{col - 8}" '
                   f'height="{h:.1f}" fill="#3b6ea8"><title>{escape(", ".join(p for p in names if p in s))}: '
                   f'{n}</title></rect>')
        out.append(f'<text x="{x + col / 2}" y="{top_y - 4 + bar_h - h:.1f}" text-anchor="middle" '
                   f'font-size="9">{n}</text>')
        ys = [y_matrix + i * row + row / 2 for i, p in enumerate(names) if p in s]
        if len(ys) > 1:
            out.append(f'<line x1="{x + col / 2}" y1="{min(ys)}" x2="{x + col / 2}" y2="{max(ys)}" '
                       'stroke="#333" stroke-width="2"/>')
        for i, p in enumerate(names):
            filled = p in s
            out.append(f'<circle cx="{x + col / 2}" cy="{y_matrix + i * row + row / 2}" r="5" '
                       f'fill="{"#333" if filled else "#ddd"}"/>')
    for i, p in enumerate(names):
        y = y_matrix + i * row
        w = set_w * totals.get(p, 0) / peak_set
        out.append(f'<text x="{pad + name_w - 4}" y="{y + row / 2 + 4}" text-anchor="end">{escape(p)}</text>')
        out.append(f'<rect class="setbar" x="{pad + name_w + set_w - w:.1f}" y="{y + 4}" width="{w:.1f}" '
                   f'height="{row - 8}" fill="#999"><title>{escape(p)}: {totals.get(p, 0)} missed</title></rect>')
    out.append(f'<text x="{pad + name_w + set_w}" y="{height - pad}" text-anchor="end" font-size="9">'
               'missed per protocol</text>')
    out.append("</svg>\n")
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------------------

def build(db: str, dirigo: str | None = None, source: str = "auto", only: str | None = None, tol: float = 1e-2,
          seed: int = 0, top: int = 12, svg_link: str | None = None) -> tuple[str, str]:
    """(Markdown, SVG) of the report on store `db`; raises ReportError for a store without a kill matrix."""
    store = store_rows(db)
    binary = find_dirigo(dirigo)
    sc = run_score(db, binary, source, only=only)
    su = run_suite(db, binary, "1..5", tol, seed, source, only)
    names, patterns, none = miss_patterns(sc)
    patterned = none + sum(n for _, n in patterns)
    totals = {p["name"]: len(p["missed_mutants"]) for p in sc["protocols"] if p["name"] in names}
    witnessed = sc["population"]["witnessed"]
    tols = ", ".join(f"{t:g}" for t in sc["witness_tolerances"])
    md = [f"Store `{os.path.basename(db)}`, runs from source `{source}`, witness tolerances {tols}; "
          f"{witnessed} witnessed mutants on {len(sc['problems'])} problems.\n",
          "#### Table 1: pipeline counts", pipeline_table(store, sc),
          f"#### Table 2: miss rate by family ({OFFICIAL} is the official check)\n", family_table(store, sc)]
    top_rules = top_rules_table(store, sc, 10)
    if top_rules:
        md += [f"Rules whose mutants {OFFICIAL} misses most:", top_rules]
    md += ["#### Protocol audit", audit_table(sc),
           "#### Table 3: greedy suites by input budget (percent of witnessed mutants detected)", suite_table(su)]
    if any(p["total"]["unrun"] for p in sc["protocols"]):
        md.append("The matrix is cut short (some protocols were not run in full on some mutants): the suites and "
                  "the official check beside them are scored on every witnessed mutant with the runs that "
                  "happened, so they count kills, not misses, where cells are missing.")
    md += ["#### Miss patterns (which protocols miss the same witnessed mutants)",
           patterns_table(names, patterns, none, patterned, top)]
    if patterned < witnessed:
        md.append(f"{witnessed - patterned} witnessed mutants are left out of the patterns: some protocol shown "
                  f"was not run in full on them (a matrix cut short), so it has no answer there.")
    if unmeasured(sc):
        md.append("Left out of the patterns, as they measured nothing here (no valid input on any problem, not run "
                  "in full on any witnessed mutant, or no verdict on any): " + ", ".join(unmeasured(sc)) + ".")
    if svg_link:
        md.append(f"![miss patterns]({svg_link})")
    return "\n\n".join(part.strip("\n") for part in md) + "\n", upset_svg(names, patterns, totals, top)


BEGIN, END = "<!-- mutation_report: begin -->", "<!-- mutation_report: end -->"


def write_report(path: Path, md: str) -> None:
    """Writes the report; into a file that already has the BEGIN/END markers (docs/mutation.md), only
    between them, so the reference text around a regenerated report stays as written."""
    old = path.read_text() if path.exists() else ""
    # a marker counts only on a line of its own: prose may quote it
    b = re.search("^" + re.escape(BEGIN) + "$", old, re.M)
    e = re.search("^" + re.escape(END) + "$", old[b.end():], re.M) if b else None
    if b and e:
        path.write_text(old[:b.end()] + "\n\n" + md + "\n" + old[b.end() + e.start():])
    else:
        path.write_text(md)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m dirigo.mutation_report", description=__doc__.split("\n")[0])
    ap.add_argument("db", help="SQLite results store with the kill matrix")
    ap.add_argument("--out", help="write the Markdown here (default: stdout); a file with the markers "
                    f"{BEGIN} ... {END} gets it between them")
    ap.add_argument("--svg", help="write the miss-pattern picture here (linked from the Markdown)")
    ap.add_argument("--dirigo", help="path of the dirigo binary")
    ap.add_argument("--source", default="auto", choices=("auto", "cpu", "gpu"))
    ap.add_argument("--only", help="only these protocols (comma-separated; they set the witness tolerances)")
    ap.add_argument("--tol", type=float, default=1e-2, help="the suites' tolerance")
    ap.add_argument("--seed", type=int, default=0, help="seed of the held-out split")
    ap.add_argument("--top", type=int, default=12, help="miss patterns shown")
    args = ap.parse_args(argv)
    link = None
    if args.svg:
        base = Path(args.out).resolve().parent if args.out else Path.cwd()
        link = os.path.relpath(Path(args.svg).resolve(), base)
    try:
        md, svg = build(args.db, args.dirigo, args.source, args.only, args.tol, args.seed, args.top, link)
    except ReportError as e:
        print(f"dirigo.mutation_report: {e}", file=sys.stderr)
        return 2
    if args.svg:
        Path(args.svg).write_text(svg)
    if args.out:
        write_report(Path(args.out), md)
    else:
        sys.stdout.write(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())

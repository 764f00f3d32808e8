#!/usr/bin/python3
"""Per-size figures of bench/sweep.py records (the probe of docs/synthesis.md, session 19).

    /usr/bin/python3 bench/probe/summary.py RUN.jsonl [BASELINES.jsonl]

For each tensor size (generated cases) or 'file' (task files): meshcast's time over the bound
(geomean, worst) and the best baseline's time over meshcast's (geomean, least); then the failed or
invalid strategies, any time below the bound, the cases where meshcast is slower than a baseline
by over 1e-7, the five longest meshcast syntheses and the twelve worst times over the bound.
BASELINES.jsonl supplies the other strategies' records for a run made with --strategies meshcast
(the baselines' code unchanged between the two)."""
import collections
import json
import math
import sys

TIE = 1e-7  # the records hold 9 significant digits


def main(argv):
    if len(argv) not in (2, 3):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    recs = [json.loads(line) for line in open(argv[1]) if line.strip()]
    if len(argv) == 3:
        base = {r["case"]: r for r in (json.loads(line) for line in open(argv[2]) if line.strip())}
        for r in recs:
            for s, d in base.get(r["case"], {}).get("strategies", {}).items():
                r["strategies"].setdefault(s, d)
    by, best = collections.defaultdict(list), collections.defaultdict(list)
    fails, below, slower, synth, empty = [], [], [], [], []
    for r in recs:
        key = "file" if r["pattern"] == "file" else f"{r['bytes'] >> 20}M"
        for s, d in r["strategies"].items():
            if d["status"] in ("failed", "invalid"):
                fails.append(f"{r['case']} {s}: {d.get('message', '')[:160]}")
            if "sim" in d and d["sim"] < r["bound"] * (1 - TIE):
                below.append(f"{r['case']} {s}")
        m = r["strategies"].get("meshcast", {})
        if "sim" not in m:
            continue
        if r["bound"] == 0:  # nothing to move: no ratio to take
            empty.append(r["case"])
            continue
        by[key].append(m["sim"] / r["bound"])
        synth.append((m["synth_s"], r["case"]))
        others = [d["sim"] for s, d in r["strategies"].items() if s != "meshcast" and "sim" in d]
        if others:
            best[key].append(min(others) / m["sim"])
            if m["sim"] > min(others) * (1 + TIE):
                slower.append(f"{r['case']} (best baseline {min(others) / r['bound']:.3f}, "
                              f"meshcast {m['sim'] / r['bound']:.3f})")

    def geo(a):
        return math.exp(sum(map(math.log, a)) / len(a))

    def row(k, a, b):
        tail = f" | best baseline/meshcast geomean {geo(b):.3f}, least {min(b):.3f}" if b else ""
        return f"{k:5s} {len(a):3d} cases: meshcast/bound geomean {geo(a):.3f}, worst {max(a):.3f}{tail}"

    for k in sorted(by, key=lambda k: (k == "file", len(k), k)):
        print(row(k, by[k], best[k]))
    print(row("all", [x for a in by.values() for x in a], [x for b in best.values() for x in b]))
    for title, items in (("failed or invalid", fails), ("time below the bound", below),
                         ("meshcast slower than a baseline", slower)):
        print(f"{title}: {len(items)}" + "".join(f"\n  {x}" for x in items))
    if empty:
        print(f"nothing to move: {len(empty)} ({', '.join(empty)})")
    synth.sort(reverse=True)
    print("longest meshcast syntheses: " + ", ".join(f"{c} {t:.1f} s" for t, c in synth[:5]))
    worst = sorted(((r["strategies"]["meshcast"]["sim"] / r["bound"], r["case"]) for r in recs
                    if "sim" in r["strategies"].get("meshcast", {}) and r["bound"] > 0),
                   reverse=True)[:12]
    print("worst meshcast/bound: " + ", ".join(f"{c} {x:.2f}" for x, c in worst))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

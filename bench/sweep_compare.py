#!/usr/bin/python3
"""Compares two runs of bench/sweep.py case by case, from the records each wrote with --jsonl.

    /usr/bin/python3 bench/sweep_compare.py OLD.jsonl[,OLD2.jsonl] NEW.jsonl[,NEW2.jsonl]

A change to the synthesizer or to the bound is judged on the same generated cases before and
after: how many meshcast schedules got faster or slower by over 1% (the geomean of old / new
simulated time), which bounds rose or fell, each moved case with its time over the bound before
and after, the syntheses over 2 s of wall clock, and, in the new run, every case where meshcast
is slower than a baseline or a strategy's time is below the bound (neither may happen). Cases
only one run holds, or without a meshcast time in both, are counted and left out. Exit status 2
for a wrong number of arguments, 1 when a file cannot be read as records, else 0."""
import json
import math
import sys

MOVED = 0.01   # a simulated time that changed by more than this fraction moved
BELOW = 1e-8   # the records hold 9 significant digits: a time that far below its bound is not below it
SLOW_S = 2.0   # synthesis over this many seconds of wall clock is counted


def load(arg):
    """The records of the comma-separated files, by case (a later record of a case wins)."""
    recs = {}
    for path in arg.split(","):
        with open(path) as f:
            for line in f:
                if line.strip():
                    rec = json.loads(line)
                    recs[rec["case"]] = rec
    return recs


def meshcast_of(rec):
    return rec["strategies"].get("meshcast", {})


def compare(old, new):
    """The report's lines for two runs' records (dicts by case)."""
    both = [c for c in new if c in old and meshcast_of(new[c]).get("sim")
            and meshcast_of(old[c]).get("sim")]
    lines = [f"cases in both: {len(both)} of new {len(new)}"]
    if not both:
        return lines
    speed = {c: meshcast_of(old[c])["sim"] / meshcast_of(new[c])["sim"] for c in both}
    geomean = math.exp(sum(math.log(s) for s in speed.values()) / len(speed))
    faster = [c for c in both if speed[c] > 1 + MOVED]
    slower = [c for c in both if speed[c] < 1 - MOVED]
    lines.append(f"meshcast old/new simulated time: geomean {geomean:.4f}; faster >1%: "
                 f"{len(faster)}, same: {len(both) - len(faster) - len(slower)}, "
                 f"slower >1%: {len(slower)}")
    rose = sum(new[c]["bound"] > old[c]["bound"] for c in both)
    fell = sum(new[c]["bound"] < old[c]["bound"] for c in both)
    lines.append(f"bounds: {rose} rose, {fell} fell")
    for c in sorted(faster + slower, key=lambda c: speed[c]):
        o, n = meshcast_of(old[c]), meshcast_of(new[c])
        lines.append(f"  {c:<45} x{1 / speed[c]:.3f}  ratio {o['sim'] / old[c]['bound']:.3f} -> "
                     f"{n['sim'] / new[c]['bound']:.3f}  synth {o.get('synth_s', 0):.2f} -> "
                     f"{n.get('synth_s', 0):.2f} s")
    slow_old = [meshcast_of(old[c]).get("synth_s", 0) for c in both]
    slow_new = [meshcast_of(new[c]).get("synth_s", 0) for c in both]
    lines.append(f"synth > {SLOW_S:g} s: old {sum(t > SLOW_S for t in slow_old)}, new "
                 f"{sum(t > SLOW_S for t in slow_new)}; max old {max(slow_old):.2f} new "
                 f"{max(slow_new):.2f}")
    beaten, below = [], []
    for c, rec in sorted(new.items()):
        mine = meshcast_of(rec).get("sim")
        for s, d in rec["strategies"].items():
            if not d.get("sim"):
                continue
            if s != "meshcast" and mine and d["sim"] < mine * (1 - 1e-3):
                beaten.append(f"{c} ({s} x{mine / d['sim']:.3f})")
            if d["sim"] < rec["bound"] * (1 - BELOW):
                below.append(f"{c} ({s})")
    lines.append("meshcast slower than a baseline (new): " + (", ".join(beaten) or "none"))
    lines.append("time below the bound (new): " + (", ".join(below) or "none"))
    return lines


def main(argv, doc=__doc__, name="sweep_compare", load=load, compare=compare):
    """The command: OLD and NEW read by load, the lines of compare(old, new) printed; shared with
    suite_compare.py (its own doc, name, load and compare)."""
    if len(argv) != 3:
        print(doc.split("\n\n")[1], file=sys.stderr)
        return 2
    try:
        lines = compare(load(argv[1]), load(argv[2]))
    except (OSError, ValueError, KeyError, ZeroDivisionError) as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

#!/usr/bin/python3
"""Compares two runs of the suites row by row, from the CSV files `meshcast bench --csv` wrote.

    /usr/bin/python3 bench/suite_compare.py OLD_DIR NEW_DIR

Each directory holds f_SUITE.csv for the suites it ran (`build/meshcast bench --suite SUITE --csv
> DIR/f_SUITE.csv`); a suite is compared where both directories hold it, on its rows with a
simulated time (not the `all` geomean rows, nor rows whose simulation stopped at its
allowance). Per suite: the rows in both, how many simulated times and bounds moved (by over one
part in 1e6), each moved meshcast row with its time over the bound before and after, meshcast's
time/bound geomean and worst before and after; then, in the new run, every row where meshcast
is slower than another strategy of the same case and every strategy's time below its bound
(neither may happen). Exit status 2 for a
wrong number of arguments, 1 when a directory holds no suite file or a file is not such a CSV,
else 0."""
import csv
import math
import sys
from pathlib import Path

import sweep_compare  # the command's frame, shared

MOVED = 1e-6   # relative change below this is the CSV's rounding
BELOW = 1e-8   # a time this far below its bound is rounding, not below it
SLOWER = 1e-3  # meshcast slower than a baseline by more than this fraction counts


def load(directory):
    """{suite: {(case, strategy): row}} for every f_*.csv in the directory."""
    suites = {}
    for path in sorted(Path(directory).glob("f_*.csv")):
        rows = {}
        with open(path, newline="") as f:
            try:
                for row in csv.DictReader(f):
                    # not the geomean rows, nor those whose simulation stopped at its
                    # allowance (their sim_s is a partial time, or 0)
                    if (row.get("sim_s") and row.get("suite") != "all"
                            and row.get("simulated", "yes") == "yes"):
                        rows[(row["case"], row["strategy"])] = row
            except csv.Error as e:
                raise ValueError(f"{path}: {e}") from e
        suites[path.stem[2:]] = rows
    if not suites:
        raise ValueError(f"{directory}: no f_SUITE.csv files")
    return suites


def ratio(row):
    return float(row["sim_s"]) / float(row["lower_bound_s"])


def moved(a, b):
    return abs(float(a) - float(b)) > MOVED * max(abs(float(a)), 1e-30)


def summary(rows):
    """(geomean, worst, worst case) of meshcast's time over the bound."""
    mine = [(ratio(r), case) for (case, s), r in rows.items() if s == "meshcast"]
    if not mine:
        return 0.0, 0.0, "-"
    geo = math.exp(sum(math.log(x) for x, _ in mine) / len(mine))
    worst = max(mine)
    return geo, worst[0], worst[1]


def compare_suite(name, old, new):
    both = [k for k in new if k in old]
    sims = [k for k in both if moved(old[k]["sim_s"], new[k]["sim_s"])]
    bounds = [k for k in both if moved(old[k]["lower_bound_s"], new[k]["lower_bound_s"])]
    lines = [f"{name}: {len(both)} rows in both; sim_s moved on {len(sims)}, bound moved on "
             f"{len(bounds)}"]
    for k in sorted(sims, key=lambda k: float(new[k]["sim_s"]) / float(old[k]["sim_s"])):
        if k[1] == "meshcast":
            o, n = old[k], new[k]
            lines.append(f"  {k[0]:<40} x{float(n['sim_s']) / float(o['sim_s']):.4f}  ratio "
                         f"{ratio(o):.4f} -> {ratio(n):.4f}")
    go, wo, co = summary(old)
    gn, wn, cn = summary(new)
    lines.append(f"  meshcast time/bound geomean {go:.4f} -> {gn:.4f}; worst {wo:.3f} ({co}) -> "
                 f"{wn:.3f} ({cn})")
    return lines


def faults(name, rows):
    """Rows of the new run where meshcast loses to another strategy or a time beats its bound."""
    out = []
    for (case, s), r in sorted(rows.items()):
        mine = rows.get((case, "meshcast"))
        if s != "meshcast" and mine and float(r["sim_s"]) < float(mine["sim_s"]) * (1 - SLOWER):
            out.append(f"  {name} {case}: meshcast slower than {s} x"
                       f"{float(mine['sim_s']) / float(r['sim_s']):.3f}")
        if float(r["sim_s"]) < float(r["lower_bound_s"]) * (1 - BELOW):
            out.append(f"  {name} {case}: {s} below its bound")
    return out


def compare(old, new):
    """The report's lines for two runs' suites."""
    lines, bad = [], []
    for name in sorted(new):
        if name in old:
            lines += compare_suite(name, old[name], new[name])
        bad += faults(name, new[name])
    lines.append("new run: " + ("none slower than a baseline, none below its bound" if not bad
                                else f"{len(bad)} faults"))
    return lines + bad


if __name__ == "__main__":
    sys.exit(sweep_compare.main(sys.argv, __doc__, "suite_compare", load, compare))

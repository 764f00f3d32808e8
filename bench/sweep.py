#!/usr/bin/python3
"""Sweep outside the suites: generated reshardings on real topologies that no bench case covers.

    /usr/bin/python3 bench/sweep.py [--topos A,B] [--sizes 4M,64M] [--patterns bcast,allgather]
                                    [--strategies meshcast,p2p,xla] [--jsonl OUT] [--exec]
    /usr/bin/python3 bench/sweep.py --tasks bench/probe [--strategies ...] [--jsonl OUT]
    /usr/bin/python3 bench/sweep.py --recost OUT.jsonl   (estimates again, no synthesis)
    make sweep                       (the default subset below: 60 cases, about a minute)

For every topology, pattern and size it writes a task, runs `meshcast synth`, `sim` and `validate`
for each strategy (one process at a time), and computes the cost model's estimate through the
Python binding (`Task.cost`) for the strategies that have one. It prints one table per case (each
strategy's simulated time over the lower bound, synthesis time, cost-model error) and a summary:
geomean and worst of meshcast/bound, the cases where meshcast is slower than a baseline, the
cost-model error per strategy (median, 90th percentile, worst), and the syntheses over 2 s.
--recost reads the records a run wrote with --jsonl and computes every estimate again with the
library the binding loads (MESHCAST_LIB picks another build's libmeshcast.so), against the
recorded simulated times: a change to the cost model measured on the same schedules in seconds.
Exit status 1 when a strategy fails or writes an invalid schedule (a strategy that does not handle
a kind of task, such as alpa-bcast inside one mesh or xla between two, is n/a), else 0. Times are wall clock.

Patterns (n GPUs, H hosts, G = n / H GPUs per host):
  bcast      GPU 0 -> every other GPU, replicated
  allgather  M[g,_] -> M[_,_] over all n GPUs
  alltoall   M[g,_] -> M[_,g]
  transpose  first half of the GPUs row-sharded -> second half column-sharded
  uneven     uneven row shards (1.75, 0.25, 0.5, 1.5 of the even size, repeated) -> reversed mesh
  cross2d    first half of the hosts (host, gpu) -> second half (gpu, host)   (clusters only)
  same2d     one mesh over every host, (host, gpu) -> (gpu, host)            (clusters only)
  hostbcast  host 0 sharded over its GPUs -> replicated on every other host   (clusters only)
  (the last three where n is a multiple of H; otherwise they are left out)
--tasks takes task files (or folders of *.task) instead of the generated patterns; each names its
topology in a comment line `# topo: NAME` (bench/probe holds shapes the patterns do not make:
other aspect ratios, partial meshes, replicated holders, several tensors, uneven shards).
Documented in docs/cost-model.md ("Outside the suites") and README.md (meshcast bench)."""
import argparse
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
import meshcast  # noqa: E402

DEFAULT_TOPOS = ["pcie-rtx3090-x4", "dgx-a100-x4", "p4d-x4", "oci-h100-x2", "mi250-x2",
                 "mi300x-x2", "aws-p4d-24xlarge-topo", "rccl-topo_8p1h"]
DEFAULT_SIZES = ["4M", "64M"]
DEFAULT_PATTERNS = ["bcast", "allgather", "hostbcast", "transpose"]
PATTERNS = ["bcast", "allgather", "alltoall", "transpose", "uneven", "cross2d", "same2d",
            "hostbcast"]
CLUSTER_ONLY = {"cross2d", "same2d", "hostbcast"}
BASELINES_WITH_COST = ("p2p", "alpa-bcast")


def sizes_of(text):
    """Comma-separated sizes in bytes, each with an optional K, M or G suffix."""
    sizes = []
    for item in text.split(","):
        m = re.fullmatch(r"(\d+)([KMG]?)", item)
        if not m or int(m.group(1)) == 0:
            raise argparse.ArgumentTypeError(f"size '{item}': expected a number of bytes with "
                                             "an optional K, M or G suffix (powers of 1024)")
        sizes.append(int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)])
    return sizes


def topo_path(name):
    """A topology by path, or by name among topologies/ (with or without .xml)."""
    for p in (Path(name), ROOT / "topologies" / name, ROOT / "topologies" / (name + ".xml")):
        if p.is_file():
            return str(p)
    raise SystemExit(f"sweep: topology '{name}' not found (a path, or a file of topologies/)")


def dims(nbytes, mult):
    """Rows and columns of an f32 matrix of about nbytes, both multiples of mult."""
    side = math.sqrt(nbytes / 4)
    r = max(mult, round(side / mult) * mult)
    c = max(mult, round(nbytes / 4 / r / mult) * mult)
    return r, c


def task_text(pat, n, hosts, nbytes):
    """The task of a pattern on n GPUs over hosts hosts; None when it needs more hosts, or hosts
    of one size (the 2-D patterns: n a multiple of hosts)."""
    if pat in CLUSTER_ONLY and (hosts < 2 or n % hosts):
        return None
    g = n // hosts
    if pat == "bcast":
        r, c = dims(nbytes, 1)
        return f"mesh S={{g:1}}@0\nmesh D={{g:{n - 1}}}@1..{n - 1}\nmove t: f32[{r},{c}] S[_,_] -> D[_,_]\n"
    if pat == "allgather":
        r, c = dims(nbytes, n)
        return f"mesh M={{g:{n}}}@0..{n - 1}\nmove t: f32[{r},{c}] M[g,_] -> M[_,_]\n"
    if pat == "alltoall":
        r, c = dims(nbytes, n)
        return f"mesh M={{g:{n}}}@0..{n - 1}\nmove t: f32[{r},{c}] M[g,_] -> M[_,g]\n"
    if pat == "transpose":
        h = n // 2
        r, c = dims(nbytes, h)
        return (f"mesh A={{g:{h}}}@0..{h - 1}\nmesh B={{g:{h}}}@{h}..{2 * h - 1}\n"
                f"move t: f32[{r},{c}] A[g,_] -> B[_,g]\n")
    if pat == "uneven":
        r, c = dims(nbytes, 4 * n)
        base = r // n
        quarters = [7, 1, 2, 6]
        sizes = [base * quarters[i % 4] // 4 for i in range(n)]
        r = sum(sizes)  # r itself where n is a multiple of 4
        shards = ",".join(map(str, sizes))
        rev = ",".join(str(n - 1 - i) for i in range(n))
        c = max(n, c // n * n)
        return (f"mesh A={{g:{n}}}@0..{n - 1}\nmesh B={{g:{n}}}@[{rev}]\n"
                f"move t: f32[{r},{c}] A[g{{{shards}}},_] -> B[_,g]\n")
    if pat == "cross2d":
        h = hosts // 2
        r, c = dims(nbytes, h * g)
        return (f"mesh A={{host:{h},gpu:{g}}}@0..{h * g - 1}\n"
                f"mesh B={{host:{h},gpu:{g}}}@{h * g}..{2 * h * g - 1}\n"
                f"move t: f32[{r},{c}] A[host,gpu] -> B[gpu,host]\n")
    if pat == "same2d":
        r, c = dims(nbytes, hosts * g)
        return (f"mesh M={{host:{hosts},gpu:{g}}}@0..{n - 1}\n"
                f"move t: f32[{r},{c}] M[host,gpu] -> M[gpu,host]\n")
    r, c = dims(nbytes, g)  # hostbcast
    return (f"mesh A={{gpu:{g}}}@0..{g - 1}\nmesh B={{host:{hosts - 1},gpu:{g}}}@{g}..{n - 1}\n"
            f"move t: f32[{r},{c}] A[gpu,_] -> B[_,_]\n")


def run(args, timeout):
    t0 = time.time()
    try:
        p = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
        return p.returncode, p.stdout, p.stderr, time.time() - t0
    except subprocess.TimeoutExpired:
        return None, "", f"timed out after {timeout} s", time.time() - t0


def strategy_row(cli, topo, tf, sched, s, task, T, args):
    """Synthesizes, simulates and validates one strategy's schedule; its cost estimate."""
    d = {}
    rc, out, err, dt = run([cli, "synth", "-q", "--topo", topo, "--task-file", tf, "--strategy",
                            s, "--rlimit", str(args.rlimit), "-o", sched], args.timeout)
    d["synth_s"] = round(dt, 3)
    if rc != 0:
        # a strategy for one kind of task only (Alpa's between disjoint meshes, XLA's inside one,
        # the collectives and alpa-p2p for one consumer per tensor, XLA's for meshes whose axes
        # refine each other)
        unsupported = rc == 1 and ("expected disjoint meshes" in err or
                                   "expected a same-mesh redistribution" in err or
                                   "consumers; expected one" in err or
                                   "no common refinement" in err)
        d["status"] = "n/a" if unsupported else "failed"
        d["message"] = (out + err).strip()[-300:]
        return d
    rc, out, err, _ = run([cli, "sim", "-q", "--json", "--topo", topo, sched], args.timeout)
    if rc != 0:
        d["status"] = "failed"
        d["message"] = (out + err).strip()[-300:]
        return d
    d["sim"] = json.loads(out)["makespan_s"]
    rc, out, err, _ = run([cli, "validate", "-q", "--topo", topo, sched], args.timeout)
    d["valid"] = rc == 0
    d["status"] = "ok" if rc == 0 else "invalid"
    if rc != 0:
        d["message"] = (out + err).strip()[-300:]
    if args.exec and s == "meshcast":
        rc, out, err, _ = run([cli, "sim", "-q", "--executed", "--nccl", "--topo", topo, sched],
                              args.timeout)
        m = re.search(r"executed .*?, ([0-9.]+) x the makespan", out)
        d["exec_nccl"] = float(m.group(1)) if rc == 0 and m else None
    if s == "meshcast" or s in BASELINES_WITH_COST:
        d["cost"] = task.cost(T, strategy=s).seconds
        d["cost_err"] = d["cost"] / d["sim"] - 1 if d["sim"] > 0 else 0.0
    return d


def over_bound(sim, bound):
    """A time over its lower bound; 1 where there is nothing to move (both 0), as meshcast prints."""
    return sim / bound if bound > 0 else (1.0 if sim == 0 else math.inf)


def print_case(rec, strategies):
    print(f"{rec['case']}  ({rec['pieces']} pieces, bound {rec['bound'] * 1e6:.1f} us)")
    for s in strategies:
        d = rec["strategies"].get(s)
        if d is None:
            continue
        if d["status"] in ("n/a", "failed"):
            print(f"  {s:12s} {d['status']}" + (f": {d['message']}" if d["status"] == "failed"
                                                 else ""))
            continue
        cols = [f"  {s:12s} {over_bound(d['sim'], rec['bound']):8.3f} x bound", f"synth {d['synth_s']:6.2f} s"]
        cols.append(f"cost {100 * d['cost_err']:+7.1f}%" if "cost_err" in d else " " * 13)
        if d.get("exec_nccl"):
            cols.append(f"exec x{d['exec_nccl']:.2f}")
        if d["status"] == "invalid":
            cols.append("INVALID: " + d.get("message", ""))
        print("  ".join(cols))
    sys.stdout.flush()


def summarize(recs, strategies):
    ratios, slower, synth_slow = [], [], []
    for r in recs:
        m = r["strategies"].get("meshcast")
        if not m or "sim" not in m:
            continue
        ratios.append((over_bound(m["sim"], r["bound"]), r["case"]))
        if m["synth_s"] > 2:
            synth_slow.append(f"{r['case']} {m['synth_s']:.1f} s")
        for s, d in r["strategies"].items():
            if s != "meshcast" and "sim" in d and m["sim"] > d["sim"] * (1 + 1e-9):
                slower.append(f"{r['case']} ({s} {over_bound(d['sim'], r['bound']):.2f} vs "
                              f"{over_bound(m['sim'], r['bound']):.2f})")
    print("\nsummary:")
    if ratios:
        geo = math.exp(sum(math.log(x) for x, _ in ratios) / len(ratios))
        worst = max(ratios)
        print(f"  meshcast/bound: geomean {geo:.3f}, worst {worst[0]:.3f} ({worst[1]}), "
              f"{len(ratios)} cases")
    print(f"  meshcast slower than a baseline: {len(slower)}" +
          (": " + "; ".join(slower) if slower else ""))
    for s in strategies:
        errs = sorted((abs(r["strategies"][s]["cost_err"]), r["strategies"][s]["cost_err"],
                       r["case"]) for r in recs
                      if "cost_err" in r["strategies"].get(s, {}))
        if not errs:
            continue
        a = [e[0] for e in errs]
        p90 = a[min(len(a) - 1, int(0.9 * len(a)))]
        print(f"  cost error {s}: median {100 * statistics.median(a):.1f}%, 90th percentile "
              f"{100 * p90:.1f}%, worst {100 * errs[-1][1]:+.1f}% ({errs[-1][2]}), {len(a)} cases")
    print(f"  meshcast synth > 2 s: {len(synth_slow)}" +
          (": " + "; ".join(synth_slow) if synth_slow else ""))


def recost(path, strategies):
    """The estimates of an earlier run's records again, against their simulated times."""
    topos, recs = {}, []
    with open(path) as f:
        for line in f:
            rec = json.loads(line)
            if rec["topo"] not in topos:
                topos[rec["topo"]] = meshcast.Topology.load(rec["topo"])
            task = meshcast.Task.from_text(rec["task"], rec["case"])
            for s, d in rec["strategies"].items():
                if "cost" in d and d.get("sim"):
                    d["cost"] = task.cost(topos[rec["topo"]], strategy=s).seconds
                    d["cost_err"] = d["cost"] / d["sim"] - 1
            print_case(rec, strategies)
            recs.append(rec)
    summarize(recs, strategies)
    return 0


def generated_cases(topos, patterns, sizes):
    """(topology, case, task text, pattern, bytes) of every pattern and size on every topology."""
    for name in topos.split(","):
        topo = topo_path(name)
        T = meshcast.Topology.load(topo)
        for pat in patterns:
            for nb in sizes:
                text = task_text(pat, T.ngpus, T.nhosts, nb)
                if text is None:
                    continue
                size = f"{nb >> 20}M" if nb >= 1 << 20 else f"{nb >> 10}K"
                yield topo, f"{Path(topo).stem}-{pat}-{size}", text, pat, nb


def task_cases(spec):
    """(topology, case, task text, "file", None) of task files, each naming its topology in a
    '# topo: NAME' line."""
    files = []
    for item in spec.split(","):
        p = Path(item)
        files += sorted(p.glob("*.task")) if p.is_dir() else [p]
    for f in files:
        text = f.read_text()
        m = re.search(r"^#\s*topo:\s*(\S+)", text, re.M)
        if not m:
            raise SystemExit(f"sweep: {f}: no '# topo: NAME' line names its topology")
        yield topo_path(m.group(1)), f.stem, text, "file", None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog="\n".join(__doc__.splitlines()[2:]))
    ap.add_argument("--topos", default=",".join(DEFAULT_TOPOS),
                    help="topology files or names in topologies/ (default: %(default)s)")
    ap.add_argument("--sizes", type=sizes_of, default=",".join(DEFAULT_SIZES),
                    help="tensor sizes, bytes with K/M/G (default: %(default)s)")
    ap.add_argument("--patterns", default=",".join(DEFAULT_PATTERNS),
                    help="patterns (default: %(default)s)")
    ap.add_argument("--strategies", default="meshcast,p2p,alpa-bcast,alpa-p2p,xla,collectives",
                    help="strategies, meshcast first (default: %(default)s)")
    ap.add_argument("--rlimit", type=int, default=2000000, help="Z3 rlimit for synth")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command")
    ap.add_argument("--exec", action="store_true",
                    help="also time meshcast's plans on the nccl lanes (sim --executed --nccl)")
    ap.add_argument("--tasks", help="task files or folders of them, comma-separated, each with a "
                    "'# topo: NAME' line (instead of --topos, --sizes, --patterns)")
    ap.add_argument("--jsonl", help="append one JSON record per case to this file")
    ap.add_argument("--recost", metavar="JSONL",
                    help="estimate the records of an earlier --jsonl run again, synthesize nothing")
    ap.add_argument("--meshcast", default=str(ROOT / "build" / "meshcast"),
                    help="the meshcast binary (default: %(default)s)")
    args = ap.parse_args()
    strategies = args.strategies.split(",")
    if args.recost:
        return recost(args.recost, strategies)
    patterns = args.patterns.split(",")
    for pat in patterns:
        if pat not in PATTERNS:
            ap.error(f"unknown pattern '{pat}': expected one of {', '.join(PATTERNS)}")
    work = tempfile.mkdtemp(prefix="meshcast-sweep-")
    out = open(args.jsonl, "a") if args.jsonl else None
    recs, failed = [], 0
    try:
        topos = {}
        for topo, case, text, pat, nb in (task_cases(args.tasks) if args.tasks else
                                          generated_cases(args.topos, patterns, args.sizes)):
            if topo not in topos:
                topos[topo] = meshcast.Topology.load(topo)
            T = topos[topo]
            tf = os.path.join(work, case + ".task")
            Path(tf).write_text(text)
            task = meshcast.Task.from_text(text, case)
            rec = {"case": case, "topo": topo, "pattern": pat, "bytes": nb or task.total_bytes,
                   "task": text, "bound": task.bound(T).seconds, "pieces": task.npieces,
                   "strategies": {}}
            for s in strategies:
                d = strategy_row(args.meshcast, topo, tf, os.path.join(work, "s.xml"), s,
                                 task, T, args)
                failed += d["status"] in ("failed", "invalid")
                rec["strategies"][s] = d
            print_case(rec, strategies)
            recs.append(rec)
            if out:
                out.write(json.dumps(rec) + "\n")
                out.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)
        if out:
            out.close()
    summarize(recs, strategies)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Calls per second of the cost model (Task.cost) on the 64-GPU and the 1024-GPU tasks, the
median of several runs, each run timing a batch of calls on a topology loaded once.

    /usr/bin/python3 python/bench_cost.py [--runs 7]      (from the repository root)

The 64-GPU task is the LLaMA-2-70B weights of tests/data/tasks/llama70b-1024.task moved between
dp4 x tp8 (GPUs 0-31) and dp8 x tp4 (GPUs 32-63); the 1024-GPU task is that file itself; both
on topologies/dgx-h100-x128.xml. Times are this process's CPU time (the machine may be shared,
so wall-clock time would count other programs), and include the binding's overhead (cffi),
not parsing."""
import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))
import meshcast  # noqa: E402


def tasks():
    big = (ROOT / "tests" / "data" / "tasks" / "llama70b-1024.task").read_text()
    small = (big.replace("train={dp:64,tp:8}@0..511", "train={dp:4,tp:8}@0..31")
                .replace("gen={dp:128,tp:4}@512..1023", "gen={dp:8,tp:4}@32..63"))
    return [("64-GPU", meshcast.Task.from_text(small, "llama70b-64")),
            ("1024-GPU", meshcast.Task.from_text(big, "llama70b-1024"))]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--seconds", type=float, default=0.3, help="length of one run")
    args = ap.parse_args()
    topo = meshcast.Topology.load(str(ROOT / "topologies" / "dgx-h100-x128.xml"))
    for name, task in tasks():
        for strategy in meshcast.COST_STRATEGIES:
            first = time.perf_counter()
            cost = task.cost(topo, strategy=strategy)  # first call: routes looked up
            first = time.perf_counter() - first
            rates = []
            for _ in range(args.runs):
                n, t0 = 0, time.process_time()
                while time.process_time() - t0 < args.seconds:
                    task.cost(topo, strategy=strategy)
                    n += 1
                rates.append(n / (time.process_time() - t0))
            med = statistics.median(rates)
            print(f"{name:8s} {strategy:10s} {task.npieces:6d} pieces  {med:10.0f} calls/s "
                  f"({1e6 / med:8.1f} us/call, median of {args.runs})  first call "
                  f"{first * 1e3:7.2f} ms  estimate {cost.seconds * 1e3:9.3f} ms")


if __name__ == "__main__":
    main()

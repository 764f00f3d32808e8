"""bench/sweep.py, the sweep outside the suites: every pattern writes a task the library accepts on
a cluster, a small run prints a table per case and the summary with each strategy's cost error,
its records estimate again to the same figures with --recost, and bad arguments are refused."""
import json
import re
import subprocess
import sys

import pytest

import meshcast
from conftest import ROOT, TOPOS

SWEEP = ROOT / "bench" / "sweep.py"
sys.path.insert(0, str(ROOT / "bench"))
import sweep  # noqa: E402


def run(*args):
    return subprocess.run([sys.executable, str(SWEEP), *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("pattern", sweep.PATTERNS)
def test_every_pattern_is_a_task(paper, pattern):
    # the paper's cluster: 5 hosts of 4 GPUs
    text = sweep.task_text(pattern, paper.ngpus, paper.nhosts, 1 << 20)
    task = meshcast.Task.from_text(text, pattern)
    task.check(paper)
    assert task.npieces > 0
    assert sweep.task_text(pattern, 8, 1, 1 << 20) is None or pattern not in sweep.CLUSTER_ONLY


def test_small_run_and_recost(tmp_path):
    out = tmp_path / "s.jsonl"
    r = run("--topos", "aws-p3.8xlarge-x5", "--sizes", "64K", "--patterns", "bcast,hostbcast",
            "--strategies", "meshcast,p2p,alpa-bcast,xla", "--jsonl", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count("\n  xla          n/a\n") == 2  # xla reshards inside one mesh only
    assert re.search(r"^aws-p3\.8xlarge-x5-bcast-64K  \(1 pieces, bound", r.stdout, re.M)
    assert re.search(r"^  p2p +[0-9.]+ x bound  synth +[0-9.]+ s  cost +[-+][0-9.]+%", r.stdout,
                     re.M)
    errors = re.findall(r"^  cost error (\S+): median", r.stdout, re.M)
    assert errors == ["meshcast", "p2p", "alpa-bcast"]
    assert re.search(r"^  meshcast/bound: geomean [0-9.]+, worst [0-9.]+ \(.*\), 2 cases$",
                     r.stdout, re.M)
    recs = [json.loads(line) for line in out.read_text().splitlines()]
    assert [rec["case"] for rec in recs] == ["aws-p3.8xlarge-x5-bcast-64K",
                                            "aws-p3.8xlarge-x5-hostbcast-64K"]
    for rec in recs:
        assert rec["strategies"].pop("xla")["status"] == "n/a"
        for s, d in rec["strategies"].items():
            assert d["status"] == "ok" and d["sim"] >= rec["bound"] * (1 - 1e-9)
            assert d["cost_err"] == pytest.approx(d["cost"] / d["sim"] - 1)
    again = run("--recost", str(out))
    assert again.returncode == 0, again.stderr
    summary = lambda text: text[text.index("\nsummary:"):].split("meshcast synth")[0]
    assert summary(again.stdout) == summary(r.stdout)


def test_bad_arguments():
    r = run("--sizes", "4X")
    assert r.returncode == 2 and "size '4X': expected a number of bytes" in r.stderr
    r = run("--topos", "aws-p3.8xlarge-x5", "--patterns", "bcast,spiral", "--sizes", "4K")
    assert r.returncode == 2 and "unknown pattern 'spiral': expected one of bcast," in r.stderr
    r = run("--topos", "no-such-topology")
    assert r.returncode == 1 and "topology 'no-such-topology' not found" in r.stderr

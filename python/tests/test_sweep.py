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


@pytest.mark.parametrize("n", [3, 5, 7])
def test_odd_gpu_counts(paper, n):
    # hosts of an odd number of GPUs (RCCL's 3-GPU models): the halves of a transpose are equal
    for pattern in sweep.PATTERNS:
        text = sweep.task_text(pattern, n, 1, 1 << 20)
        if text is not None:
            meshcast.Task.from_text(text, pattern).check(paper)


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


def test_task_files(tmp_path):
    # --tasks: task files naming their topology, refusals of a kind of task counted n/a
    (tmp_path / "odd.task").write_text(
        "# topo: aws-p3.8xlarge-x5\nmesh M={a:5,b:4}@0..19\nmesh N={a:2,b:10}@0..19\n"
        "move t: f32[30,20] M[a,b] -> N[b,a]\n")
    (tmp_path / "fan.task").write_text(
        "# topo: aws-p3.8xlarge-x5\nmesh A={x:2}@0..1\nmesh B={x:2}@4..5\nmesh C={x:2}@8..9\n"
        "move t: f32[64,64] A[x,_] -> B[_,x], C[_,_]\n")
    out = tmp_path / "t.jsonl"
    r = run("--tasks", str(tmp_path), "--strategies", "meshcast,p2p,alpa-p2p,xla", "--jsonl",
            str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    recs = {rec["case"]: rec for rec in map(json.loads, out.read_text().splitlines())}
    assert sorted(recs) == ["fan", "odd"]
    assert recs["odd"]["pattern"] == "file" and recs["odd"]["topo"].endswith("x5.xml")
    assert recs["odd"]["strategies"]["xla"]["status"] == "n/a"  # no common refinement
    assert recs["fan"]["strategies"]["alpa-p2p"]["status"] == "n/a"  # two consumers
    assert recs["fan"]["strategies"]["meshcast"]["status"] == "ok"
    (tmp_path / "bare.task").write_text("mesh A={x:2}@0..1\nmove f32[4] A[x] -> A[_]\n")
    r = run("--tasks", str(tmp_path / "bare.task"))
    assert r.returncode == 1 and "bare.task: no '# topo: NAME' line" in r.stderr


def test_bad_arguments():
    r = run("--sizes", "4X")
    assert r.returncode == 2 and "size '4X': expected a number of bytes" in r.stderr
    r = run("--topos", "aws-p3.8xlarge-x5", "--patterns", "bcast,spiral", "--sizes", "4K")
    assert r.returncode == 2 and "unknown pattern 'spiral': expected one of bcast," in r.stderr
    r = run("--topos", "no-such-topology")
    assert r.returncode == 1 and "topology 'no-such-topology' not found" in r.stderr


def record(case, bound, **sims):
    return {"case": case, "bound": bound,
            "strategies": {s: {"status": "ok", "sim": t, "synth_s": 0.5} for s, t in sims.items()}}


def test_compare_two_runs(tmp_path):
    compare = ROOT / "bench" / "sweep_compare.py"
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_text("\n".join(json.dumps(r) for r in [
        record("a", 1.0, meshcast=2.0, p2p=3.0), record("b", 1.0, meshcast=1.5),
        record("c", 1.0, meshcast=1.2), record("gone", 1.0, meshcast=1.0)]) + "\n")
    new.write_text("\n".join(json.dumps(r) for r in [
        record("a", 1.2, meshcast=1.6, p2p=1.5), record("b", 1.0, meshcast=1.5),
        record("c", 0.9, meshcast=1.32, p2p=0.8), record("new", 1.0, meshcast=1.0)]) + "\n")
    r = subprocess.run([sys.executable, str(compare), str(old), str(new)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "cases in both: 3 of new 4"
    # old / new: 1.25, 1, 1/1.1
    assert lines[1] == ("meshcast old/new simulated time: geomean %.4f; faster >1%%: 1, same: 1, "
                        "slower >1%%: 1" % (1.25 / 1.1) ** (1 / 3))
    assert lines[2] == "bounds: 1 rose, 1 fell"
    assert lines[3].split() == ["c", "x1.100", "ratio", "1.200", "->", "1.467", "synth", "0.50",
                                "->", "0.50", "s"]
    assert lines[4].split()[:6] == ["a", "x0.800", "ratio", "2.000", "->", "1.333"]
    assert lines[6] == "meshcast slower than a baseline (new): a (p2p x1.067), c (p2p x1.650)"
    assert lines[7] == "time below the bound (new): c (p2p)"
    bad = subprocess.run([sys.executable, str(compare), str(old), str(tmp_path / "none")],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "sweep_compare:" in bad.stderr
    usage = subprocess.run([sys.executable, str(compare), str(old)], capture_output=True,
                           text=True, timeout=60)
    assert usage.returncode == 2


def suite_csv(path, rows):
    """A bench --csv file with the columns suite_compare.py reads: (case, strategy, bound, sim)."""
    head = "suite,case,strategy,bytes,lower_bound_s,sim_s,ratio\n"
    path.write_text(head + "".join(f"s,{c},{s},1,{b},{t},{t / b}\n" for c, s, b, t in rows)
                    + "all,geomean,meshcast,,1,9,9\n")


def test_suite_compare(tmp_path):
    compare = ROOT / "bench" / "suite_compare.py"
    old, new = tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    suite_csv(old / "f_s.csv", [("a", "meshcast", 1.0, 2.0), ("a", "p2p", 1.0, 3.0),
                                ("b", "meshcast", 1.0, 1.5), ("gone", "meshcast", 1.0, 1.0)])
    suite_csv(new / "f_s.csv", [("a", "meshcast", 1.0, 1.6), ("a", "p2p", 1.0, 1.5),
                                ("b", "meshcast", 2.0, 1.5), ("c", "meshcast", 1.0, 1.0),
                                ("c", "xla", 1.0, 0.5)])
    # a suite only the new run holds: no comparison, its faults only; a row whose simulation
    # stopped at its allowance (sim_s 0, simulated "no") is neither faster than meshcast nor
    # below its bound
    (new / "f_t.csv").write_text("suite,case,strategy,lower_bound_s,sim_s,simulated\n"
                                 "t,d,alpa-bcast,1.0,0,no\nt,d,meshcast,1.0,1.2,yes\n")
    r = subprocess.run([sys.executable, str(compare), str(old), str(new)], capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "s: 3 rows in both; sim_s moved on 2, bound moved on 1"
    assert lines[1].split() == ["a", "x0.8000", "ratio", "2.0000", "->", "1.6000"]
    # geomeans over three rows: old (2 * 1.5 * 1) ** (1/3), new (1.6 * 0.75 * 1) ** (1/3)
    assert lines[2].split()[3:6] == ["%.4f" % 3 ** (1 / 3), "->", "%.4f;" % 1.2 ** (1 / 3)]
    assert lines[3] == "new run: 4 faults"
    assert lines[4:] == ["  s a: meshcast slower than p2p x1.067", "  s b: meshcast below its bound",
                         "  s c: meshcast slower than xla x2.000", "  s c: xla below its bound"]
    empty = tmp_path / "empty"
    empty.mkdir()
    bad = subprocess.run([sys.executable, str(compare), str(old), str(empty)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1 and "suite_compare:" in bad.stderr
    usage = subprocess.run([sys.executable, str(compare), str(old)], capture_output=True,
                           text=True, timeout=60)
    assert usage.returncode == 2

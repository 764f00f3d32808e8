"""The examples run as written: the planner of python/README.md (whose code block must be the
file itself), and the PyTorch + emitted CUDA example, built with nvcc when it exists and checked
without a GPU against the binding's plan sizes."""
import ctypes
import os
import py_compile
import re
import shutil
import subprocess
import sys

import pytest

import meshcast
import meshcast.torch as mt
from conftest import ROOT, TOPOS

EXAMPLES = ROOT / "python" / "examples"


def test_readme_planner_is_the_example_and_runs():
    readme = (ROOT / "python" / "README.md").read_text()
    code = (EXAMPLES / "planner.py").read_text()
    assert f"```python\n{code}```" in readme
    out = subprocess.run([sys.executable, str(EXAMPLES / "planner.py")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, PYTHONPATH=str(ROOT / "python")))
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert re.match(r"100 candidates costed in [0-9.]+ ms", lines[0])
    costs = [float(line.split()[0]) for line in lines[1:6]]
    assert costs == sorted(costs) and len(lines) == 8


def test_nccl_example_builds(tmp_path):
    nvcc = os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "nvcc")
    if not os.path.exists(nvcc) or not shutil.which("cc"):
        pytest.skip("no nvcc: the CUDA example is not built")
    lib_dir = os.path.dirname(os.environ.get("MESHCAST_LIB", str(ROOT / "build" / "x")))
    out = subprocess.run([str(EXAMPLES / "torch_nccl" / "build.sh"),
                          os.path.join(lib_dir, "meshcast")],
                         env=dict(os.environ, OUT=str(tmp_path)), capture_output=True, text=True,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    sys.path.insert(0, str(EXAMPLES / "torch_nccl"))
    try:
        import run_schedule
    finally:
        sys.path.pop(0)
    lib = run_schedule.load_case1(tmp_path / "libcase1.so")
    topo = meshcast.Topology.load(str(TOPOS / "aws-p3.8xlarge-x5.xml"))
    sched = meshcast.Schedule.load(str(tmp_path / "case1.xml"), topo)
    assert len(mt.plan_gpus(sched)) == 16
    for rank in range(16):
        src, dst, ws = mt.plan_sizes(sched, rank)
        assert (lib.case1_src_bytes(rank), lib.case1_dst_bytes(rank),
                lib.case1_workspace_bytes(rank)) == (src, dst, ws)
    py_compile.compile(str(EXAMPLES / "torch_nccl" / "run_schedule.py"), doraise=True,
                       cfile=str(tmp_path / "run_schedule.pyc"))

"""Shared fixtures of the Python tests: paths into the repository and loaded topologies."""
from pathlib import Path

import pytest

import meshcast

ROOT = Path(__file__).resolve().parents[2]
TOPOS = ROOT / "topologies"
SHARED = ROOT.parent / "shared" / "topo-xml"


@pytest.fixture(scope="session")
def paper():
    return meshcast.Topology.load(str(TOPOS / "aws-p3.8xlarge-x5.xml"))


@pytest.fixture(scope="session")
def dgx():
    return meshcast.Topology.load(str(TOPOS / "dgx-h100-x1.xml"))


@pytest.fixture
def case1():
    return meshcast.Task.parse(["A={host:2,gpu:4}@0..7", "B={host:2,gpu:4}@8..15"],
                               ["f32[1024,1024,512] A[host,_,_] -> B[host,_,_]"])

"""meshcast.torch.run under gloo, byte-exact: 8 and 16 processes each run several strategies'
schedules (in one process group per size, forked so that torch is imported once) and check every
destination byte against meshcast's pattern."""
import multiprocessing as mp
import os
import tempfile

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402

import meshcast  # noqa: E402
import meshcast.torch as mt  # noqa: E402
from conftest import TOPOS  # noqa: E402


def _rank_main(rank, n, topo_path, xmls, init, run_it, q):
    try:
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=n)
        topo = meshcast.Topology.load(topo_path)
        result = []
        for x in xmls:
            s = meshcast.Schedule.from_xml(x, topo)
            src, dst = mt.pattern_buffers(s, rank)
            if run_it:
                mt.run(s, src, dst)
            result.append(mt.check_dst(s, rank, dst))
        dist.barrier()
        dist.destroy_process_group()
        q.put((rank, result))
    except Exception as e:  # reported to the parent, which fails the test with it
        q.put((rank, repr(e)))


def _launch(topo_path, xmls, n, run_it=True):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    with tempfile.TemporaryDirectory() as d:
        procs = [ctx.Process(target=_rank_main,
                             args=(r, n, topo_path, xmls, f"file://{d}/rendezvous", run_it, q))
                 for r in range(n)]
        for p in procs:
            p.start()
        results = dict(q.get(timeout=120) for _ in procs)
        for p in procs:
            p.join(timeout=60)
    return results


def _schedules(topo, task, strategies, n):
    xmls = []
    for name in strategies:
        s = meshcast.synth(task, topo, strategy=name, rlimit=2000000)
        assert len(mt.plan_gpus(s)) == n, name
        xmls.append(s.xml)
    return xmls


def _run_and_check(topo_name, meshes, moves, strategies, n):
    """Synthesizes the task with every strategy, runs each schedule on n gloo processes and
    asserts that every rank's destination bytes are all right."""
    path = str(TOPOS / topo_name)
    topo = meshcast.Topology.load(path)
    task = meshcast.Task.parse(meshes, moves)
    results = _launch(path, _schedules(topo, task, strategies, n), n)
    for rank in range(n):
        assert not isinstance(results[rank], str), results[rank]
        for name, (wrong, report) in zip(strategies, results[rank]):
            assert wrong == 0, f"{name} rank {rank}: {report}"


def test_run_8_ranks_same_mesh():
    _run_and_check("dgx-h100-x1.xml", ["M={x:4,y:2}@0..7"],
                   ["f32[6,40,24] M[_,(x,y),_] -> M[_,x,y]",
                    "bf16[33,10] M[(y,x),_] -> M[_,(x,y)]"],
                   ["meshcast", "p2p", "xla", "collectives"], 8)


def test_run_16_ranks_cross_mesh():
    _run_and_check("aws-p3.8xlarge-x5.xml", ["A={host:2,gpu:4}@0..7", "B={host:2,gpu:4}@8..15"],
                   ["i32[64,48,20] A[host,_,gpu] -> B[_,(gpu,host),_]"],
                   ["meshcast", "p2p", "p2p-lb", "alpa-bcast"], 16)


def test_check_catches_a_run_that_did_not_happen():
    # the same check on buffers nobody wrote: every destination byte is wrong
    path = str(TOPOS / "aws-p3.8xlarge-x5.xml")
    topo = meshcast.Topology.load(path)
    task = meshcast.Task.parse(["A={x:4}@0..3", "B={x:4}@4..7"], ["u8[64] A[x] -> B[_]"])
    s = meshcast.synth(task, topo, strategy="p2p")
    gpus = mt.plan_gpus(s)
    for rank in range(len(gpus)):
        src, dst = mt.pattern_buffers(s, rank)
        assert mt.check_dst(s, rank, dst)[0] == (64 if gpus[rank] >= 4 else 0)


def test_run_refuses_a_wrong_group_or_buffer():
    path = str(TOPOS / "aws-p3.8xlarge-x5.xml")
    topo = meshcast.Topology.load(path)
    task = meshcast.Task.parse(["A={x:2}@0..1", "B={x:2}@4..5"], ["u8[64] A[x] -> B[x]"])
    s = meshcast.synth(task, topo, strategy="p2p")
    with tempfile.TemporaryDirectory() as d:
        dist.init_process_group("gloo", init_method=f"file://{d}/rv", rank=0, world_size=1)
        try:
            src, dst = mt.pattern_buffers(s, 0)
            with pytest.raises(meshcast.MeshcastError) as e:
                mt.run(s, src, dst)
            assert str(e.value) == ("meshcast.torch.run: the group has 1 ranks, the schedule "
                                    "needs 4 (one per GPU it involves)")
        finally:
            dist.destroy_process_group()
    assert mt.plan_sizes(s, 0) == (32, 0, 0)

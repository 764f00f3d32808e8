"""Calls the CUDA that `meshcast emit` generated from PyTorch, on the NCCL communicator of a
torch.distributed process group, and checks every destination byte.

    python/examples/torch_nccl/build.sh              # once: build/libcase1.so
    torchrun --nproc_per_node=8 --nnodes=2 ... python/examples/torch_nccl/run_schedule.py

One process per GPU of the schedule (16 for the example's case 1), rank r running GPU
meshcast.torch.plan_gpus(schedule)[r], with torch.cuda.set_device(local rank) done first.

The communicator: PyTorch's ProcessGroupNCCL backend exposes its ncclComm_t as an integer with
_comm_ptr(), added by pytorch/pytorch#152496 (April 2025, so PyTorch 2.8 or later by its date;
not checked against a release here); the script uses it when the backend has it.
Otherwise (older PyTorch, such as Debian's 1.13) rank 0 makes an NCCL unique id, the group
broadcasts its 128 bytes, and every rank calls ncclCommInitRank through ctypes: a second
communicator over the same ranks, owned (and destroyed) by this script.
"""
import ctypes
import os
import sys
from pathlib import Path

import torch
import torch.distributed as dist

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
sys.path.insert(0, str(ROOT / "python"))
import meshcast  # noqa: E402
import meshcast.torch as mt  # noqa: E402


class NcclUniqueId(ctypes.Structure):
    _fields_ = [("internal", ctypes.c_char * 128)]  # NCCL_UNIQUE_ID_BYTES


def load_case1(path=HERE / "build" / "libcase1.so"):
    """The emitted entry points, typed for ctypes."""
    lib = ctypes.CDLL(str(path))
    lib.case1_run.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 5
    lib.case1_run.restype = ctypes.c_int
    for f in ("case1_workspace_bytes", "case1_src_bytes", "case1_dst_bytes"):
        getattr(lib, f).argtypes = [ctypes.c_int]
        getattr(lib, f).restype = ctypes.c_size_t
    lib.case1_error.restype = ctypes.c_char_p
    return lib


def nccl_comm(group=None):
    """(ncclComm_t as an int, owned): the group's own communicator when PyTorch exposes it,
    else a new one made from a unique id shared through torch.distributed."""
    backend = (group or dist.group.WORLD)._get_backend(torch.device("cuda"))
    if hasattr(backend, "_comm_ptr"):
        # the backend creates its communicator lazily: one collective makes sure it exists
        dist.barrier(group=group)
        return int(backend._comm_ptr()), False
    nccl = ctypes.CDLL("libnccl.so.2")
    uid = NcclUniqueId()
    if dist.get_rank(group) == 0 and nccl.ncclGetUniqueId(ctypes.byref(uid)) != 0:
        raise RuntimeError("ncclGetUniqueId failed")
    raw = torch.frombuffer(bytearray(uid.internal), dtype=torch.uint8).cuda()
    dist.broadcast(raw, src=dist.get_global_rank(group, 0) if group else 0, group=group)
    ctypes.memmove(ctypes.addressof(uid), bytes(raw.cpu().tolist()), 128)
    comm = ctypes.c_void_p()
    if nccl.ncclCommInitRank(ctypes.byref(comm), dist.get_world_size(group), uid,
                             dist.get_rank(group)) != 0:
        raise RuntimeError("ncclCommInitRank failed")
    return comm.value, True


def main():
    # the device first: the NCCL process group binds its communicator to the current one
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl")
    rank = dist.get_rank()
    topo = meshcast.Topology.load(str(ROOT / "topologies" / "aws-p3.8xlarge-x5.xml"))
    sched = meshcast.Schedule.load(str(HERE / "build" / "case1.xml"), topo)
    lib = load_case1()
    src_h, dst_h = mt.pattern_buffers(sched, rank)       # meshcast's check pattern, on the host
    src, dst = src_h.cuda(), dst_h.cuda()
    ws = torch.empty(lib.case1_workspace_bytes(rank), dtype=torch.uint8, device="cuda")
    comm, owned = nccl_comm()
    stream = torch.cuda.current_stream()
    rc = lib.case1_run(rank, comm, src.data_ptr(), dst.data_ptr(), ws.data_ptr(),
                       stream.cuda_stream)
    if rc != 0:
        raise RuntimeError(lib.case1_error().decode())
    stream.synchronize()
    wrong, report = mt.check_dst(sched, rank, dst)
    print(f"rank {rank}: {wrong} wrong bytes {report}")
    if owned:
        ctypes.CDLL("libnccl.so.2").ncclCommDestroy(ctypes.c_void_p(comm))
    dist.destroy_process_group()
    sys.exit(1 if wrong else 0)


if __name__ == "__main__":
    main()

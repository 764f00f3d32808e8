"""Executing a meshcast schedule with torch.distributed point-to-point operations.

The schedule is lowered by the C library (emit/) into one plan per rank, exactly the plans the C
runtime and the emitted CUDA run (runtime/runtime.h). :func:`run` executes this rank's plan step
by step: the step's copies (packs into the workspace, local copies), then its sends and receives
as one ``batch_isend_irecv`` waited on at once, then its copies out of the workspace. Every rank
runs the same numbered steps, and a send and its receive sit in the same step on both sides, so
the order is deadlock-free on any backend: gloo on CPUs, NCCL on GPUs.

Buffers follow the C runtime's convention: ``src`` is the rank's source tiles, one per tensor in
task order, each row-major, concatenated; ``dst`` the same for its destination tiles; both any
dtype, contiguous, on the backend's device. Ranks are the schedule's GPUs in id order
(``plan_gpus``): rank r of the group runs GPU ``plan_gpus(schedule)[r]``.
"""
from __future__ import annotations

from typing import List, Optional, Tuple

import torch
import torch.distributed as dist

from . import MeshcastError, Schedule
from ._capi import BOX_COLS, OP_COLS, STEP_COLS, ffi, lib

__all__ = ["run", "plan_gpus", "plan_sizes", "pattern_buffers", "check_dst"]

_COPY, _SEND, _RECV = 0, 1, 2
_SRC, _DST, _WS = 0, 1, 2


class _Plans:
    """Every rank's plan of a schedule, exported from C as int64 tables."""

    def __init__(self, sched: Schedule):
        out = ffi.new("mc_emit_plans_t **")
        err = ffi.new("mc_err_t *")
        st = lib.mc_emit_lower(sched._ptr, out, err)
        if st != 0:
            raise MeshcastError(ffi.string(err.msg).decode(), st)
        P = ffi.gc(out[0], lib.mc_emit_plans_free)
        self.nranks = lib.mc_py_plans_nranks(P)
        self.gpus: List[int] = []
        self.ranks = []
        for r in range(self.nranks):
            info = ffi.new("int64_t[7]")
            lib.mc_py_plan_info(P, r, info)
            gpu, src_b, dst_b, ws_b, nboxes, nops, nsteps = (int(x) for x in info)
            steps = torch.zeros((nsteps, STEP_COLS), dtype=torch.int64)
            ops = torch.zeros((nops, OP_COLS), dtype=torch.int64)
            boxes = torch.zeros((nboxes, BOX_COLS), dtype=torch.int64)
            lib.mc_py_plan_steps(P, r, ffi.cast("int64_t *", steps.data_ptr()))
            lib.mc_py_plan_ops(P, r, ffi.cast("int64_t *", ops.data_ptr()))
            lib.mc_py_plan_boxes(P, r, ffi.cast("int64_t *", boxes.data_ptr()))
            self.gpus.append(gpu)
            self.ranks.append(((src_b, dst_b, ws_b), steps.tolist(), ops.tolist(),
                               boxes.tolist()))


def _plans(sched: Schedule) -> _Plans:
    p = getattr(sched, "_torch_plans", None)
    if p is None:
        p = _Plans(sched)
        sched._torch_plans = p
    return p


def plan_gpus(schedule: Schedule) -> List[int]:
    """The GPU each rank runs: rank r runs plan_gpus(schedule)[r]."""
    return list(_plans(schedule).gpus)


def plan_sizes(schedule: Schedule, rank: int) -> Tuple[int, int, int]:
    """(src_bytes, dst_bytes, workspace_bytes) rank's buffers must have."""
    return _plans(schedule).ranks[rank][0]


def _bytes_of(t: torch.Tensor, what: str, need: int) -> torch.Tensor:
    if not t.is_contiguous():
        raise MeshcastError(f"meshcast.torch.run: {what} must be contiguous", -4)
    b = t.view(-1).view(torch.uint8) if t.numel() else t.reshape(0).to(torch.uint8)
    if b.numel() != need:
        raise MeshcastError(f"meshcast.torch.run: {what} has {b.numel()} bytes, the plan needs "
                            f"{need}", -4)
    return b


def _addresses(box: List[int], off: int, n: int, device) -> torch.Tensor:
    """Byte offsets in the box's buffer of its linear positions off .. off+n-1."""
    ndims, base = box[1], box[2]
    ext, stride = box[3:3 + 8], box[3 + 8:3 + 16]
    lin = torch.arange(off, off + n, dtype=torch.int64, device=device)
    inner = ext[ndims - 1]
    addr = base + lin % inner
    q = lin // inner
    for d in range(ndims - 2, -1, -1):
        addr += (q % ext[d]) * stride[d]
        q = q // ext[d]
    return addr


def _region(bufs, box: List[int], off: int, n: int):
    """The n bytes of box from position off: a slice when they are one contiguous run, else the
    buffer and their byte offsets."""
    buf = bufs[box[0]]
    ndims, inner = box[1], box[3 + box[1] - 1]
    if ndims == 1 or off // inner == (off + n - 1) // inner:
        start = int(_addresses(box, off, 1, "cpu")[0])
        return buf[start:start + n], None
    return buf, _addresses(box, off, n, buf.device)


def _copy(bufs, boxes, op) -> None:
    n = op[3]
    src, si = _region(bufs, boxes[op[4]], op[5], n)
    dst, di = _region(bufs, boxes[op[6]], op[7], n)
    data = src if si is None else src[si]
    if di is None:
        dst.copy_(data)
    else:
        dst[di] = data


def _comm_tensor(bufs, boxes, ref_box: int, off: int, n: int) -> torch.Tensor:
    t, idx = _region(bufs, boxes[ref_box], off, n)
    if idx is not None:
        raise MeshcastError("meshcast.torch.run: a send or receive is not contiguous", -10)
    return t


def _global_rank(group, r: int) -> int:
    if group is None:
        return r
    if hasattr(dist, "get_global_rank"):
        return dist.get_global_rank(group, r)
    return dist.distributed_c10d._get_global_rank(group, r)


def run(schedule: Schedule, src: torch.Tensor, dst: torch.Tensor,
        group: Optional[dist.ProcessGroup] = None, workspace: Optional[torch.Tensor] = None
        ) -> None:
    """Executes this rank's part of schedule: reads src, writes dst (see the module's buffer
    convention). The group (default: the world) must have as many ranks as the schedule has
    GPUs. workspace, if given, is a byte tensor of at least the plan's workspace size; otherwise
    one is allocated on src's device. Raises MeshcastError on a size mismatch."""
    plans = _plans(schedule)
    rank, size = dist.get_rank(group), dist.get_world_size(group)
    if size != plans.nranks:
        raise MeshcastError(f"meshcast.torch.run: the group has {size} ranks, the schedule "
                            f"needs {plans.nranks} (one per GPU it involves)", -4)
    (src_b, dst_b, ws_b), steps, ops, boxes = plans.ranks[rank]
    if workspace is None:
        workspace = torch.empty(ws_b, dtype=torch.uint8, device=src.device)
    elif workspace.dtype != torch.uint8 or workspace.numel() < ws_b:
        raise MeshcastError(f"meshcast.torch.run: workspace must be a uint8 tensor of at least "
                            f"{ws_b} bytes", -4)
    bufs = [_bytes_of(src, "src", src_b), _bytes_of(dst, "dst", dst_b), workspace]
    for _index, first, npre, ncomm, npost in steps:
        for op in ops[first:first + npre]:
            _copy(bufs, boxes, op)
        p2p = []
        for op in ops[first + npre:first + npre + ncomm]:
            peer = _global_rank(group, op[1])
            if op[0] == _SEND:
                t = _comm_tensor(bufs, boxes, op[4], op[5], op[3])
                p2p.append(dist.P2POp(dist.isend, t, peer, group, op[2]))
            else:
                t = _comm_tensor(bufs, boxes, op[6], op[7], op[3])
                p2p.append(dist.P2POp(dist.irecv, t, peer, group, op[2]))
        if p2p:
            for work in dist.batch_isend_irecv(p2p):
                work.wait()
        for op in ops[first + npre + ncomm:first + npre + ncomm + npost]:
            _copy(bufs, boxes, op)


def pattern_buffers(schedule: Schedule, rank: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """CPU byte buffers for rank: src filled with meshcast's check pattern (every element's
    bytes derive from its tensor and global index), dst with its complement, so that
    :func:`check_dst` finds any misplaced or missing byte."""
    plans = _plans(schedule)
    src_b, dst_b, _ = plans.ranks[rank][0]
    gpu = plans.gpus[rank]
    src = torch.empty(src_b, dtype=torch.uint8)
    dst = torch.empty(dst_b, dtype=torch.uint8)
    if src_b:
        lib.mc_py_fill_src(schedule._ptr, gpu, ffi.cast("void *", src.data_ptr()))
    if dst_b:
        lib.mc_py_poison_dst(schedule._ptr, gpu, ffi.cast("void *", dst.data_ptr()))
    return src, dst


def check_dst(schedule: Schedule, rank: int, dst: torch.Tensor) -> Tuple[int, str]:
    """(wrong bytes, a report of the first few) of rank's destination buffer against the
    pattern."""
    plans = _plans(schedule)
    d = _bytes_of(dst.cpu().contiguous(), "dst", plans.ranks[rank][0][1])
    if d.numel() == 0:
        return 0, ""
    rep = ffi.new("mc_buf_t *")
    wrong = lib.mc_py_check_dst(schedule._ptr, plans.gpus[rank], ffi.cast("void *", d.data_ptr()),
                                rep)
    text = ffi.string(rep.data).decode() if rep.data != ffi.NULL else ""
    lib.mc_py_free(rep.data)
    return int(wrong), text

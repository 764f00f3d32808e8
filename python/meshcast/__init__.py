"""meshcast from Python: topologies, resharding tasks, lower bounds, the analytic cost model,
synthesis, simulation and validation, as a thin binding over libmeshcast (cffi, ABI mode).

Every call that fails raises :class:`MeshcastError` carrying meshcast's own message (the file,
line and what was expected). ``meshcast.torch.run`` executes a schedule with torch.distributed.

Example::

    import meshcast
    topo = meshcast.Topology.load("topologies/aws-p3.8xlarge-x5.xml")
    task = meshcast.Task.parse(["A={host:2,gpu:4}@0..7", "B={host:2,gpu:4}@8..15"],
                               ["f32[1024,1024,512] A[host,_,_] -> B[host,_,_]"])
    task.cost(topo).seconds          # analytic estimate, microseconds to compute
    sched = meshcast.synth(task, topo, strategy="meshcast")
    sched.sim(topo)                  # simulated seconds
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ._capi import ffi, lib

__all__ = ["MeshcastError", "Topology", "Task", "Bound", "Cost", "Tree", "Edge", "Schedule",
           "synth", "COST_STRATEGIES"]

#: Strategies the cost model knows (``Task.cost(strategy=...)``).
COST_STRATEGIES = ("meshcast", "p2p", "alpa-bcast")


class MeshcastError(Exception):
    """A meshcast call failed; ``str(e)`` is meshcast's message, ``e.status`` its status code
    (negative, as in ``util/util.h``: -3 malformed input, -4 invalid input, -5 usage, ...)."""

    def __init__(self, message: str, status: int = -4):
        super().__init__(message)
        self.status = status


def _err():
    return ffi.new("mc_err_t *")


def _check(st: int, err) -> None:
    if st != 0:
        msg = ffi.string(err.msg).decode() or ffi.string(lib.mc_status_str(st)).decode()
        raise MeshcastError(msg, st)


def _text(p) -> str:
    """A library-allocated string as str, freed."""
    try:
        return ffi.string(p).decode()
    finally:
        lib.mc_py_free(p)


class Topology:
    """A hardware topology (NCCL topology XML or meshcast cluster XML), loaded once.

    The cost model's per-topology state (routes, host lists) lives here and is reused by every
    :meth:`Task.cost` call on this topology."""

    def __init__(self, ptr, path: str):
        self._ptr = ffi.gc(ptr, lib.mc_topo_free)
        self._cost = None
        self.path = path
        info = ffi.new("int[3]")
        fp = ffi.new("uint64_t *")
        lib.mc_py_topo_info(self._ptr, info, fp)
        self.ngpus: int = info[0]
        self.nhosts: int = info[1]
        self.fingerprint: str = "%016x" % fp[0]
        self.warnings: List[str] = [ffi.string(lib.mc_py_topo_warning(self._ptr, i)).decode()
                                    for i in range(info[2])]

    @classmethod
    def load(cls, path: str, assume_nvlink: Optional[int] = None,
             assume_gpu: Optional[str] = None,
             assume_nic_gbps: Optional[int] = None) -> "Topology":
        """Loads a topology file; raises MeshcastError naming the file and line if it is bad.
        The keywords state what a file may leave out, as the command line's --assume-nvlink,
        --assume-gpu and --assume-nic-gbps do (docs/topology-format.md): the NVLinks to the
        NVSwitch of GPUs that list none, the model of a skeleton file's GPUs (a name such as
        "A100-SXM4-80GB" or a PCI device id; ValueError for one meshcast does not know) and the
        speed of NIC ports the file gives none for."""
        opts = ffi.new("mc_topo_load_opts_t *")
        opts.assume_nvlink = -1 if assume_nvlink is None else int(assume_nvlink)
        if assume_gpu is not None:
            device = ffi.new("unsigned *")
            if lib.mc_topo_gpu_model(str(assume_gpu).encode(), device) != 0:
                raise ValueError(f"assume_gpu: unknown GPU model {assume_gpu!r}; one of: "
                                 + ffi.string(lib.mc_topo_gpu_models()).decode())
            opts.assume_gpu = device[0]
        if assume_nic_gbps is not None:
            opts.assume_nic_mbps = int(assume_nic_gbps) * 1000
        out = ffi.new("mc_topo_t **")
        err = _err()
        _check(lib.mc_topo_load_with(str(path).encode(), opts, out, err), err)
        return cls(out[0], str(path))

    def _cost_topo(self):
        if self._cost is None:
            self._cost = ffi.gc(lib.mc_cost_topo_new(self._ptr), lib.mc_cost_topo_free)
        return self._cost

    def __repr__(self) -> str:
        return f"Topology({self.path!r}, gpus={self.ngpus}, hosts={self.nhosts})"


@dataclass(frozen=True)
class Bound:
    """Lower bound on any schedule's time: seconds, the binding term (ingress, egress, host-cut,
    mesh-cut, flow, cut, lp, host-relay, reach, latency, none; docs/task-format.md) and where it
    binds (a GPU, host or mesh index; -1 for none)."""
    seconds: float
    binding: str
    where: int


@dataclass(frozen=True)
class Cost:
    """The cost model's estimate (cost/cost.h): seconds = bandwidth_s + overhead_s; binding is
    'link' (the busiest link's bandwidth time dominates), 'connection' (one connection held at
    its rate limit, e.g. 180 GB/s between two H100, dominates), 'latency' (message overheads and
    pipeline fill dominate) or 'none'; link is the busiest link's id; confidence in (0, 1] is the
    share of the estimate that is exact link and connection arithmetic."""
    seconds: float
    bandwidth_s: float
    overhead_s: float
    binding: str
    link: int
    depth: int
    chunks: int
    confidence: float


class Task:
    """A resharding task: meshes and moves (docs/task-format.md), split into pieces."""

    def __init__(self, ptr, owner: object = None):
        # A task a schedule read from XML owns is freed with the schedule (owner keeps it alive).
        self._ptr = ptr if owner is not None else ffi.gc(ptr, lib.mc_task_free)
        self._owner = owner
        err = _err()
        _check(lib.mc_task_split(self._ptr, err), err)

    @classmethod
    def parse(cls, meshes: Sequence[str], moves: Sequence[str]) -> "Task":
        """Builds a task from mesh texts (``"A={x:2,y:4}@0..7"``) and move texts
        (``"f32[1024,512] A[x,_] -> B[_,y]"``); a bad one raises MeshcastError whose message
        quotes it and points at the column."""
        if isinstance(meshes, str) or isinstance(moves, str):
            raise TypeError("meshes and moves are sequences of strings")
        ptr = ffi.gc(lib.mc_task_new(), lib.mc_task_free)
        err = _err()
        for m in meshes:
            _check(lib.mc_task_add_mesh(ptr, m.encode(), err), err)
        for m in moves:
            _check(lib.mc_task_add_move(ptr, m.encode(), err), err)
        task = cls.__new__(cls)
        task._ptr, task._owner = ptr, None
        _check(lib.mc_task_split(ptr, err), err)
        return task

    @classmethod
    def load(cls, path: str) -> "Task":
        """Reads a task file; errors name the file and line."""
        out = ffi.new("mc_task_t **")
        err = _err()
        _check(lib.mc_task_load(str(path).encode(), out, err), err)
        return cls(out[0])

    from_file = load

    @classmethod
    def from_text(cls, text: str, name: str = "<text>") -> "Task":
        """Parses task-file text (errors say ``name:line``)."""
        out = ffi.new("mc_task_t **")
        err = _err()
        _check(lib.mc_task_parse_text(text.encode(), name.encode(), out, err), err)
        return cls(out[0])

    @property
    def text(self) -> str:
        """The task in canonical task-file form."""
        return _text(lib.mc_task_to_text(self._ptr))

    @property
    def total_bytes(self) -> int:
        """Bytes delivered: every piece's bytes times its destinations."""
        return int(lib.mc_task_total_bytes(self._ptr))

    @property
    def npieces(self) -> int:
        info = ffi.new("int[4]")
        lib.mc_py_task_info(self._ptr, info)
        return info[0]

    def check(self, topo: Topology) -> None:
        """Raises MeshcastError when a device id is not a GPU of the topology."""
        err = _err()
        _check(lib.mc_task_check_topo(self._ptr, topo._ptr, err), err)

    def bound(self, topo: Topology) -> Bound:
        """Lower bound on the time of any schedule for this task on the topology."""
        sec = ffi.new("double *")
        kind = ffi.new("const char **")
        where = ffi.new("int *")
        err = _err()
        _check(lib.mc_py_bound(self._ptr, topo._ptr, sec, kind, where, err), err)
        return Bound(sec[0], ffi.string(kind[0]).decode(), where[0])

    def cost(self, topo: Topology, strategy: str = "meshcast", fast: bool = False) -> Cost:
        """Analytic estimate of the time a strategy's schedule takes (no Z3, no simulation);
        strategy is one of COST_STRATEGIES. On hosts without an NVSwitch the meshcast estimate
        also consults the lower bound's fluid term (0.4 to 11 ms a task); fast=True skips it,
        less accurately there (docs/cost-model.md)."""
        opts = ffi.new("mc_cost_opts_t *")
        s = ffi.new("int *")
        if lib.mc_cost_strategy_parse(strategy.encode(), s) != 0:
            raise MeshcastError(f"cost: unknown strategy '{strategy}': expected one of "
                                f"{', '.join(COST_STRATEGIES)}", -5)
        opts.strategy = s[0]
        opts.fast = int(fast)
        out = ffi.new("mc_cost_t *")
        err = _err()
        _check(lib.mc_cost_estimate(topo._cost_topo(), self._ptr, opts, out, err), err)
        return Cost(out.seconds, out.bandwidth_s, out.overhead_s,
                    ffi.string(lib.mc_cost_bind_str(out.binding)).decode(), out.link, out.depth,
                    out.chunks, out.confidence)

    def synth(self, topo: Topology, strategy: str = "meshcast", **opts) -> "Schedule":
        """Same as :func:`synth` (task first)."""
        return synth(self, topo, strategy, **opts)

    def __repr__(self) -> str:
        return f"Task(pieces={self.npieces}, bytes={self.total_bytes})"


@dataclass(frozen=True)
class Edge:
    """One tree edge: parent GPU to child GPU over the named route (via: PXN relay GPU or -1)."""
    parent: int
    child: int
    route: Tuple[str, ...]
    via: int


@dataclass(frozen=True)
class Tree:
    """A byte range [offset, offset+bytes) of one piece moving from root down edges, in a phase,
    pipelined in chunks, inflight of them in flight per edge (8 where the tree models NCCL's
    collective kernels, 1 for meshcast's runtime); ramp: 0 for equal chunks, r for the first
    and last r chunks halving towards each end (docs/schedule-format.md); rate: planned bytes/s
    per edge, 0 when the tree owns its links."""
    piece: int
    offset: int
    bytes: int
    root: int
    phase: int
    chunks: int
    rate: float
    edges: Tuple[Edge, ...]
    inflight: int = 1
    ramp: int = 0


class Schedule:
    """A schedule (docs/schedule-format.md) made by :func:`synth` or read from XML."""

    def __init__(self, ptr, topo: Topology, task: Optional[Task]):
        self._ptr = ffi.gc(ptr, lib.mc_sched_free)
        self._topo = topo
        self.task = task if task is not None else Task(lib.mc_py_sched_task(ptr), owner=self)
        self.strategy: str = ffi.string(lib.mc_py_sched_strategy(ptr)).decode()
        self._xml: Optional[str] = None
        self._trees: Optional[List[Tree]] = None

    @classmethod
    def from_xml(cls, text: str, topo: Topology, name: str = "<schedule>") -> "Schedule":
        """Reads schedule XML made for topo (errors name ``name`` and the line)."""
        data = text.encode()
        out = ffi.new("mc_sched_t **")
        err = _err()
        _check(lib.mc_sched_parse_memory(data, len(data), name.encode(), topo._ptr, 0, out, err),
               err)
        return cls(out[0], topo, None)

    @classmethod
    def load(cls, path: str, topo: Topology) -> "Schedule":
        """Reads a schedule file."""
        with open(path, encoding="utf-8") as f:
            return cls.from_xml(f.read(), topo, str(path))

    @property
    def xml(self) -> str:
        """The schedule's XML (deterministic: same schedule, same bytes)."""
        if self._xml is None:
            self._xml = _text(lib.mc_sched_to_xml(self._ptr, self._topo._ptr))
        return self._xml

    def save(self, path: str) -> None:
        """Writes the XML to path through a temporary file and a rename."""
        import os
        import tempfile
        d = os.path.dirname(os.path.abspath(path))
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".meshcast-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(self.xml)
        os.replace(tmp, path)

    @property
    def params(self) -> Dict[str, str]:
        """What the strategy chose, as key=value pairs."""
        text = ffi.string(lib.mc_py_sched_params(self._ptr)).decode()
        return dict(kv.split("=", 1) for kv in text.split() if "=" in kv)

    @property
    def trees(self) -> List[Tree]:
        """The trees, phase by phase, in schedule order; a symmetric file's instances (its
        templates' trees renamed, docs/schedule-format.md) follow the trees it lists."""
        if self._trees is None:
            trees = []
            v = ffi.new("int64_t[9]")
            ev = ffi.new("int[3]")
            for i in range(lib.mc_py_sched_ntrees(self._ptr)):
                rate = lib.mc_py_sched_tree(self._ptr, i, v)
                edges = []
                for e in range(int(v[6])):
                    route = _text(lib.mc_py_sched_edge(self._ptr, self._topo._ptr, i, e, ev))
                    edges.append(Edge(int(ev[0]), int(ev[1]), tuple(route.split()), int(ev[2])))
                trees.append(Tree(int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4]),
                                  int(v[5]), float(rate), tuple(edges), int(v[7]), int(v[8])))
            self._trees = trees
        return self._trees

    def sim(self, topo: Optional[Topology] = None) -> float:
        """Simulated time in seconds on topo (default: the one it was made for)."""
        sec = ffi.new("double *")
        err = _err()
        _check(lib.mc_py_sim(self._ptr, (topo or self._topo)._ptr, sec, err), err)
        return sec[0]

    def validate(self, topo: Optional[Topology] = None) -> List[str]:
        """The violations of meshcast validate's rules, one line each; empty when valid."""
        buf = ffi.new("mc_buf_t *")
        n = lib.mc_sched_validate(self._ptr, (topo or self._topo)._ptr, buf)
        text = ffi.string(buf.data).decode() if buf.data != ffi.NULL else ""
        lib.mc_py_free(buf.data)
        lines = [line for line in text.splitlines() if line.strip()]
        return lines if n else []

    def __repr__(self) -> str:
        return f"Schedule(strategy={self.strategy!r}, trees={len(self.trees)})"


def synth(task: Task, topo: Topology, strategy: str = "meshcast",
          **opts: Union[int, float, str]) -> Schedule:
    """Synthesizes a schedule with a strategy (p2p, p2p-lb, alpa-bcast, xla, collectives,
    meshcast) and validates it. Options are those of ``meshcast synth``: budget (seconds),
    rlimit (Z3 resources, for reproducible results), memory_limit and chunk (bytes, suffixes K,
    M, G allowed), in_flight (chunks in flight per edge for the strategies that model NCCL's
    kernels: 8 by default, 1 to run the schedule with meshcast's runtime)."""
    keys = [ffi.new("char[]", k.replace("_", "-").encode()) for k in opts]
    vals = [ffi.new("char[]", str(v).encode()) for v in opts.values()]
    out = ffi.new("mc_sched_t **")
    err = _err()
    _check(lib.mc_py_synth(strategy.encode(), task._ptr, topo._ptr, keys, vals, len(keys), out,
                           err), err)
    return Schedule(out[0], topo, task)

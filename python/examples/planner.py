# Rank 100 candidate layouts for one pipeline-stage boundary by resharding cost, the way an
# auto-parallel planner would: stage A (GPUs 0-15) hands its activations to stage B (GPUs 16-31).
import itertools
import time

import meshcast

topo = meshcast.Topology.load("topologies/dgx-h100-x4.xml")  # loaded once, routes reused
source = "A={dp:2,tp:8}@0..15"
tensor = "bf16[16,4096,8192] A[dp,_,tp]"

interleaved = [16 + (i % 2) * 8 + i // 2 for i in range(16)]  # alternate the two hosts
candidates = []
for devices, (a, b) in itertools.product(["16..31", str(interleaved).replace(" ", "")],
                                         [(2, 8), (4, 4), (8, 2), (1, 16), (16, 1)]):
    mesh = f"B={{a:{a},b:{b}}}@{devices}"
    for spec in itertools.product(["_", "a", "b", "(a,b)", "(b,a)"], repeat=3):
        axes = "".join(spec).replace("_", "").replace("(", "").replace(",", "").replace(")", "")
        if len(axes) == len(set(axes)):
            candidates.append((mesh, f"B[{','.join(spec)}]"))
candidates = [candidates[i * len(candidates) // 100] for i in range(100)]  # 100 spread over all

t0 = time.perf_counter()
ranked = []
for mesh, layout in candidates:
    task = meshcast.Task.parse([source, mesh], [f"{tensor} -> {layout}"])
    ranked.append((task.cost(topo).seconds, task.cost(topo, strategy="p2p").seconds, mesh,
                   layout))
elapsed = time.perf_counter() - t0
ranked.sort()

print(f"{len(ranked)} candidates costed in {elapsed * 1e3:.1f} ms (parsing included)")
for cost, p2p, mesh, layout in ranked[:5] + ranked[-2:]:
    print(f"{cost * 1e3:8.3f} ms (p2p {p2p * 1e3:8.3f} ms)  {mesh:20s} {layout}")

#!/usr/bin/env bash
# Command-line tests of 'meshcast topo': show (text and JSON), route, dot and --svg, and the exit
# codes for bad files (1) and bad arguments (2); `-q` silences the loader's warnings in `topo` and
# `task` as in the other commands. Figures are read off the topology files.
. "$(dirname "$0")/lib.sh"
X="$SHARED/topo-xml"
D="$ROOT/tests/data/topo"
json() { python3 -c "import json,sys; d=json.load(open('$TMP/out')); sys.exit(0 if ($1) else 1)"; }

expect_exit 0 "topo --help" -- "$MESHCAST" topo --help
expect_grep "$TMP/out" '^usage: meshcast topo show FILE' "help names show"

expect_exit 0 "show DGX-1" -- "$MESHCAST" topo show "$X/dgx1-v100-hybrid-cube-mesh-topo.xml"
expect_grep "$TMP/out" '^GPUs: 8$' "8 GPUs"
expect_grep "$TMP/out" '^  7 +0 +h0/GPU7 +70 +120\.0 +6 +12\.00$' "GPU 7: sm 70, 120 GB/s over 6 NVLinks"
expect_grep "$TMP/out" '^  domain 0: GPUs 0-7$' "one NVLink domain"
expect_grep "$TMP/out" '^links: 68 \(directed\) LOC 2 NVL 32 PCI 26 SYS 2 NET 6$' "link counts by kind"

expect_exit 0 "show --json H100" -- "$MESHCAST" topo show --json "$X/oci-bm-gpu-h100.8-topo.xml"
expect_true "json: 1 host, 8 GPUs in order, 370.8 GB/s NVLink each" -- \
  json "d['hosts']==1 and [g['index'] for g in d['gpus']]==list(range(8)) and all(abs(g['nvlink_bw']-370.8)<1e-9 and g['sm']==90 and g['host']==0 for g in d['gpus'])"
expect_true "json: 8 dual-port NICs fused, 2 x 22.5 GB/s each" -- \
  json "len(d['nics'])==8 and all(n['bw']==45 and n['host']==0 for n in d['nics'])"
expect_true "json: link count (8 ports fewer: 16 links)" -- json "d['links']==82"

# RCCL's MI250 model: xGMI per GPU (7 or 6 links of 36 GB/s), and per pair the kind of link, as
# rocm-smi --showtopo lists it: GPU 0 has xGMI to 1, 4 and 6, PCIe to 2 and 3, SYS to the rest.
expect_exit 0 "show MI250" -- "$MESHCAST" topo show "$X/rccl-topo_8p1h.xml"
expect_grep "$TMP/out" '^  1 +0 +h0/GPU1 +gfx90a +216\.0 +6 +24\.00  \(xGMI\)$' "GPU 1: gfx90a, 216 GB/s of xGMI"
expect_grep "$TMP/out" '^links: 78 \(directed\) PCI 44 SYS 2 NET 8 XGMI 24$' "24 directed xGMI links: 3 rows per GPU"
expect_grep "$TMP/out" '^      0     X  XGMI   PCI   PCI  XGMI   SYS  XGMI   SYS$' "GPU 0's row of GPU pairs"
expect_exit 0 "show --json MI250" -- "$MESHCAST" topo show --json "$X/rccl-topo_8p1h.xml"
expect_true "json: GPU 0's row of link kinds" -- \
  json "d['gpu_pairs'][0]['kinds'][0]==['X','XGMI','PCI','PCI','XGMI','SYS','XGMI','SYS'] and d['gpus'][0]['fabric']=='XGMI' and d['gpus'][0]['arch']=='gfx90a'"
expect_exit 0 "dot MI100" -- "$MESHCAST" topo dot "$X/rccl-topo_4p3l.xml"
expect_grep "$TMP/out" 'label="h0/GPU0\\nGPU 0, gfx908\\nxGMI 72\.0 GB/s"' "an AMD GPU drawn with its gfx name and xGMI"
expect_exit 0 "show --json DGX-1" -- "$MESHCAST" topo show --json "$X/dgx1-v100-hybrid-cube-mesh-topo.xml"
expect_true "json: DGX-1 GPU 0 has NVLink to 1-4, SYS to 5-7" -- \
  json "d['gpu_pairs'][0]['kinds'][0]==['X','NVL','NVL','NVL','NVL','SYS','SYS','SYS'] and d['gpus'][0]['fabric']=='NVL'"

# GPUs whose <gpu> lists no NVLinks: inferred from the device id (H100 SXM5: 18 x 20.6 = 370.8),
# stated with --assume-nvlink, or PCIe-only with a message saying how to state them.
expect_exit 0 "NVLinks inferred" -- "$MESHCAST" topo show "$D/h100-no-nvlink-rows.xml"
expect_grep "$TMP/out" '^  3 +0 +h0/GPU3 +90 +370\.8 +18 +48\.00$' "GPU 3: 18 NVLinks assumed"
expect_grep "$TMP/err" 'assuming 18 NVLinks each to the NVSwitch, as on every H100-SXM5-80GB' "one warning says what was assumed"
expect_exit 0 "NVLinks unknown" -- "$MESHCAST" topo show "$D/unknown-gpu-no-nvlink-rows.xml"
expect_grep "$TMP/err" 'reached over PCIe only; if they have NVLinks to an NVSwitch, give their number with --assume-nvlink N' "says how to state them"
expect_exit 0 "--assume-nvlink 12" -- "$MESHCAST" topo show "$D/unknown-gpu-no-nvlink-rows.xml" --assume-nvlink 12
expect_grep "$TMP/out" '^  1 +0 +h0/GPU1 +90 +247\.2 +12 +48\.00$' "12 x 20.6 GB/s as stated"
expect_grep "$TMP/out" '^warnings: 0$' "nothing assumed"
expect_exit 2 "--assume-nvlink out of range" -- "$MESHCAST" topo show "$D/unknown-gpu-no-nvlink-rows.xml" --assume-nvlink 65
expect_exit 0 "task takes --assume-nvlink" -- "$MESHCAST" task --topo "$D/unknown-gpu-no-nvlink-rows.xml" --assume-nvlink 0 --mesh 'A={x:2}@0..1' 'f32[1024] A[x] -> A[_]'

expect_exit 0 "show p4d skeleton" -- "$MESHCAST" topo show "$X/aws-p4d-24xlarge-topo.xml"
expect_grep "$TMP/err" 'warning: .*aws-p4d-24xlarge-topo.xml:18: .*assuming A100-SXM4-40GB' "assumptions are warned"
expect_grep "$TMP/out" '^warnings: 12$' "12 assumptions listed"
expect_exit 0 "show -q" -- "$MESHCAST" topo show -q "$X/aws-p4d-24xlarge-topo.xml"
expect_true "show -q: no warnings on stderr" -- test ! -s "$TMP/err"
expect_exit 0 "task -q" -- "$MESHCAST" task -q --topo "$X/aws-p4d-24xlarge-topo.xml" \
    --mesh 'A={x:2}@0..1' 'f32[1024] A[x] -> A[_]'
expect_true "task -q: no warnings on stderr" -- test ! -s "$TMP/err"
expect_exit 0 "task without -q" -- "$MESHCAST" task --topo "$X/aws-p4d-24xlarge-topo.xml" \
    --mesh 'A={x:2}@0..1' 'f32[1024] A[x] -> A[_]'
expect_grep "$TMP/err" 'warning: .*assuming A100-SXM4-40GB' "task warns without -q"

expect_exit 0 "route over NVLink" -- "$MESHCAST" topo route "$X/dgx1-v100-hybrid-cube-mesh-topo.xml" 0 3
expect_grep "$TMP/out" 'h0/GPU0 +-> h0/GPU3 +NVL +40\.000 GB/s' "one double NVLink"
expect_grep "$TMP/out" '^bottleneck 40\.000 GB/s, latency 0\.5 us$' "bottleneck and latency"
expect_exit 0 "route across sockets" -- "$MESHCAST" topo route "$X/dgx1-v100-hybrid-cube-mesh-topo.xml" 0 5
expect_grep "$TMP/out" 'h0/CPU0 +-> h0/CPU1 +SYS +6\.000 GB/s' "QPI hop"
expect_grep "$TMP/out" '^bottleneck 6\.000 GB/s' "QPI is the bottleneck"
expect_exit 0 "route --json" -- "$MESHCAST" topo route --json "$X/oci-bm-gpu4.8-a100-topo.xml" 2 6
expect_true "json route: GPU2 -> NVS -> GPU6 at 240" -- \
  json "[l['to'] for l in d['links']]==['h0/NVS','h0/GPU6'] and d['bw']==240 and d['via_gpu']==-1"

# the shipped rail-optimized cluster: GPU 0 of host 0 sends to GPU 1 of host 1 through GPU 1 of
# host 0, whose NIC is on rail 1 (PXN)
expect_exit 0 "route PXN" -- "$MESHCAST" topo route --json "$ROOT/topologies/dgx-h100-x4.xml" 0 9
expect_true "json route: NVLink to GPU 1, then rail 1" -- \
  json "d['via_gpu']==1 and d['links'][1]['to']=='h0/GPU1' and any(l['to']=='rail1' for l in d['links'])"

expect_exit 0 "dot" -- "$MESHCAST" topo dot "$X/pcie-rtx3090x8-1nic-topo.xml"
expect_grep "$TMP/out" '^digraph topology \{' "DOT header"
expect_grep "$TMP/out" '"h0/GPU0" -> "h0/PCI/0000:0c:00.0" \[label="PCI 24", dir=both\]' "a PCIe link drawn both ways"
if command -v dot >/dev/null; then
  expect_exit 0 "dot --svg" -- "$MESHCAST" topo dot "$X/pcie-rtx3090x8-1nic-topo.xml" --svg "$TMP/t.svg"
  expect_grep "$TMP/t.svg" '<svg ' "an SVG file"
fi

for f in malformed wrong-root missing-attr unknown-unit zero-bandwidth duplicate-busid \
         nvlink-unknown-target pci-cycle absurd-width absurd-speed billion-laughs external-entity; do
  expect_exit 1 "bad input $f" -- "$MESHCAST" topo show "$D/$f.xml"
  expect_grep "$TMP/err" "^meshcast: .*$f\.xml:[0-9]+: " "$f: one message with file and line"
done
expect_exit 1 "graph dialect" -- "$MESHCAST" topo show "$X/azure-ncv4-graph.xml"
expect_grep "$TMP/err" 'NCCL graph file' "graph dialect named"
expect_exit 1 "skeleton" -- "$MESHCAST" topo show "$X/aws-g5-48xlarge-topo.xml"
expect_grep "$TMP/err" 'lists only PCI bus ids.*NCCL_TOPO_DUMP_FILE' "says how to dump a full file"
# Azure's skeletons give GPUs and NICs by PCI class alone: refused with the option that states the
# model, loaded with it (and the port speed), every command taking them, bad values usage errors.
expect_exit 1 "Azure skeleton" -- "$MESHCAST" topo show "$X/azure-ndv5-topo.xml"
expect_grep "$TMP/err" 'or state the model with --assume-gpu MODEL \(one of: .*H100-SXM5-80GB \(0x2330\)' "names --assume-gpu and the models"
expect_exit 0 "Azure skeleton, model stated" -- "$MESHCAST" topo show --assume-gpu h100-sxm5-80gb --assume-nic-gbps 400 "$X/azure-ndv5-topo.xml"
expect_grep "$TMP/out" '^  7 +0 +h0/GPU7 +90 +370\.8 +18 +48\.00$' "GPU 7: an H100 on the NVSwitch"
expect_grep "$TMP/out" '^  h0/NET7 +host 0 +50\.000 GB/s \(400 Gb/s\)$' "ports at the stated 400 Gb/s"
expect_exit 0 "synth takes --assume-gpu" -- "$MESHCAST" synth -q --assume-gpu 0x2330 --topo "$X/azure-ndv5-topo.xml" --mesh 'A={x:8}@0..7' 'f32[8,1024] A[x,_] -> A[_,_]' -o "$TMP/az.xml"
expect_exit 0 "validate takes --assume-gpu" -- "$MESHCAST" validate -q --assume-gpu 0x2330 --topo "$X/azure-ndv5-topo.xml" "$TMP/az.xml"
expect_exit 2 "--assume-gpu unknown model" -- "$MESHCAST" topo show --assume-gpu A100 "$X/azure-ndv4-topo.xml"
expect_grep "$TMP/err" "expects a GPU model or its PCI device id, one of: V100-SXM2-32GB \(0x1db5\).*got 'A100'" "lists the models"
expect_exit 2 "--assume-nic-gbps 0" -- "$MESHCAST" topo show --assume-nic-gbps 0 "$X/azure-ndv4-topo.xml"

# Two GPUs and two NICs under one PCIe switch (DGX A100): GPU i sends through NIC i, as NCCL pairs them.
for g in 0 1 2 3; do
  expect_exit 0 "A100 route $g -> $((g + 8))" -- "$MESHCAST" topo route "$ROOT/topologies/dgx-a100-x4.xml" $g $((g + 8))
  expect_grep "$TMP/out" "h0/NIC$g +-> h0/NET$g " "GPU $g leaves through its own NIC $g"
done

expect_exit 2 "no subcommand" -- "$MESHCAST" topo
expect_exit 2 "unknown subcommand" -- "$MESHCAST" topo frob "$X/dgx1-v100-hybrid-cube-mesh-topo.xml"
expect_exit 2 "GPU out of range" -- "$MESHCAST" topo route "$X/dgx1-v100-hybrid-cube-mesh-topo.xml" 0 8
expect_exit 2 "GPU not a number" -- "$MESHCAST" topo route "$X/dgx1-v100-hybrid-cube-mesh-topo.xml" 0 x
expect_exit 2 "unknown option" -- "$MESHCAST" topo show --bogus "$X/dgx1-v100-hybrid-cube-mesh-topo.xml"
expect_exit 2 "--svg on show" -- "$MESHCAST" topo show --svg x.svg "$X/dgx1-v100-hybrid-cube-mesh-topo.xml"

# The clusters of the eight-host sweep (make sweep-hosts8): eight of each host file, with its NIC
# ports (DGX-1 3, DGX H100 8, MI250 4, MI300X 8, p4d 4, RTX 3090 box 1).
for f in dgx1:3 h100:8 mi250:4 mi300x:8 p4d:4 rtx3090:1; do
  expect_exit 0 "show ${f%:*}-x8" -- "$MESHCAST" topo show -q "$ROOT/topologies/${f%:*}-x8.xml"
  expect_grep "$TMP/out" '^hosts: 8$' "${f%:*}-x8: 8 hosts"
  expect_grep "$TMP/out" '^GPUs: 64$' "${f%:*}-x8: 64 GPUs"
  expect_grep "$TMP/out" "^NIC ports: $((8 * ${f#*:}))\$" "${f%:*}-x8: ${f#*:} NIC ports a host"
done
# Three MI250 boxes, the odd host count of docs/synthesis.md's 100 unseen cases.
expect_exit 0 "show mi250-x3" -- "$MESHCAST" topo show -q "$ROOT/topologies/mi250-x3.xml"
expect_grep "$TMP/out" '^hosts: 3$' "mi250-x3: 3 hosts"
expect_grep "$TMP/out" '^GPUs: 24$' "mi250-x3: 24 GPUs"
expect_grep "$TMP/out" '^NIC ports: 12$' "mi250-x3: 4 NIC ports a host"

finish

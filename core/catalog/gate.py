"""The readiness gate: what a healthy GPU node, fabric and Lustre look like (defaults and bounds of the gate's
settings, rendered into the gate program's argv). Each figure names its source.
"""

from __future__ import annotations

# Read by the gate's settings (defaults and bounds) and rendered into the gate program's argv; the program
# itself (pod_programs/readiness_gate.py) imports nothing from here because it ships as a ConfigMap.
#
# Units: GB/s means 1e9 bytes/s, as nccl-tests prints it (`getBw` divides by 1.0E9; nccl-tests
# src/common.cu), and bus bandwidth ("busbw") is nccl-tests' figure: algbw = S/t, busbw = algbw x 2(n-1)/n
# for all-reduce and algbw x (n-1)/n for all-gather, S being the all-gather's whole output
# (NVIDIA/nccl-tests doc/PERFORMANCE.md @ 03a204a1f38aaea17f1a777885bb2d9600ba7eff). The two thresholds below
# apply to different figures and are not comparable with each other:
#   - all-gather: the sweep AVERAGE of busbw over 1 KiB..8 GiB (what nccl-tests prints as "Avg bus bandwidth");
#   - all-reduce: busbw at the LARGEST message of the sweep (8 GiB), where the fixed per-call cost is negligible.

# Cluster Toolkit's daily A4 and A3 Ultra GKE tests run `all_gather_perf -b 1K -e 8G -f 2 -g 1 -w 5 --iters 100`
# on 2 nodes and fail below an "Avg bus bandwidth" of 100 GB/s (GoogleCloudPlatform/cluster-toolkit
# tools/cloud-build/daily-tests/ansible_playbooks/test-validation/test-gke-a4.yml @ 7544c47e7388 and
# test-gke-a3-ultra.yml @ 1dbcc3b15374; the sweep is examples/gke-a4/nccl-jobset-example.yaml @ 0bcb0c2d3cb4).
GATE_SWEEP_MIN_BYTES = 1024
GATE_SWEEP_MAX_BYTES = 8 * 1024**3
GATE_SWEEP_WARMUP = 5
GATE_SWEEP_ITERS = 100
GATE_ALLGATHER_SWEEP_AVG_BUSBW_GBPS = 100.0

# Per GPU type (the records in gpus.py): the RDMA NICs' rate (RDMA_NIC_GBITPS), the primary NIC Lustre traffic uses
# (PRIMARY_NIC_GBITPS: nodes x this bounds what the GPU nodes can read or write together), the gIB plugin's name
# (NCCL_NET_PLUGIN) and the physical busbw bound (GATE_GPU_FACTS).

# All-reduce at 8 GiB across nodes: NCCL splits the data over one ring (channel) per rail, and each ring
# leaves the node through its own 50 GB/s NIC, so the rate at which every rank sends, which is what busbw
# measures, is at most 8 rings x 50 GB/s = 400 GB/s, for both machine types. The default floor is half of
# that bound: losing GPUDirect RDMA (staging through host memory), traffic on half
# the NICs (bound 200 GB/s) or a fall-back to TCP over gVNIC (<= 50 GB/s) each land below it, while a healthy
# 2-node gIB run stays above. This is a derived floor, not a published figure; the setting overrides it.
GATE_ALLREDUCE_LARGE_BUSBW_GBPS = 200.0


# Lustre: the gate expects fraction x min(instance aggregate throughput, nodes x primary NIC) for both the
# parallel write and the read of another node's files. Half by default: a short duration-based test from a
# few clients does not reach the instance's ceiling, but a slow mount (wrong port mode, MTU mismatch, a
# client on the wrong interface) falls far below half.
GATE_LUSTRE_FRACTION = 0.5
GATE_LUSTRE_SECONDS = 15
GATE_LUSTRE_THREADS_PER_NODE = 16
GATE_LUSTRE_BLOCK_BYTES = 16 * 1024**2  # O_DIRECT transfer size: a multiple of the page size
GATE_LUSTRE_MAX_BYTES_PER_NODE = 64 * 1024**3

# Once per node: a node's full pass lets later gates on the same node (same boot, driver and gIB plugin, and terms no
# stricter: pod_programs/gate_checks.py) skip the Lustre and NCCL sweeps for this long, and the fast GPU health check
# (NVML: GPU count, ECC, row remapping) and the Lustre mount probe still run at every submission. A day is the
# project's choice, the interval Oracle's OKE active health checks use for the same decision (they run NCCL tests
# "only ... on idle nodes that were not already tested in the last 24 hours (configurable)",
# oracle-quickstart/oci-hpc-oke docs/running-active-health-checks.md @ 83645bbe); Google's Cluster Health Scanner
# likewise keeps each node's last NCCL result on the node itself (labels `aiinfra/nccl-healthcheck-result`, ...,
# GoogleCloudPlatform/cluster-health-scanner README.md @ 1d5c752c, "Viewing Results"). It bounds what can degrade
# within one boot without a driver or plugin change (a NIC link, the Lustre client).
GATE_NODE_PASS_WINDOW_SECONDS = 24 * 3600

#!/usr/bin/env bash
# What two grading lanes (run.py grade --gpus 0,1) share on one host: a
# process's first CUDA call alone and on both GPUs at once, without and with
# bwhold holding a context on each GPU; then the host's memory bandwidth
# for one process and for two at once. Needs build/bwhold (run.py test
# builds it) and two GPUs. docs/SPEED.md has the figures of nvidia-h200-x2.
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
W=$(mktemp -d /tmp/probe.XXXXXX)
nvcc -O2 -o "$W/cuda_start" tests/gpu/probes/cuda_start.cu || exit 1
gcc -O2 -std=c11 -o "$W/host_bandwidth" tests/gpu/probes/host_bandwidth.c -lpthread || exit 1
THREADS=${THREADS:-$(nproc)}
both() {   # the command on GPU 0 and GPU 1 at the same moment
  CUDA_VISIBLE_DEVICES=0 "$@" gpu0 > "$W/a" 2>&1 & local a=$!
  CUDA_VISIBLE_DEVICES=1 "$@" gpu1 > "$W/b" 2>&1; wait $a; cat "$W/a" "$W/b"
}
starts() {
  for g in 0 0 1; do CUDA_VISIBLE_DEVICES=$g "$W/cuda_start" "gpu$g alone"; done
  for i in 1 2 3; do both "$W/cuda_start"; done
}
echo "== first CUDA call, nothing else on the GPUs"; starts
sleep 600 | CUDA_VISIBLE_DEVICES=0 build/bwhold > /dev/null & h0=$!
sleep 600 | CUDA_VISIBLE_DEVICES=1 build/bwhold > /dev/null & h1=$!
sleep 2
echo "== first CUDA call, bwhold on each GPU"; starts
kill "$h0" "$h1" 2>/dev/null; pkill -P $$ sleep 2>/dev/null
echo "== host memory bandwidth, $THREADS threads: alone twice, then two at once"
"$W/host_bandwidth" "$THREADS" alone; "$W/host_bandwidth" "$THREADS" alone
at=$(( $(date +%s) + 3 ))   # after both have mapped and touched their 2 GiB
"$W/host_bandwidth" "$THREADS" first $at & a=$!; "$W/host_bandwidth" "$THREADS" second $at; wait $a
rm -rf "$W"

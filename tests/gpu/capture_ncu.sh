#!/usr/bin/env bash
# Record real Nsight Compute output for tests/python/test_ncu.py (and the
# numbers for handout/tools.md). Run it ON THE H100, from the repository root:
#
#     bash tests/gpu/capture_ncu.sh
#
# Needs: nvcc and cmake, ncu on PATH (or NCU=/path/to/ncu), permission to read
# the GPU's performance counters (root, or NVreg_RestrictProfilingToAdminUsers=0),
# and a bwgrade that has the `once` mode.
#
# It builds in its own trees (build/capture-*) with BW_STUDENT_ONLY=ON, which
# needs neither the Check library nor the rest of the kit: the "student" file
# of each tree is the one to profile (the reference solution, then the
# deliberately scalar haxpy of tests/data/asm/scalar_haxpy.cu).
#
# The one command that matters, as it runs below (N = 2^28 - 1, T = build/capture-solution):
#
#   ncu --target-processes all --csv --page raw --print-units base \
#       --print-metric-instances details \
#       --metrics gpu__time_duration.sum,gpc__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second,sm__maximum_warps_per_active_cycle_pct,smsp__sass_inst_executed_op_global_ld.sum,smsp__sass_inst_executed_op_global_st.sum,sass__inst_executed_per_opcode \
#       --log-file tests/data/ncu_haxpy_solution_h100.csv \
#       T/bwgrade once haxpy --worker T/bw_worker_haxpy --n 268435455
#
# (the metric list and the options are those of grader/py/bwlab/ncu.py, so the two
# stay in step; `details` prints instanced metrics with their names, e.g. opcodes).
#
# Files written (commit the first; the others are for reference and the handout):
#   tests/data/ncu_haxpy_solution_h100.csv          the raw CSV that test_ncu.py parses
#   tests/data/ncu_haxpy_scalar_h100.csv            the same for the scalar haxpy
#   tests/data/ncu_haxpy_solution_h100_opcodes.txt  per-opcode counts with instance details
#   tests/data/ncu_capture_h100_info.txt            ncu and driver versions, GPU, commands
#   tests/data/profile_haxpy_solution_h100.txt      `run.py profile` on the solution (if it runs)
#   tests/data/asm_haxpy_solution_sm90.txt          `run.py asm haxpy --solutions --summary`
set -uo pipefail

cd "$(dirname "$0")/../.."
ROOT=$PWD
DATA=tests/data
N=268435455
NCU=${NCU:-ncu}
JOBS=$(nproc 2>/dev/null || echo 8)

die() { echo "capture_ncu.sh: $*" >&2; exit 1; }

command -v "$NCU" >/dev/null || die "ncu not found (set NCU=/path/to/ncu)"
command -v cmake >/dev/null || die "cmake not found"
command -v nvcc >/dev/null || [ -x /usr/local/cuda/bin/nvcc ] || die "nvcc not found"
export PATH="$PATH:/usr/local/cuda/bin"

METRICS=$(python3 -c 'import sys; sys.path.insert(0, "grader/py"); from bwlab import ncu; print(",".join(ncu.METRICS))') \
    || die "cannot read the metric list from grader/py/bwlab/ncu.py"

# student_dir NAME [OVERLAY_DIR]: build/capture-NAME-src holding every exercise's
# stub from exercises/ (CMake wants a file for each), with OVERLAY_DIR's files on top.
student_dir() {
    local dir="$ROOT/build/capture-$1-src" d name
    rm -rf "$dir"
    for d in exercises/*/; do
        name=$(basename "$d")
        [ -f "$d/$name.cu" ] || continue
        mkdir -p "$dir/$name"
        cp "$d/$name.cu" "$dir/$name/$name.cu"
        if [ -n "${2:-}" ] && [ -f "$2/$name/$name.cu" ]; then
            cp "$2/$name/$name.cu" "$dir/$name/$name.cu"
        fi
    done
    echo "$dir"
}

# build_tree NAME STUDENT_DIR: bwgrade and bw_worker_haxpy built from STUDENT_DIR/haxpy/haxpy.cu
build_tree() {
    local tree="build/capture-$1"
    cmake -S . -B "$tree" -DCMAKE_BUILD_TYPE=Release -DBW_STUDENT_ONLY=ON \
          -DBW_STUDENT_DIR="$2" >"$tree.configure.log" 2>&1 \
        || { cat "$tree.configure.log"; die "cmake could not configure $tree"; }
    cmake --build "$tree" -j "$JOBS" --target bwgrade bw_worker_haxpy \
        || die "could not build $tree"
}

# profile TREE OUT: the command above, for the haxpy worker of TREE
profile() {
    local tree="build/capture-$1" out="$2"
    rm -f "$out"
    echo "+ $NCU --target-processes all --csv --page raw --print-units base --print-metric-instances details --metrics $METRICS --log-file $out $tree/bwgrade once haxpy --worker $tree/bw_worker_haxpy --n $N"
    "$NCU" --target-processes all --csv --page raw --print-units base \
           --print-metric-instances details \
           --metrics "$METRICS" \
           --log-file "$out" \
           "$tree/bwgrade" once haxpy --worker "$tree/bw_worker_haxpy" --n "$N"
    local rc=$?
    echo "ncu exit code: $rc"
    grep -E '^==(ERROR|WARNING)==' "$out" || true
    if grep -q ERR_NVGPUCTRPERM "$out" 2>/dev/null; then
        die "no permission to read the performance counters: run as root"
    fi
    grep -q '^"ID"' "$out" || die "$out holds no CSV; see the messages above"
    return 0
}

mkdir -p build
{
    echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "ncu: $("$NCU" --version | tail -1)"
    echo "nvcc: $(nvcc --version | tail -1)"
    nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>/dev/null \
        | sed 's/^/gpu: /'
    echo "n: $N"
    echo "metrics: $METRICS"
} >"$DATA/ncu_capture_h100_info.txt"
cat "$DATA/ncu_capture_h100_info.txt"

# 1. The reference solution.
[ -f solutions/haxpy/haxpy.cu ] || die "solutions/haxpy/haxpy.cu is missing"
build_tree solution "$(student_dir solution "$ROOT/solutions")"
profile solution "$DATA/ncu_haxpy_solution_h100.csv"

# 2. The deliberately scalar haxpy (16-bit loads and stores).
SCALAR_DIR=$(student_dir scalar)
cp "$DATA/asm/scalar_haxpy.cu" "$SCALAR_DIR/haxpy/haxpy.cu"
build_tree scalar "$SCALAR_DIR"
profile scalar "$DATA/ncu_haxpy_scalar_h100.csv" || echo "scalar capture failed (not needed by the tests)"

# 3. Per-opcode counts with instance details for two metrics only: a small file
#    in the layout of step 1 (kept as a test fixture; step 1 now has the names too).
"$NCU" --target-processes all --csv --page raw --print-units base \
       --print-metric-instances details --metrics sass__inst_executed_per_opcode,smsp__inst_executed.sum \
       --log-file "$DATA/ncu_haxpy_solution_h100_opcodes.txt" \
       build/capture-solution/bwgrade once haxpy --worker build/capture-solution/bw_worker_haxpy --n "$N" \
    || echo "opcode-details capture failed (reference only)"

# 4. The kit's own views, for handout/tools.md (need the main build; skipped if it fails).
python3 run.py profile haxpy --solutions >"$DATA/profile_haxpy_solution_h100.txt" 2>&1 \
    || echo "run.py profile failed: see $DATA/profile_haxpy_solution_h100.txt"
python3 run.py asm haxpy --solutions --summary >"$DATA/asm_haxpy_solution_sm90.txt" 2>&1 \
    || echo "run.py asm failed: see $DATA/asm_haxpy_solution_sm90.txt"

# 5. The parser against what was just recorded.
python3 -m unittest tests.python.test_ncu -v 2>&1 | tail -25

echo
echo "done. Commit $DATA/ncu_haxpy_solution_h100.csv (and, if useful, the other files listed at the top)."

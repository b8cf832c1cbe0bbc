#!/usr/bin/env bash
# Builds tests/gpu/probes/new_exercises_probe.cu (with the exercise's part,
# new_exercises_probe_EX.cu) once per implementation of saxpy, reduce_sum and
# transpose (the solutions with their default knobs, a few knob variants, the
# CUB peers), checks each against the probe's CPU reference and times it
# next to a device-to-device copy of the same bytes, measured in the same
# process. Prints one table at the end; full logs stay in LOGDIR.
#   bash tests/gpu/new_exercises_probe.sh [LOGDIR]
#   BUILD_ONLY=1 bash tests/gpu/new_exercises_probe.sh   (compile only: no GPU needed)
#   ARCH=90   QUICK=1 (skip the GiB-sized checks)   TIME_ALL=1 (variants at every size)
#   ONLY="saxpy transpose" (those exercises)   LABELS="sol flat" (those implementations)
set -uo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PATH:/usr/local/cuda/bin"
LOG=${1:-$(mktemp -d /tmp/newex.XXXXXX)}
mkdir -p "$LOG"
B=$(mktemp -d /tmp/newex-bin.XXXXXX)
ARCH=${ARCH:-90}
T0=$SECONDS

# label:exercise:source:flags (flags comma-separated). "sol" and "cub" get
# the full check and every size; the variants a quick check and the sizes
# marked for variants below.
IMPLS="
sol:saxpy:solutions/saxpy/saxpy.cu:
reg:saxpy:solutions/saxpy/saxpy.cu:-DBW_STAGING=0
head256:saxpy:solutions/saxpy/saxpy.cu:-DBW_HEAD_ALIGN=256
stg:saxpy:solutions/saxpy/saxpy.cu:-DBW_STAGED_BELOW_MHZ=100000
stg1536:saxpy:solutions/saxpy/saxpy.cu:-DBW_STAGED_BELOW_MHZ=100000,-DBW_STAGE_ELEMS=1536
regv2:saxpy:solutions/saxpy/saxpy.cu:-DBW_STAGING=0,-DBW_VECS_PER_THREAD=2
regb512:saxpy:solutions/saxpy/saxpy.cu:-DBW_STAGING=0,-DBW_BLOCK=512
regb256:saxpy:solutions/saxpy/saxpy.cu:-DBW_STAGING=0,-DBW_BLOCK=256
cub:saxpy:grader/peers/saxpy_cub.cu:
sol:reduce_sum:solutions/reduce_sum/reduce_sum.cu:
v2:reduce_sum:solutions/reduce_sum/reduce_sum.cu:-DBW_VECS_PER_THREAD=2
v8:reduce_sum:solutions/reduce_sum/reduce_sum.cu:-DBW_VECS_PER_THREAD=8
b256x8:reduce_sum:solutions/reduce_sum/reduce_sum.cu:-DBW_BLOCK=256,-DBW_BLOCKS_PER_SM=8
atomics:reduce_sum:solutions/reduce_sum/reduce_sum.cu:-DBW_ATOMICS=1
cub:reduce_sum:grader/peers/reduce_sum_cub.cu:
sol:transpose:solutions/transpose/transpose.cu:
band32:transpose:solutions/transpose/transpose.cu:-DBW_VEC_BAND=32
bands:transpose:solutions/transpose/transpose.cu:-DBW_VEC_ROW_ORDER_COLS=0
v16x16:transpose:solutions/transpose/transpose.cu:-DBW_VEC_LR=16,-DBW_VEC_MIN_BLOCKS=1
v32x8:transpose:solutions/transpose/transpose.cu:-DBW_VEC_LC=8,-DBW_VEC_MIN_BLOCKS=1
xa8:transpose:solutions/transpose/transpose.cu:-DBW_VEC_OUT_ALIGN=8,-DBW_VEC_L2_FETCH=0
nofetch:transpose:solutions/transpose/transpose.cu:-DBW_VEC_L2_FETCH=0
rowvec:transpose:solutions/transpose/transpose.cu:-DBW_VEC_ROW_LINES=0
band256:transpose:solutions/transpose/transpose.cu:-DBW_VEC_BAND=256
v16mb4:transpose:solutions/transpose/transpose.cu:-DBW_VEC_LR=16,-DBW_VEC_MIN_BLOCKS=4
vecgrid:transpose:solutions/transpose/transpose.cu:-DBW_VEC_LINE_GRID=0
wide0:transpose:solutions/transpose/transpose.cu:-DBW_WIDE_VEC=0
tall0:transpose:solutions/transpose/transpose.cu:-DBW_TALL_VEC=0
thin16:transpose:solutions/transpose/transpose.cu:-DBW_THIN_ROWS=16,-DBW_THIN_COLS=16"
# ONLY="saxpy transpose": just those exercises; LABELS="sol cub": just the
# implementations with those labels.
IMPLS=$(for line in $IMPLS; do IFS=: read -r label ex _ _ <<< "$line"
    case " ${ONLY:-$ex} " in *" $ex "*) ;; *) continue ;; esac
    case " ${LABELS:-$label} " in *" $label "*) echo "$line" ;; esac; done)
# Sizes: all for sol and cub; the first VAR_SIZES of each for the variants.
declare -A SIZES=(
  [saxpy]="268435455 67108869"
  [reduce_sum]="268435455 67108869"
  [transpose]="16384:16384 1048579:1001 8192:8193 46340:46340 17:1048579 128:1048579 1048579:33 16777259:17 4194319:64 268435455:1"
)
declare -A VAR_SIZES=([saxpy]=1 [reduce_sum]=1 [transpose]=2)

define() { echo "-DPROBE_$(echo "$1" | tr a-z A-Z)"; }

# ---- build, in parallel -----------------------------------------------------
jobs_max=$(nproc 2>/dev/null || echo 4)
build_one() {   # label ex src flags
    local label=$1 ex=$2 src=$3 flags=${4//,/ }
    nvcc -O3 -std=c++17 -arch=sm_$ARCH -Xcompiler=-Wall,-Wextra $flags "$(define "$ex")" \
        -DPROBE_LABEL="\"$label\"" -Iexercises/"$ex" tests/gpu/probes/new_exercises_probe.cu \
        tests/gpu/probes/new_exercises_probe_"$ex".cu "$src" \
        -o "$B/${ex}_$label" > "$LOG/build_${ex}_$label.txt" 2>&1 \
        || echo "BUILD FAILED: $ex $label (log: $LOG/build_${ex}_$label.txt)"
}
for line in $IMPLS; do
    IFS=: read -r label ex src flags <<< "$line"
    while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do sleep 0.2; done
    build_one "$label" "$ex" "$src" "$flags" &
done
wait
built=0; failed=0
for line in $IMPLS; do
    IFS=: read -r label ex _ _ <<< "$line"
    if [ -x "$B/${ex}_$label" ]; then built=$((built + 1)); else failed=$((failed + 1)); tail -5 "$LOG/build_${ex}_$label.txt"; fi
    grep -H -i "warning" "$LOG/build_${ex}_$label.txt" | head -3
done
echo "built $built probes, $failed failed ($((SECONDS - T0)) s); binaries in $B"
if [ -n "${BUILD_ONLY:-}" ]; then
    [ $failed -eq 0 ]; exit
fi

# ---- run --------------------------------------------------------------------
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.mem --format=csv,noheader \
    > "$LOG/gpu.txt" 2>&1
for line in $IMPLS; do
    IFS=: read -r label ex _ _ <<< "$line"
    bin="$B/${ex}_$label"
    [ -x "$bin" ] || continue
    main=0; { [ "$label" = sol ] || [ "$label" = cub ]; } && main=1
    mode=quick; [ $main = 1 ] && [ -z "${QUICK:-}" ] && mode=full
    timeout -k 5 240 "$bin" check $([ $mode = quick ] && echo quick) > "$LOG/check_${ex}_$label.txt" 2>&1
    rc=$?
    grep -q '^CHECK' "$LOG/check_${ex}_$label.txt" || echo "CHECK $label $ex did not finish (exit $rc, $mode)" >> "$LOG/check_${ex}_$label.txt"
    echo "checked $ex $label ($mode): $(grep -E '^CHECK' "$LOG/check_${ex}_$label.txt" | tail -1) [$((SECONDS - T0)) s]"
    k=0
    for s in ${SIZES[$ex]}; do
        k=$((k + 1))
        [ $main = 0 ] && [ -z "${TIME_ALL:-}" ] && [ $k -gt "${VAR_SIZES[$ex]}" ] && continue
        timeout -k 5 120 "$bin" time ${s/:/ } >> "$LOG/time_${ex}_$label.txt" 2>&1 \
            || echo "TIMEFAIL|$ex|$label|$s|exit $?" >> "$LOG/time_${ex}_$label.txt"
    done
done
echo "runs done [$((SECONDS - T0)) s]"

# ---- the table ----------------------------------------------------------------
python3 - "$LOG" <<'PY'
import collections, pathlib, sys
log = pathlib.Path(sys.argv[1])
print("\n==== new exercises probe:", (log / "gpu.txt").read_text().strip())
print("\n-- correctness (probe's CPU reference; failing cases listed)")
for f in sorted(log.glob("check_*.txt")):
    lines = f.read_text(errors="replace").splitlines()
    summary = [l for l in lines if l.startswith("CHECK")]
    fails = [l for l in lines if l.startswith(("CASE FAIL", "FATAL"))]
    skips = [l for l in lines if l.startswith("CASE SKIP")]
    print(f"{f.stem[6:]:22} {summary[-1] if summary else 'no summary: ' + (lines[-1] if lines else 'no output')}"
          + (f"  ({len(skips)} skipped)" if skips else ""))
    for l in fails[:4]:
        print("    " + l[:220])
    if len(fails) > 4:
        print(f"    ... {len(fails) - 4} more")
rows = collections.OrderedDict()
bad = []
for f in sorted(log.glob("time_*.txt")):
    for l in f.read_text(errors="replace").splitlines():
        p = l.split("|")
        if p[0] == "ROW" and len(p) == 9:
            _, ex, label, size, off, ms, gbs, cgbs, pct = p
            rows.setdefault((ex, label, size), {})[int(off)] = (float(gbs), float(cgbs), float(pct), float(ms))
        elif p[0] in ("TIMEFAIL", "FATAL"):
            bad.append(l)
print("\n-- speed: GB/s = bytes the call must move / median of 25 calls (L2 flushed before each);")
print("   %copy = that / a cudaMemcpy of the same bytes timed in the same process")
print(f"{'exercise':10} {'impl':8} {'size':>16} {'offsets':>8} {'GB/s at each offset':>22} {'%copy at each':>22} {'copy':>7} {'ms@0':>8}")
order = {"saxpy": 0, "reduce_sum": 1, "transpose": 2}
for (ex, label, size), d in sorted(rows.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][2], kv[0][1] != "sol", kv[0][1] != "cub", kv[0][1])):
    offs = sorted(d)
    g = " / ".join(f"{d[o][0]:.0f}" for o in offs)
    c = " / ".join(f"{d[o][2]:.1f}" for o in offs)
    copy = max(d[o][1] for o in offs)
    o = "/".join(str(x) for x in offs)
    print(f"{ex:10} {label:8} {size:>16} {o:>8} {g:>22} {c:>22} {copy:7.0f} {d[offs[0]][3]:8.3f}")
for l in bad:
    print("  " + l[:200])
PY
echo "logs: $LOG  (total $((SECONDS - T0)) s)"

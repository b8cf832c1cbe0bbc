#!/usr/bin/env bash
# Assembles a CUDA 12.4.1 toolkit (compiler only: enough for nvcc -c) under
# DEST, for tests/arch_matrix.py, and prints NAME=NVCC for each of:
#   12.4             CUDA 12.4.1 as NVIDIA ships it (CCCL 2.3)
#   12.4+cccl2.8     the same compiler with the CCCL of CUDA 12.9 (2.8), a
#                    pairing CCCL supports; the solutions and the CUB peers
#                    need a CCCL newer than 12.4's (tests/arch_matrix.py)
#
# Why two registries: NVIDIA's CUDA 12 wheels on PyPI hold the headers,
# ptxas and libdevice but not nvcc, cicc or cudafe++ (those came to PyPI with
# CUDA 13). Debian packages NVIDIA's own 12.4.1 compiler binaries
# (nvidia-cuda-toolkit, non-free, trixie); its headers come only in a
# 930 MB package, so they are taken from the 12.4.1 wheels instead. Both
# are the same release, unmodified. Nothing is installed system-wide: apt
# runs with a private list and cache under DEST, dpkg only unpacks.
# 12.4 is the newest CUDA 12 Debian has; it knows sm_50..sm_90, so the
# Blackwell columns (sm_100, sm_120, CUDA 12.8+) are checked with 13 only.
#   bash tests/cuda12/install.sh DEST     (exit 0 and the two lines, or 1)
set -euo pipefail

dest=${1:?usage: install.sh DEST}
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)
root="$dest/cuda-12.4"
root28="$dest/cuda-12.4-cccl2.8"
if [ -x "$root28/bin/nvcc" ] && "$root28/bin/nvcc" --version >/dev/null 2>&1; then
    echo "12.4=$root/bin/nvcc"
    echo "12.4+cccl2.8=$root28/bin/nvcc"
    exit 0
fi

work="$dest/fetch"
rm -rf "$work" "$root" "$root28"
mkdir -p "$work/apt/lists/partial" "$work/apt/cache/archives/partial" "$work/deb" "$work/x"

# Debian: the compiler binaries.
cat > "$work/apt/sources.list" <<SRC
deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie non-free
SRC
apt_opts=(-o "Dir::Etc::sourcelist=$work/apt/sources.list" -o Dir::Etc::sourceparts=-
          -o "Dir::State::Lists=$work/apt/lists" -o "Dir::Cache=$work/apt/cache"
          -o APT::Sandbox::User=root -o Debug::NoLocking=1 -qq)
apt-get "${apt_opts[@]}" update >&2
(cd "$work/deb" && apt-get "${apt_opts[@]}" download nvidia-cuda-toolkit/trixie >&2)
dpkg -x "$work"/deb/nvidia-cuda-toolkit_*.deb "$work/x"

# PyPI: the headers of the same release (runtime, crt, CCCL, profiler, NVTX:
# whatever a full install has in include/ and the kit reads).
pip=(python3 -m pip install -q --disable-pip-version-check --root-user-action=ignore --no-deps)
"${pip[@]}" --target "$work/wheels" nvidia-cuda-runtime-cu12==12.4.127 \
    nvidia-cuda-nvcc-cu12==12.4.131 nvidia-cuda-cccl-cu12==12.4.127.post1 \
    nvidia-cuda-profiler-api-cu12==12.4.127 nvidia-nvtx-cu12==12.4.127 >&2
"${pip[@]}" --target "$work/cccl28" nvidia-cuda-cccl-cu12==12.9.27 >&2

# The layout nvcc expects, with the profile of NVIDIA's own installs.
x="$work/x/usr"
mkdir -p "$root/bin/crt" "$root/nvvm/bin" "$root/nvvm/libdevice" "$root/include"
mv "$x/lib/nvidia-cuda-toolkit/bin/nvcc" "$x/lib/nvidia-cuda-toolkit/bin/cicc" "$root/bin/"
mv "$root/bin/cicc" "$root/nvvm/bin/"
mv "$x/lib/nvidia-cuda-toolkit/bin/crt/"*.stub "$root/bin/crt/"
mv "$x/lib/nvidia-cuda-toolkit/libdevice/libdevice.10.bc" "$root/nvvm/libdevice/"
for t in cudafe++ ptxas fatbinary nvlink bin2c; do
    mv "$x/bin/$t" "$root/bin/"
done
cat > "$root/bin/nvcc.profile" <<'PROFILE'
TOP              = $(_HERE_)/..
CICC_PATH        = $(TOP)/nvvm/bin
NVVMIR_LIBRARY_DIR = $(TOP)/nvvm/libdevice
PATH            += $(CICC_PATH):$(_HERE_):
INCLUDES        +=  "-I$(TOP)/include" $(_SPACE_)
LIBRARIES        =+ $(_SPACE_) "-L$(TOP)/lib64"
CUDAFE_FLAGS    +=
PTXAS_FLAGS     +=
PROFILE
for pkg in cuda_runtime cuda_nvcc cuda_cccl cuda_profiler_api nvtx; do
    cp -r "$work/wheels/nvidia/$pkg/include/." "$root/include/"
done
find "$root/include" \( -name __init__.py -o -name __pycache__ \) -prune -exec rm -rf {} +

# The second tree: hard links to the first, CCCL replaced (nvcc finds its
# headers next to itself, so each tree needs its own bin/).
cp -al "$root" "$root28"
rm -rf "$root28/include/cub" "$root28/include/thrust" "$root28/include/cuda" "$root28/include/nv"
cp -r "$work/cccl28/nvidia/cuda_cccl/include/." "$root28/include/"
find "$root28/include" \( -name __init__.py -o -name __pycache__ \) -prune -exec rm -rf {} +
rm -rf "$work"

"$root/bin/nvcc" --version | grep -q "release 12\.4" || {
    echo "install.sh: $root/bin/nvcc does not report CUDA 12.4" >&2
    exit 1
}
echo "12.4=$root/bin/nvcc"
echo "12.4+cccl2.8=$root28/bin/nvcc"

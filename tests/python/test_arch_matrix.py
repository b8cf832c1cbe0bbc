"""tests/arch_matrix.py: the kit's CUDA code built for every GPU family.

Catches (fast tests, nvcc needed, no GPU): Hopper-only code left without an
__CUDA_ARCH__ guard (ptxas refuses it for sm_80), a warning in device code
(-Werror all-warnings), a header taken from another CUDA install, a kit .cu
file the matrix does not list, a source asked of a toolkit too old for it.

The matrix itself (BWLAB_SLOW_TESTS=1, which CI sets; minutes): every kit
source with the CUDA 13 at /usr/local/cuda for sm_75..sm_120, and with the
CUDA 12 toolkits named in BWLAB_CUDA12_TOOLKITS ("NAME=NVCC ...", as
tests/cuda12/install.sh prints them; .ci/run installs them). Without them
the CUDA 12 test is skipped, saying so.
"""
import os
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

import arch_matrix as m  # noqa: E402

NVCC = m.default_nvcc()
SLOW = os.environ.get("BWLAB_SLOW_TESTS") == "1"


def cuda12_specs() -> list[tuple[str, str]]:
    out = []
    for item in os.environ.get("BWLAB_CUDA12_TOOLKITS", "").split():
        name, _, nvcc = item.partition("=")
        if name and nvcc:
            out.append((name, nvcc))
    return out


class SkipReasons(unittest.TestCase):
    """No compiler: which cells are asked of which toolkit."""

    def tk(self, cccl: int, include: Path) -> m.Toolkit:
        return m.Toolkit("t", "/x/bin/nvcc", include, list(m.ARCHS), cccl)

    def test_old_cccl_is_not_asked_for_solutions_or_cub(self):
        with tempfile.TemporaryDirectory() as d:
            old = self.tk(2003002, Path(d))
            self.assertIn("CCCL 2.4", m.skip_reason(m.Unit("s.cu", "cu", [], needs="solutions"), old))
            self.assertIn("CCCL 2.8", m.skip_reason(m.Unit("p.cu", "cu", [], needs="cub_peers"), old))
            self.assertIsNone(m.skip_reason(m.Unit("s.cu", "cu", [], needs="solutions"),
                                            self.tk(2008000, Path(d))))

    def test_missing_library_header_is_not_asked(self):
        with tempfile.TemporaryDirectory() as d:
            u = m.Unit("p.cu", "cu", [], header="cublas_v2.h")
            self.assertIn("cublas_v2.h", m.skip_reason(u, self.tk(3000000, Path(d))))
            (Path(d) / "cublas_v2.h").write_text("")
            self.assertIsNone(m.skip_reason(u, self.tk(3000000, Path(d))))

    def test_every_kit_cuda_source_is_listed(self):
        listed = {u.path for u in m.units()}
        for top in ("grader", "exercises", "solutions"):
            for p in (ROOT / top).rglob("*.cu"):
                self.assertIn(str(p.relative_to(ROOT)), listed, "tests/arch_matrix.py misses it")

    def test_solutions_and_peers_carry_their_needs(self):
        by_path = {u.path: u for u in m.units()}
        self.assertEqual(by_path["solutions/haxpy/haxpy.cu"].needs, "solutions")
        self.assertEqual(by_path["grader/peers/haxpy_cub.cu"].needs, "cub_peers")
        self.assertEqual(by_path["grader/peers/haxpy_cublas.cu"].header, "cublas_v2.h")


@unittest.skipUnless(NVCC, "no nvcc: the arch matrix needs the CUDA compiler")
class MatrixCatches(unittest.TestCase):
    """Small sources for sm_80 and sm_90 with the nvcc here: each cell must fail for its reason."""

    def build(self, source: str, foreign: Path | None = None, includes=()) -> tuple[str, list[str]]:
        with tempfile.TemporaryDirectory() as d:
            src = Path(d) / "k.cu"
            src.write_text(textwrap.dedent(source))
            tk = m.toolkit("here", NVCC)
            tk.archs = ["80", "90"]
            if foreign:
                tk.foreign = [foreign]
            r = m.run([tk], 1, [m.Unit(str(src), "cu", list(includes))])
            status, lines, _ = r.cells[(0, 0)]
            self.assertEqual(r.failures, 1 if status == "FAILED" else 0, r.report)
            return status, lines

    def test_unguarded_hopper_code_fails_for_older_gpus(self):
        body = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'
        status, lines = self.build(f"__global__ void k() {{ {body} }}\n")
        self.assertEqual(status, "FAILED")
        self.assertTrue(any("sm_90" in l or "fence" in l for l in lines), lines)
        status, _ = self.build(f"__global__ void k() {{\n#if __CUDA_ARCH__ >= 900\n{body}\n#endif\n}}\n")
        self.assertEqual(status, "ok")

    def test_device_warning_is_an_error(self):
        status, lines = self.build("__global__ void k(int* p) { int unused = 3; p[0] = 1; }\n")
        self.assertEqual(status, "FAILED")
        self.assertTrue(any("unused" in l for l in lines), lines)

    def test_a_wrapper_script_on_path_still_finds_its_install(self):
        # CI's nvcc is /usr/local/bin/nvcc, a two-line script that execs the
        # real one; its own folder has no include/ and so no CCCL.
        real = m.toolkit("real", NVCC)
        with tempfile.TemporaryDirectory() as d:
            wrapper = Path(d) / "bin" / "nvcc"
            wrapper.parent.mkdir()
            wrapper.write_text(f'#!/bin/sh\nexec "{real.nvcc}" "$@"\n')
            wrapper.chmod(0o755)
            tk = m.toolkit("wrapped", str(wrapper))
            self.assertEqual((tk.nvcc, tk.include, tk.cccl), (real.nvcc, real.include, real.cccl))
            self.assertGreater(tk.cccl, 0, "the CUDA 13 install here ships CCCL")

    def test_header_from_another_install_fails(self):
        with tempfile.TemporaryDirectory() as other:
            (Path(other) / "only_there.h").write_text("#define ONLY_THERE 1\n")
            status, lines = self.build('#include "only_there.h"\n__global__ void k() {}\n',
                                       foreign=Path(other).resolve(), includes=[other])
            self.assertEqual(status, "FAILED")
            self.assertIn("another CUDA install", lines[0])


@unittest.skipUnless(SLOW, "slow (builds the kit for seven GPU families per toolkit): set BWLAB_SLOW_TESTS=1")
@unittest.skipUnless(NVCC, "no nvcc: the arch matrix needs the CUDA compiler")
class Matrix(unittest.TestCase):
    result: m.Result
    tks: list

    @classmethod
    def setUpClass(cls):
        cls.tks = m.with_foreign([m.toolkit("13", NVCC)] + [m.toolkit(n, p) for n, p in cuda12_specs()])
        cls.result = m.run(cls.tks, 2)
        print("\n" + cls.result.report, file=sys.stderr, flush=True)

    def test_every_cell_builds(self):
        self.assertEqual(self.result.failures, 0, self.result.report)

    def test_cuda13_builds_everything_for_every_family(self):
        self.assertEqual(self.tks[0].archs, list(m.ARCHS))
        cells = [self.result.cells[(i, 0)][0] for i in range(len(self.result.units))]
        self.assertTrue(all(c == "ok" for c in cells), self.result.report)

    def test_cuda12_builds_every_source(self):
        if len(self.tks) < 2:
            self.skipTest("no CUDA 12 toolkit: BWLAB_CUDA12_TOOLKITS is unset "
                          "(.ci/run sets it with tests/cuda12/install.sh)")
        for i, u in enumerate(self.result.units):
            if u.header:   # a library CUDA 12 from PyPI lacks here (cuBLAS)
                continue
            with self.subTest(source=u.path):
                self.assertTrue(any(self.result.cells[(i, j)][0] == "ok" for j in range(1, len(self.tks))),
                                self.result.report)
        for tk in self.tks[1:]:
            self.assertEqual(tk.archs[:5], ["75", "80", "86", "89", "90"], tk.name)


if __name__ == "__main__":
    unittest.main()

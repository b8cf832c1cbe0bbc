"""`run.py test` on a machine without a CUDA device: it builds, then says so and exits 3.

This one really builds bwgrade and the workers (reusing build/), so it needs
CMake and nvcc; on a machine with a GPU it has nothing to check and skips."""
import json
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def have_nvcc():
    return bool(shutil.which("nvcc")) or Path("/usr/local/cuda/bin/nvcc").exists()


class WithoutGpu(unittest.TestCase):
    def test_run_py_test_exits_3_with_a_message(self):
        if not shutil.which("cmake"):
            self.skipTest("cmake not found")
        if not have_nvcc():
            self.skipTest("nvcc not found")
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "r.json"
            p = subprocess.run([sys.executable, str(ROOT / "run.py"), "test", "haxpy", "--json", str(report)],
                               capture_output=True, text=True, cwd=ROOT, timeout=3600)
            out = p.stdout + p.stderr
            if p.returncode in (0, 1):
                self.skipTest("a CUDA device is present")
            self.assertEqual(p.returncode, 3, out[-4000:])
            self.assertIn("built OK; no CUDA device here, so nothing was run. "
                          "Run this on a machine with an NVIDIA GPU.", p.stdout)
            self.assertIn("1 exercise: haxpy not run", p.stdout)
            doc = json.loads(report.read_text())
            self.assertTrue(doc["no_device"])
            self.assertEqual(doc["exercises"]["haxpy"]["status"], "not_run")


if __name__ == "__main__":
    unittest.main()

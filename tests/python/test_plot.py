"""bwlab.plot: the benchmark chart, as an image (matplotlib) or as text."""
import json
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import plot  # noqa: E402

SAMPLE = ROOT / "tests" / "data" / "bench_haxpy_sample.json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

try:
    import matplotlib  # noqa: F401
    HAVE_MPL = True
except Exception:  # noqa: BLE001
    HAVE_MPL = False


def sample_docs():
    return json.loads(SAMPLE.read_text())


def small_doc(label, rows, copy_gbs=0.0, peak=3352.3, exercise="haxpy"):
    return {"tool": "bwgrade", "mode": "bench", "exercise": exercise, "label": label,
            "device": {"name": "NVIDIA H100 80GB HBM3", "peak_gbs": peak},
            "copy": {"bytes": 0, "ms_median": 0, "gbs": copy_gbs, "pct_peak": 0},
            "rows": [{"n": n, "offset": off, "gbs": g, "status": st} for n, off, g, st in rows]}


class Panels(unittest.TestCase):
    def test_grouping_and_filtering(self):
        docs = [
            small_doc("student", [(1024, 0, 10.0, "ok"), (1024, 1, 9.0, "ok"),
                                  (4096, 0, 40.0, "wrong"), (16384, 0, 160.0, "ok")], copy_gbs=2950.0),
            small_doc("cub", [(1024, 0, 5.0, "ok"), (16384, 0, 150.0, "ok")]),
            {"status": "error", "detail": "did not compile"},      # no rows: ignored
        ]
        (p,) = plot.panels(docs)
        self.assertEqual(p.exercise, "haxpy")
        self.assertEqual(p.copy_gbs, 2950.0)       # from the run that measured it
        self.assertEqual(p.peak_gbs, 3352.3)
        self.assertEqual([s.label for s in p.series], ["student", "cub"])
        # Only offset 0 and status ok.
        self.assertEqual(p.series[0].points, [(1024, 10.0), (16384, 160.0)])

    def test_two_exercises(self):
        docs = [small_doc("student", [(1024, 0, 1.0, "ok")], exercise="haxpy"),
                small_doc("student", [(1024, 0, 2.0, "ok")], exercise="vector_sum")]
        self.assertEqual([p.exercise for p in plot.panels(docs)], ["haxpy", "vector_sum"])

    def test_nothing(self):
        self.assertIn("nothing to plot", plot.plot_benchmark([], "/tmp/never.png"))
        self.assertIn("nothing to plot",
                      plot.plot_benchmark([small_doc("x", [(8, 0, 1.0, "crash")])], "/tmp/never.png"))


class TextChart(unittest.TestCase):
    """The degraded path: must work everywhere."""

    def test_chart(self):
        text = plot.text_chart(sample_docs())
        lines = text.splitlines()
        self.assertTrue(lines[0].startswith("haxpy: GB/s against n (offset 0)"))
        self.assertIn("device copy 2,950.0 GB/s", text)
        self.assertIn("268,435,455 2^28-1", text)
        self.assertIn("2^10", text)
        for label in ("student", "solution", "cub"):
            self.assertIn(label, text)
        bars = [l for l in lines if "#" in l]
        self.assertTrue(bars)
        self.assertTrue(all("|" in l for l in bars))   # the copy mark on every bar line

    def test_bar_lengths(self):
        docs = [small_doc("a", [(1024, 0, 1000.0, "ok"), (2048, 0, 2000.0, "ok")], peak=2000.0)]
        text = plot.text_chart(docs, width=20)
        rows = [l for l in text.splitlines() if l.rstrip().endswith(("1,000.0", "2,000.0"))]
        self.assertEqual(rows[0].count("#"), 10)
        self.assertEqual(rows[1].count("#"), 20)

    def test_without_matplotlib(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench.png"
            with mock.patch.object(plot, "_matplotlib", return_value=None):
                msg = plot.plot_benchmark(sample_docs(), str(out))
            self.assertFalse(out.exists())
        self.assertTrue(msg.startswith(plot.NO_MATPLOTLIB))
        self.assertIn("haxpy: GB/s against n", msg)

    def test_import_error_is_absence(self):
        with mock.patch.dict(sys.modules, {"matplotlib": None}):
            self.assertIsNone(plot._matplotlib())

    def test_bad_suffix(self):
        msg = plot.plot_benchmark(sample_docs(), "/tmp/bench.jpeg")
        self.assertIn("use a file name ending in .png, .svg", msg)

    def test_benchmark_command_hook(self):
        try:
            from bwlab import cmd_benchmark
        except ImportError:
            self.skipTest("run.py benchmark is not in this copy")
        with mock.patch.object(plot, "_matplotlib", return_value=None):
            msg = cmd_benchmark.plot(sample_docs(), "/tmp/never-written.png")
        self.assertTrue(msg.startswith(plot.NO_MATPLOTLIB))


@unittest.skipUnless(HAVE_MPL, "matplotlib not installed")
class Images(unittest.TestCase):
    def test_png(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench.png"
            msg = plot.plot_benchmark(sample_docs(), str(out))
            self.assertEqual(msg, f"wrote {out}")
            self.assertEqual(out.read_bytes()[:8], PNG_SIGNATURE)

    def test_svg(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "bench.svg"
            plot.plot_benchmark(sample_docs(), str(out))
            root = ET.parse(out).getroot()
            self.assertTrue(root.tag.endswith("svg"))

    def test_unwritable(self):
        msg = plot.plot_benchmark(sample_docs(), "/nonexistent-dir/bench.png")
        self.assertIn("cannot write", msg)


if __name__ == "__main__":
    unittest.main()

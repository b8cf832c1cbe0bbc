"""run.py report: the class report of a recorded grading run
(tests/data/grades_h100, a real H100 run; see its README).

ReportPage (CPU): the page holds every section and chart, draws the policy's
thresholds, lists what grading flagged, fetches nothing, and reads a merged
set of shards as it reads one run.

InABrowser: headless Chromium renders the page to a PNG and the charts'
colours must be on it (bars, threshold lines): catches SVG that a browser
does not draw. The PNG is kept in $BWLAB_ARTIFACTS (default
build/test-artifacts/), not in the repository. Skips with "chromium not
installed" where there is none.
"""
import argparse
import contextlib
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import class_report, cmd_merge, cmd_report, gradebook  # noqa: E402

DATA = ROOT / "tests" / "data" / "grades_h100"


def quiet(fn, *a):
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = fn(*a)
    return code, out.getvalue()


def write_report(folder, out):
    parser = argparse.ArgumentParser()
    cmd_report.add_arguments(parser)
    return quiet(cmd_report.run, parser.parse_args([str(folder), "--out", str(out)]))


class ReportPage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.out = Path(cls.tmp.name) / "report.html"
        cls.code, cls.text = write_report(DATA, cls.out)
        cls.page = cls.out.read_text(encoding="utf-8") if cls.out.exists() else ""

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_it_is_written(self):
        self.assertEqual(self.code, 0, self.text)
        self.assertIn("11 submissions", self.text)

    def test_sections_and_charts(self):
        for heading in ("Scores", "Bandwidth: % of the same-run device copy", "Most frequent diagnoses",
                        "Refusals, timeouts and crashes", "Flagged", "Gradebook"):
            self.assertIn(f"<h2>{heading}</h2>", self.page)
        # points per exercise, total points, % of copy per exercise
        self.assertEqual(self.page.count('<svg class="chart"'), 5)
        # the policy's four thresholds on each % of copy chart
        self.assertEqual(self.page.count(f'stroke="{class_report.THRESHOLD}"'), 8)
        for t in ("25%", "50%", "75%", "90%"):
            self.assertIn(f">{t}</text>", self.page)
        # nine ran on the GPU; two were refused before anything ran
        self.assertIn("NVIDIA H100 80GB HBM3 (9), nothing ran (2)", self.page)
        self.assertIn("fingerprint 8a53a1680b64", self.page)

    def test_what_grading_found_is_listed(self):
        flagged = self.page.split("<h2>Flagged</h2>")[1].split("<h2>")[0]
        self.assertIn("reads_past_end", flagged)
        self.assertIn("vector_sum: memcheck error (Invalid __global__ read of size 2 bytes", flagged)
        # memcheck runs only the groups that passed the plain test: none of
        # off_by_one_write's did, so it has no memcheck finding to flag
        self.assertNotIn("off_by_one_write", flagged)
        self.assertNotIn("wrong_rounding", flagged)     # a wrong answer is not a memory error
        events = self.page.split("<h2>Refusals, timeouts and crashes</h2>")[1].split("<h2>")[0]
        self.assertRegex(events, r"refused</td><td>2</td><td>defines_timer \(haxpy\); forges_reply \(haxpy\)")
        # every crash of the record, not only the cases it kept
        self.assertIn("cases that crashed</td><td>1</td><td>crashes (haxpy): 32", events)
        diag = self.page.split("<h2>Most frequent diagnoses</h2>")[1].split("<h2>")[0]
        for code in ("crash", "not_implemented", "guard", "rounding"):
            self.assertIn(f"<td>{code}</td>", diag)

    def test_self_contained(self):
        self.assertNotIn("<script", self.page.lower())
        self.assertNotIn("<link", self.page.lower())
        urls = set(re.findall(r"(?:https?:)?//[\w.-]+[^\s\"'<>]*", self.page))
        self.assertEqual(urls, {"http://www.w3.org/2000/svg"})

    def test_a_plausibility_flag(self):
        rec = json.loads((DATA / "solutions.json").read_text())
        perf = rec["exercises"][0]["score"]["performance"]
        perf["pct_copy"] = 131.0
        got = class_report.flagged([rec], ["haxpy"])
        self.assertEqual(len(got), 1)
        self.assertIn("131% of the same-run copy is more than a kernel", got[0][1])

    def test_merged_shards_give_the_same_page(self):
        manifest = json.loads((DATA / gradebook.MANIFEST).read_text())
        ids = manifest["ids"]
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            folders = []
            for k in (1, 2):
                folder = tmp / f"shard{k}"
                folder.mkdir()
                mine = [sid for i, sid in enumerate(ids) if i % 2 == k - 1]
                for sid in mine:
                    shutil.copy(DATA / f"{sid}.json", folder / f"{sid}.json")
                gradebook.write_manifest(folder, {**manifest, "ids": mine, "shard": {"k": k, "n": 2}})
                folders.append(str(folder))
            parser = argparse.ArgumentParser()
            cmd_merge.add_arguments(parser)
            code, text = quiet(cmd_merge.run, parser.parse_args([*folders, "--out", str(tmp / "merged")]))
            self.assertEqual(code, 0, text)
            code, text = write_report(tmp / "merged", tmp / "merged.html")
            self.assertEqual(code, 0, text)
            merged = (tmp / "merged.html").read_text(encoding="utf-8")
        body = lambda page: page.split("<h2>Scores</h2>")[1]  # noqa: E731 (the header names the shard)
        self.assertEqual(body(merged), body(self.page))

    def test_not_a_grading_folder(self):
        with tempfile.TemporaryDirectory() as tmp:
            code, text = write_report(tmp, Path(tmp) / "r.html")
        self.assertEqual(code, 2)
        self.assertIn("no manifest.json", text)


def browser():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def read_png(path):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB/RGBA PNG."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunk)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour, interlace)
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp:x * bpp + 3]) for x in range(width)])
        prev = line
    return width, height, rows


def rgb(hex_colour):
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))


@unittest.skipUnless(browser(), "chromium not installed")
class InABrowser(unittest.TestCase):
    def test_chromium_draws_the_charts(self):
        artifacts = Path(os.environ.get("BWLAB_ARTIFACTS", ROOT / "build" / "test-artifacts"))
        artifacts.mkdir(parents=True, exist_ok=True)
        png = artifacts / "class_report.png"
        with tempfile.TemporaryDirectory() as tmp:
            page = Path(tmp) / "report.html"
            code, text = write_report(DATA, page)
            self.assertEqual(code, 0, text)
            if png.exists():
                png.unlink()
            # --no-sandbox: CI runs as root, where Chromium's own sandbox will not start.
            p = subprocess.run([browser(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                                "--window-size=1200,1400", f"--screenshot={png}", page.as_uri()],
                               capture_output=True, text=True, timeout=180,
                               env={**os.environ, "HOME": tmp})
        self.assertTrue(png.is_file(), (p.stdout + p.stderr)[-2000:])
        width, height, rows = read_png(png)
        self.assertEqual((width, height), (1200, 1400))
        bar, line = rgb(class_report.BAR), rgb(class_report.THRESHOLD)
        bar_px = sum(1 for row in rows for px in row if px == bar)
        line_px = sum(1 for row in rows for px in row if px == line)
        # Five charts of bars (about 60,000 pixels of them here) and eight
        # dashed threshold lines, 2 pixels wide and about 90 tall.
        self.assertGreater(bar_px, 20000, f"bars: {bar_px} pixels of {class_report.BAR}; see {png}")
        self.assertGreater(line_px, 500, f"threshold lines: {line_px} pixels of {class_report.THRESHOLD}; see {png}")
        print(f"\n  class report rendered by {Path(browser()).name}: {png} "
              f"({bar_px} bar pixels, {line_px} threshold pixels)", file=sys.stderr)


if __name__ == "__main__":
    unittest.main()

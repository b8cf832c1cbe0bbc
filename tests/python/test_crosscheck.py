"""run.py crosscheck's judgement (bwlab/crosscheck.py) on made-up runs: the
pairing of benchmark rows with the kernels of each row's worker process, the
split into profiled calls, and the rule. No GPU needed."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "grader" / "py"))

from bwlab import crosscheck  # noqa: E402

HEADER = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
          '"Block Size","Grid Size","Device","CC","gpu__time_duration.sum","launch__block_size",'
          '"launch__grid_size","launch__registers_per_thread",'
          '"launch__shared_mem_per_block_dynamic","launch__shared_mem_per_block_static",'
          '"sm__cycles_elapsed.avg.per_second"')
UNITS = '"","","","","","","","","","","","nsecond","","","register/thread","byte","byte","cycle/second"'


def kernel_line(i: int, pid: int, name: str, ns: float, grid: int = 1000, smem: int = 0) -> str:
    return (f'"{i}","{pid}","bw_worker","host","{name}","1","7","(256, 1, 1)","({grid}, 1, 1)",'
            f'"0","9.0","{ns}","256","{grid}","32","{smem}","0","1980000000"')


def csv_of(*lines: str) -> str:
    return "\n".join(["==PROF== Connected to process 11", HEADER, UNITS, *lines]) + "\n"


def bench(rows, timer_ms=None):
    return {"rows": [{"n": n, "offset": off, "status": st, "ms_median": ms, "gbs": 1.0,
                      "worker_pid": 999, "timer_ms": timer_ms} for n, off, ms, st in rows]}


def profile(rows):
    return {"rows": [{"n": n, "offset": off, "worker_pid": pid} for n, off, pid in rows]}


class CrossCheckTests(unittest.TestCase):
    def test_kernels_pair_by_the_profiled_rows_worker_not_by_order(self):
        # The profiled rows' workers are 20 and 10: the CSV's order must not matter.
        text = csv_of(*[kernel_line(i, 10, "k_big", 500_000) for i in range(5)],
                      *[kernel_line(5 + i, 20, "k_small", 100_000) for i in range(5)])
        rows, notes = crosscheck.rows_of(
            bench([(1000, 0, 0.1005, "ok"), (5000, 0, 0.5005, "ok")]),
            profile([(1000, 0, 20), (5000, 0, 10)]), text, calls=5)
        self.assertEqual(notes, [])
        self.assertEqual([r.kernels[0].name for r in rows], ["k_small", "k_big"])
        self.assertAlmostEqual(rows[0].ncu_ms, 0.1)
        self.assertAlmostEqual(rows[1].ratio, 1.001)
        self.assertTrue(all(r.ok for r in rows), [r.verdict for r in rows])

    def test_kernel_names_keep_their_namespace_and_lose_the_rest(self):
        # ncu's names of a template kernel in an anonymous namespace (the
        # transpose solution's came out as "void" before).
        for full, short in [
                ("void <unnamed>::tile_kernel<128, 64>(const unsigned short *, int)",
                 "<unnamed>::tile_kernel"),
                ("<unnamed>::reduce_sum_kernel(int, const __nv_bfloat16 *, float *)",
                 "<unnamed>::reduce_sum_kernel"),
                ("void (anonymous namespace)::k<1>(int)", "(anonymous namespace)::k"),
                ("void cub::CUB_300000_SM_900::detail::transform::transform_kernel<P>(int)",
                 "cub::CUB_300000_SM_900::detail::transform::transform_kernel"),
                ("copy_kernel", "copy_kernel")]:
            self.assertEqual(crosscheck.short_name(full), short)

    def test_ncu_figure_is_the_median_call(self):
        durations = [510_000, 500_000, 900_000, 505_000, 495_000]   # one outlier call
        text = csv_of(*[kernel_line(i, 7, "k", d) for i, d in enumerate(durations)])
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.503, "ok")]), profile([(1, 0, 7)]), text, calls=5)
        self.assertEqual(len(rows[0].calls), 5)
        self.assertAlmostEqual(rows[0].ncu_ms, 0.505)

    def test_two_kernels_per_call_are_summed(self):
        lines = []
        for c in range(5):
            lines += [kernel_line(2 * c, 7, "first", 300_000), kernel_line(2 * c + 1, 7, "second", 200_000)]
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.52, "ok")]), profile([(1, 0, 7)]), csv_of(*lines), calls=5)
        r = rows[0]
        self.assertEqual([k.name for k in r.kernels], ["first", "second"])
        self.assertAlmostEqual(r.ncu_ms, 0.5)
        # 4 % over the sum: allowed for several kernels (gaps between them), not for one.
        self.assertTrue(r.ok, r.verdict)
        self.assertIn("2 kernels", r.verdict)

    def test_one_kernel_more_than_two_percent_slower_fails(self):
        text = csv_of(*[kernel_line(i, 7, "k", 500_000) for i in range(5)])
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.515, "ok")]), profile([(1, 0, 7)]), text, calls=5)
        self.assertFalse(rows[0].ok)
        self.assertIn("3.0 % slower", rows[0].verdict)
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.5095, "ok")]), profile([(1, 0, 7)]), text, calls=5)
        self.assertTrue(rows[0].ok, rows[0].verdict)

    def test_benchmark_faster_than_the_kernels_fails_beyond_the_noise(self):
        text = csv_of(*[kernel_line(i, 7, "k", 500_000) for i in range(5)])
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.490, "ok")]), profile([(1, 0, 7)]), text, calls=5)
        self.assertFalse(rows[0].ok)
        self.assertIn("cannot have timed the whole call", rows[0].verdict)
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.499, "ok")]), profile([(1, 0, 7)]), text, calls=5)
        self.assertTrue(rows[0].ok, rows[0].verdict)
        self.assertIn("under ncu", rows[0].verdict)

    def test_events_raw_span_brackets_the_kernel(self):
        # The figure has the events' own span subtracted: 1 % under ncu is
        # fine when the raw span still covers the kernel (CUB on an H200)...
        text = csv_of(*[kernel_line(i, 7, "k", 100_000) for i in range(5)])
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.0990, "ok")], timer_ms=0.00125),
                                     profile([(1, 0, 7)]), text, calls=5)
        self.assertTrue(rows[0].ok, rows[0].verdict)
        # ... not when even the raw span is shorter than the kernel ...
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.0970, "ok")], timer_ms=0.00125),
                                     profile([(1, 0, 7)]), text, calls=5)
        self.assertFalse(rows[0].ok)
        self.assertIn("cannot have timed the whole call", rows[0].verdict)
        # ... and a one-kernel figure more than 2 % under ncu fails even if a
        # large subtracted span would cover it.
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.0970, "ok")], timer_ms=0.004),
                                     profile([(1, 0, 7)]), text, calls=5)
        self.assertFalse(rows[0].ok)
        self.assertIn("3.0 % faster", rows[0].verdict)

    def test_rows_without_a_figure_or_without_kernels_fail(self):
        text = csv_of(*[kernel_line(i, 7, "k", 500_000) for i in range(5)])
        rows, notes = crosscheck.rows_of(
            bench([(1, 0, None, "not_recomputed"), (2, 0, 0.5, "ok"), (3, 0, 0.5, "ok")]),
            profile([(1, 0, 7), (2, 0, 8)]), text, calls=5)
        self.assertEqual([r.ok for r in rows], [False, False, False])
        self.assertIn("not_recomputed", rows[0].verdict)
        self.assertIn("no kernel", rows[1].verdict)
        self.assertTrue(any("n = 3" in n for n in notes), notes)

    def test_uneven_kernel_counts_are_reported(self):
        text = csv_of(*[kernel_line(i, 7, "k", 500_000) for i in range(4)])
        rows, notes = crosscheck.rows_of(bench([(1, 0, 0.5, "ok")]), profile([(1, 0, 7)]), text, calls=5)
        self.assertTrue(any("do not divide" in n for n in notes), notes)
        self.assertEqual(len(rows[0].calls), 1)

    def test_launch_configuration_is_read(self):
        text = csv_of(*[kernel_line(i, 7, "void cub::transform_kernel<int>(int)", 500_000,
                                    grid=174763, smem=6528) for i in range(5)])
        rows, _ = crosscheck.rows_of(bench([(1, 0, 0.5, "ok")]), profile([(1, 0, 7)]), text, calls=5)
        k = rows[0].kernels[0]
        self.assertEqual(k.name, "cub::transform_kernel")
        self.assertEqual((k.grid, k.block, k.smem_dynamic, k.registers), (174763, 256, 6528, 32))
        self.assertIn("grid 174,763 x 256 threads, 6.53 KB dynamic shared", k.launch())
        self.assertIn("SM at 1,980 MHz", k.launch())

    def test_ncu_command_profiles_only_the_bracketed_calls_at_the_gpus_own_clocks(self):
        cmd = crosscheck.ncu_command("ncu", ["bwgrade", "bench"], "log.csv")
        for a, b in (("--profile-from-start", "off"), ("--cache-control", "none"),
                     ("--clock-control", "none"), ("--target-processes", "all")):
            self.assertEqual(cmd[cmd.index(a) + 1], b)
        self.assertEqual(cmd[-2:], ["bwgrade", "bench"])

    def test_the_profiled_run_has_no_copy_so_no_baseline_worker(self):
        # Without --no-copy bwgrade would start its baseline worker beside the
        # profiled one, and ncu's figure would move (docs/BENCHMARKS.md).
        bench_cmd = ["bwgrade", "bench", "haxpy", "--worker", "w", "--label", "student"]
        cmd = crosscheck.profiled_target(bench_cmd, 21, "p.json")
        self.assertIn("--no-copy", cmd)
        self.assertEqual(cmd[:len(bench_cmd)], bench_cmd)
        self.assertEqual(cmd[cmd.index("--profile-calls") + 1], "21")
        self.assertEqual(cmd[-2:], ["--json", "p.json"])
        self.assertEqual(bench_cmd[-1], "student")   # the measured run's command is left alone
        once = crosscheck.profiled_target(bench_cmd + ["--no-copy"], 3, "p.json")
        self.assertEqual(once.count("--no-copy"), 1)


if __name__ == "__main__":
    unittest.main()

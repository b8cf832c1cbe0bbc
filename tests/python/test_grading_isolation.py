"""Instructor-side grading, what keeps the workers away from what they must
not reach: the secret seed (hidden cases on, never written, never on a
command line), the sandbox, containment as bwgrade reports it, and the
modes of the built worker, the outputs and the seed file. CPU only, with
the fake runner (grading_fixtures.py) or a stand-in bwgrade. (Not in the
student handout: handout_files.DENY leaves it out.)"""
import json
import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

from grading_fixtures import (EXERCISES, GOOD, ROOT, SECRET, BatchCase, FakeRunner, read_csv,
                              run_grade, write_sub)
from bwlab import cmd_grade, grade_runner, gradebook, sandbox, seeds


class BatchIsolationTests(BatchCase, unittest.TestCase):
    def test_the_secret_seed_is_used_hidden_on_and_never_written(self):
        code, text, runner = self.grade()
        tests = [c for c in runner.calls if c[0] == "test"]
        self.assertTrue(tests)
        for _kind, _ex, _w, seed, env in tests:
            self.assertEqual(seed.value, SECRET)
            self.assertTrue(seed.hidden)
            self.assertNotIn("BWLAB_SEED", env)          # a student's setting cannot leak in
            self.assertNotIn("BWLAB_SECRET_SEED", env)
        needles = [str(SECRET).encode(), hex(SECRET).encode(), hex(SECRET)[2:].encode()]
        for path in (self.dir / "out").rglob("*"):
            if path.is_file():
                data = path.read_bytes().lower()
                for n in needles:
                    self.assertNotIn(n.lower(), data, f"{path} holds the secret seed")
        self.assertNotIn(str(SECRET), text)
        alice = json.loads((self.dir / "out" / "alice.json").read_text())
        self.assertEqual(alice["exercises"][0]["test"]["seed"], seeds.REDACTED)
        self.assertRegex(alice["seed"]["fingerprint"], r"^[0-9a-f]{12}$")

    def test_the_sandbox_used_is_passed_on_hides_the_secrets_and_is_recorded(self):
        seen = {}

        def choose(mode, hide):
            seen["mode"], seen["hide"] = mode, [str(h) for h in hide]
            return sandbox.Sandbox("bwrap", bwrap="/opt/bwrap", hide=seen["hide"])

        with mock.patch.object(cmd_grade.sandbox, "choose", choose):
            code, text, runner = self.grade("--sandbox", "bwrap")
        self.assertEqual(code, 0, text)
        self.assertEqual(seen["mode"], "bwrap")
        out = (self.dir / "out").resolve()
        for must in (str(ROOT / "grader" / "instructor"), str(self.seed_file.resolve()), str(out)):
            self.assertIn(must, seen["hide"])
        self.assertEqual(runner.sandbox_args[:2], ("--sandbox", "/opt/bwrap"))
        self.assertIn(str(self.seed_file.resolve()), runner.sandbox_args[3].split(":"))
        self.assertIn("inside bubblewrap", text)
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["sandbox"]["kind"], "bwrap")
        rows = read_csv(out / "gradebook.csv")
        self.assertTrue(rows and all(r["sandbox"] == "bwrap" for r in rows), rows)
        self.assertEqual(json.loads((out / "alice.json").read_text())["sandbox"], "bwrap")

    def test_no_sandbox_is_recorded_and_warned_about(self):
        with mock.patch.object(cmd_grade.sandbox.shutil, "which", lambda *_a, **_k: None):
            code, text, runner = self.grade("--sandbox", "auto", out="nobox")
        self.assertEqual(code, 0, text)
        self.assertIn("WITHOUT a sandbox", text)
        self.assertEqual(runner.sandbox_args, ())
        out = self.dir / "nobox"
        self.assertIn("not installed", json.loads((out / "manifest.json").read_text())["sandbox"]["warning"])
        self.assertTrue(all(r["sandbox"] == "none" for r in read_csv(out / "gradebook.csv")))
        with mock.patch.object(cmd_grade.sandbox.shutil, "which", lambda *_a, **_k: None):
            code, text, _ = self.grade("--sandbox", "bwrap", out="refused")
        self.assertEqual(code, 2, text)
        self.assertIn("not installed", text)

    def test_containment_is_copied_from_bwgrade(self):
        """bwgrade says what confined the workers; run.py copies it into each
        record, the gradebook's containment column and the manifest. Catches
        run.py writing its own guess, or dropping bwgrade's word."""
        said = {"user": "nobody", "pid_namespace": True, "subreaper": False, "sandbox": "none"}

        class Contained(FakeRunner):
            def test(self, *a):
                out = super().test(*a)
                if out.doc is not None:
                    out.doc["containment"] = dict(said)
                return out

            def bench(self, *a):
                out = super().bench(*a)
                if b"OTHER_CONTAINMENT" in self._data(a[1]):
                    out.doc["containment"] = {**said, "pid_namespace": False, "subreaper": True}
                else:
                    out.doc["containment"] = dict(said)
                return out

        runner = Contained()
        marked = {**GOOD, "haxpy": GOOD["haxpy"] + "// OTHER_CONTAINMENT\n"}
        code, text = run_grade(runner, str(write_sub(self.subs / "alice", GOOD)),
                               str(write_sub(self.subs / "bob", marked)), "--out", str(self.dir / "cont"),
                               "--seed-file", str(self.seed_file))
        self.assertEqual(code, 0, text)
        out = self.dir / "cont"
        alice = json.loads((out / "alice.json").read_text())
        self.assertEqual(alice["containment"], said)
        bob = json.loads((out / "bob.json").read_text())
        self.assertEqual(len(bob["containment"]), 2, bob["containment"])
        rows = {r["id"]: r for r in read_csv(out / "gradebook.csv")}
        self.assertEqual(rows["alice"]["containment"], "nobody, pid namespace")
        self.assertEqual(rows["bob"]["containment"], "nobody, pid namespace | nobody, subreaper")
        manifest = json.loads((out / "manifest.json").read_text())
        self.assertEqual(manifest["containment"][0], said)
        self.assertEqual(len(manifest["containment"]), 2)

    def test_the_one_gpu_node_shows_in_the_gradebook(self):
        """bwgrade names the one GPU node a sandbox kept (trusted_device.h);
        catches the column dropping it, or naming one where none was kept."""
        said = {"user": "same", "pid_namespace": True, "subreaper": False, "sandbox": "bwrap"}
        self.assertEqual(gradebook.containment_text({**said, "gpu_node": "/dev/nvidia1"}),
                         "same user, pid namespace, bwrap, only /dev/nvidia1")
        self.assertEqual(gradebook.containment_text(said), "same user, pid namespace, bwrap")

    def test_kit_runner_asks_bwgrade_for_containment(self):
        """Every bwgrade run of run.py grade passes --contain (bwgrade leaves it
        out of a bubblewrap sandbox itself). Catches it being dropped."""
        runner = grade_runner.KitRunner(ROOT, self.dir, EXERCISES, bwgrade=Path("/bin/true"))
        runner.sandbox_args = ("--sandbox", "/opt/bwrap")
        seen = []

        def fake_run(cmd, timeout, env=None, stdin_text=None):
            seen.append(cmd)
            return mock.Mock(rc=1, output="", timed_out=False, seconds=0.0)
        with mock.patch.object(grade_runner, "run_limited", fake_run):
            runner.bench("haxpy", Path("/w"), {}, 5.0, self.dir / "b.json")
            runner.test("haxpy", Path("/w"), mock.Mock(value=None, hidden=False), {}, 5.0,
                        self.dir / "t.json")
        self.assertEqual(len(seen), 2)
        for cmd in seen:
            self.assertIn("--contain", cmd)
            self.assertIn("--sandbox", cmd)

    def test_built_worker_is_reachable_by_the_worker_user(self):
        """A build under umask 077 leaves 0700 folders and a 0700 executable:
        as nobody the worker could not start. _reachable opens the path to
        it for searching and the file for running, nothing else."""
        top = self.dir / "sub-x"
        exe = top / "build" / "exercises" / "haxpy" / "bw_worker_haxpy"
        exe.parent.mkdir(parents=True)
        exe.write_text("")
        for p in (exe, exe.parent, exe.parent.parent, exe.parent.parent.parent, top):
            p.chmod(0o700)
        grade_runner._reachable(exe, top)
        self.assertEqual(exe.stat().st_mode & 0o777, 0o755)
        self.assertEqual(exe.parent.stat().st_mode & 0o777, 0o711)
        self.assertEqual((top / "build").stat().st_mode & 0o777, 0o711)
        self.assertEqual(top.stat().st_mode & 0o777, 0o700)   # the caller's (0711 in build())

    @unittest.skipUnless(hasattr(os, "geteuid") and os.geteuid() == 0,
                         "skipped: the outputs and the seed are tightened only when grading as root")
    def test_outputs_and_seed_are_kept_from_the_worker_user(self):
        """As root the workers run as nobody: the output folder and the seed
        file lose every permission of other users. Catches an output folder
        left 0755 (other students' grades readable) or a 0644 seed file."""
        out = self.dir / "open_out"
        out.mkdir(mode=0o755)
        out.chmod(0o755)
        self.seed_file.chmod(0o644)
        code, text, _ = self.grade(out="open_out")
        self.assertEqual(code, 0, text)
        self.assertEqual(out.stat().st_mode & 0o777, 0o700)
        self.assertEqual(self.seed_file.stat().st_mode & 0o777, 0o600)
        self.assertIn("must not read it", text)

    def test_public_mode_is_explicit_and_has_no_hidden_cases(self):
        runner = FakeRunner()
        code, text = run_grade(runner, str(write_sub(self.subs / "alice", GOOD)), "--out",
                               str(self.dir / "pub"), "--public")
        self.assertEqual(code, 0, text)
        self.assertIn("PUBLIC", text)
        for _kind, _ex, _w, seed, _env in [c for c in runner.calls if c[0] == "test"]:
            self.assertIsNone(seed.value)
            self.assertFalse(seed.hidden)
        rec = json.loads((self.dir / "pub" / "alice.json").read_text())
        self.assertEqual(rec["seed"]["kind"], "public")

    def test_no_seed_means_no_grading(self):
        with tempfile.TemporaryDirectory() as fake_root:
            with self.assertRaises(seeds.SeedError) as cm:
                seeds.find_seed(Path(fake_root), None, False, environ={})
            self.assertIn("--public", str(cm.exception))
        code, text = run_grade(FakeRunner(), str(self.subs), "--out", str(self.dir / "x"),
                               "--seed-file", str(self.dir / "nonexistent"))
        self.assertEqual(code, 2)
        for bad in ("12345", "0x62776c6162", "banana"):   # short, the public seed, not a number
            self.seed_file.write_text(bad + "\n")
            with self.assertRaises(seeds.SeedError):
                seeds.find_seed(ROOT, str(self.seed_file), False, environ={})
        seed = seeds.find_seed(ROOT, None, False, environ={"BWLAB_SECRET_SEED": hex(SECRET)})
        self.assertEqual((seed.value, seed.hidden), (SECRET, True))


class SecretSeedTests(unittest.TestCase):
    """KitRunner.test with a stand-in bwgrade that records its command line
    and standard input. Catches the secret seed going back onto the command
    line, where /proc/PID/cmdline shows it to every process of the user."""

    def test_secret_seed_goes_on_stdin_not_argv(self):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            log = tmp / "log.json"
            fake = tmp / "bwgrade"
            fake.write_text(
                f"#!{sys.executable}\n"
                "import json, sys\n"
                f"json.dump({{'argv': sys.argv[1:], 'stdin': sys.stdin.read()}}, open({str(log)!r}, 'w'))\n"
                "out = sys.argv[sys.argv.index('--json') + 1]\n"
                "json.dump({'tool': 'bwgrade', 'mode': 'test', 'status': 'pass'}, open(out, 'w'))\n")
            fake.chmod(0o755)
            runner = grade_runner.KitRunner(ROOT, tmp, EXERCISES, bwgrade=fake)
            seed = seeds.Seed(SECRET, "secret", "test", True)
            out = runner.test("haxpy", tmp / "worker", seed, dict(os.environ), 30, tmp / "r.json")
            self.assertEqual(out.rc, 0, out.output)
            got = json.loads(log.read_text())
            self.assertNotIn(str(SECRET), " ".join(got["argv"]))
            i = got["argv"].index("--seed")
            self.assertEqual(got["argv"][i + 1], "-")
            self.assertEqual(got["stdin"].strip(), str(SECRET))
            self.assertIn("--hidden", got["argv"])


if __name__ == "__main__":
    unittest.main()

"""The worker sandbox: run.py grade --sandbox auto|bwrap|none (sandbox.py picks,
bwgrade --sandbox/--hide confines, grader/supervisor/sandbox.c).

The real test puts a small program in the worker's place, runs it through
bwgrade with and without the sandbox, and reads what it could do: connect to
a socket listening on this machine, read the seed file, write into the kit,
write into its private HOME. Without the sandbox all four work (so the
refusals are the sandbox's doing); inside, only the last does."""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import build, grade_runner, sandbox, seeds  # noqa: E402

BWGRADE = build.build_dir(ROOT) / "bwgrade"   # $BWLAB_BUILD_DIR, else build/
SECRET = "31415926535897932"


class Choose(unittest.TestCase):
    def test_none_is_none_without_looking_for_bwrap(self):
        box = sandbox.choose("none", [Path("/x")], which=lambda _: self.fail("looked for bwrap"))
        self.assertEqual((box.kind, box.bwgrade_args(), box.warning), ("none", [], None))

    def test_auto_falls_back_with_a_warning_that_says_why(self):
        box = sandbox.choose("auto", [], which=lambda _: None)
        self.assertEqual(box.kind, "none")
        self.assertIn("not installed", box.warning)
        self.assertIn("WITHOUT a sandbox", box.warning)
        box = sandbox.choose("auto", [], which=lambda _: "/usr/bin/bwrap",
                             probe_fn=lambda _: "/usr/bin/bwrap cannot make a sandbox here: denied")
        self.assertEqual(box.kind, "none")
        self.assertIn("denied", box.warning)
        self.assertEqual(box.describe()["kind"], "none")

    def test_bwrap_asked_for_but_unusable_is_an_error(self):
        with self.assertRaisesRegex(sandbox.SandboxError, "not installed"):
            sandbox.choose("bwrap", [], which=lambda _: None)
        with self.assertRaisesRegex(sandbox.SandboxError, "denied"):
            sandbox.choose("bwrap", [], which=lambda _: "/b", probe_fn=lambda _: "denied")
        with self.assertRaisesRegex(sandbox.SandboxError, "choose one of"):
            sandbox.choose("docker", [])

    def test_working_bwrap_passes_every_hidden_path_to_bwgrade(self):
        box = sandbox.choose("auto", [Path("/kit/grader/instructor"), Path("/s/seed")],
                             which=lambda _: "/usr/bin/bwrap", probe_fn=lambda _: None)
        self.assertEqual(box.bwgrade_args(), ["--sandbox", "/usr/bin/bwrap",
                                              "--hide", "/kit/grader/instructor:/s/seed"])
        self.assertEqual(box.describe(), {"kind": "bwrap", "bwrap": "/usr/bin/bwrap", "warning": None,
                                          "hidden": ["/kit/grader/instructor", "/s/seed"]})

    def test_a_path_with_a_colon_cannot_be_hidden_and_is_not_dropped(self):
        with self.assertRaisesRegex(sandbox.SandboxError, "':'"):
            sandbox.choose("auto", [Path("/a:b/seed")], which=lambda _: "/b", probe_fn=lambda _: None)


class KitRunnerPassesIt(unittest.TestCase):
    def test_every_bwgrade_run_carries_the_sandbox_options(self):
        # A stand-in bwgrade that writes its own command line as its report.
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / "bwgrade"
            fake.write_text(f"#!{sys.executable}\nimport json, sys\n"
                            "out = sys.argv[sys.argv.index('--json') + 1]\n"
                            "json.dump({'argv': sys.argv[1:]}, open(out, 'w'))\n")
            fake.chmod(0o755)
            runner = grade_runner.KitRunner(ROOT, Path(tmp), ["haxpy"], bwgrade=fake)
            runner.sandbox_args = ("--sandbox", "/opt/bwrap", "--hide", "/s/seed")
            seed = seeds.Seed(None, "public", "--public", hidden=False)
            t = runner.test("haxpy", Path("/w"), seed, {}, 30, Path(tmp) / "t.json")
            b = runner.bench("haxpy", Path("/w"), {}, 30, Path(tmp) / "b.json")
            m = runner.memcheck("haxpy", Path("/w"), seed, {}, 30, Path(tmp) / "m.json",
                                ("small", "special"))
            for out in (t, b, m):
                argv = out.doc["argv"]
                i = argv.index("--sandbox")
                self.assertEqual(argv[i:i + 4], ["--sandbox", "/opt/bwrap", "--hide", "/s/seed"], argv)
            # the memcheck run: its groups, the sanitizer, one failure per group
            argv = m.doc["argv"]
            self.assertEqual(argv[:4], ["test", "haxpy", "--worker", "/w"])
            i = argv.index("--sanitize")
            self.assertEqual(argv[i:i + 5], ["--sanitize", "memcheck", "--groups", "small,special",
                                             "--group-fail-fast"])
            self.assertNotIn("--sanitize", t.doc["argv"])


ESCAPE = textwrap.dedent('''\
    #!{python}
    import os, socket
    def attempt(name, fn):
        try:
            print(name + ": ok " + repr(fn()))
        except OSError as e:
            print(name + ": refused (" + (e.strerror or str(e)) + ")")
    attempt("connect", lambda: socket.create_connection(("127.0.0.1", {port}), 3).close())
    attempt("seed", lambda: open({seed!r}).read())
    attempt("kit write", lambda: open({kit!r} + "/escaped", "w").write("x"))
    attempt("home write", lambda: open(os.environ["HOME"] + "/probe", "w").write("x"))
    ''')


@unittest.skipUnless(BWGRADE.is_file(), "bwgrade not built (run.py selftest builds it first)")
class RealSandbox(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        bwrap = shutil.which("bwrap")
        if bwrap is None:
            raise unittest.SkipTest("bubblewrap not installed")
        why = sandbox.probe(bwrap)
        if why is not None:
            raise unittest.SkipTest(f"bubblewrap cannot run here: {why}")
        cls.bwrap = bwrap

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        base = Path(self.tmp.name)
        self.seed = base / "secret_seed"
        self.seed.write_text(SECRET + "\n")
        self.kit = base / "kit"
        self.kit.mkdir()
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(8)
        threading.Thread(target=self._accept, daemon=True).start()
        self.worker = base / "worker"
        self.worker.write_text(ESCAPE.format(python=sys.executable, port=self.server.getsockname()[1],
                                             seed=str(self.seed), kit=str(self.kit)))
        self.worker.chmod(0o755)

    def tearDown(self):
        self.server.close()
        self.tmp.cleanup()

    def _accept(self):
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            conn.close()

    def attempts(self, *extra: str) -> dict[str, str]:
        # No baseline worker: then nobody is blamed for the start that failed,
        # and bwgrade's message quotes the worker's output whether or not this
        # machine has a GPU (trusted_device.h).
        p = subprocess.run([str(BWGRADE), "test", "haxpy", "--worker", str(self.worker), "--case", "0",
                            "--baseline-worker", "/nonexistent/bw_worker_baseline", *extra],
                           capture_output=True, text=True, timeout=120)
        out = p.stdout + p.stderr
        self.assertEqual(p.returncode, 3, out)    # it never answers: "did not start"
        got = {}
        for line in out.splitlines():
            name, sep, rest = line.partition(": ")
            if sep and name in ("connect", "seed", "kit write", "home write"):
                got[name] = rest
        self.assertEqual(len(got), 4, out)
        return got

    def test_outside_the_sandbox_everything_works(self):
        got = self.attempts()
        for name in ("connect", "kit write", "home write"):
            self.assertTrue(got[name].startswith("ok"), (name, got))
        self.assertIn(SECRET, got["seed"])
        self.assertTrue((self.kit / "escaped").exists())

    def test_inside_no_network_no_seed_no_writes_but_home(self):
        got = self.attempts("--sandbox", self.bwrap, "--hide", str(self.seed))
        self.assertTrue(got["connect"].startswith("refused"), got)
        self.assertNotIn(SECRET, got["seed"])
        self.assertTrue(got["kit write"].startswith("refused"), got)
        self.assertFalse((self.kit / "escaped").exists())
        self.assertTrue(got["home write"].startswith("ok"), got)

    def test_a_hidden_directory_is_empty_inside(self):
        (self.kit / "instructor").mkdir()
        (self.kit / "instructor" / "policy.ini").write_text(SECRET)
        self.worker.write_text(f"#!{sys.executable}\nimport os\n"
                               f"print('seed: ok', os.listdir({str(self.kit / 'instructor')!r}))\n"
                               "print('connect: x')\nprint('kit write: x')\nprint('home write: x')\n")
        got = self.attempts("--sandbox", self.bwrap, "--hide", f"{self.kit / 'instructor'}:{self.seed}")
        self.assertEqual(got["seed"], "ok []")

    def test_hide_without_sandbox_is_a_usage_error(self):
        p = subprocess.run([str(BWGRADE), "test", "haxpy", "--worker", str(self.worker),
                            "--hide", str(self.seed)], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn("--hide needs --sandbox", p.stderr)



@unittest.skipUnless(BWGRADE.is_file(), "bwgrade not built (run.py selftest builds it first)")
@unittest.skipUnless(hasattr(os, "geteuid") and os.geteuid() == 0,
                     "skipped: needs root (only then do the workers run as nobody; CI runs as root)")
class RealContainment(RealSandbox):
    """bwgrade --contain without bubblewrap, as root (run.py grade's
    --sandbox none): the same program in the worker's place cannot read the
    seed (0600, as run.py grade leaves it) or write into a root-owned kit
    folder, while its HOME stays writable. The network is not defended
    without the sandbox. Catches workers left running as root."""

    @classmethod
    def setUpClass(cls):
        pass   # no bubblewrap needed

    def setUp(self):
        super().setUp()
        base = Path(self.tmp.name)
        base.chmod(0o711)   # nobody must reach the program, not list the folder
        self.seed.chmod(0o600)
        self.kit.chmod(0o755)
        # A shell script: this Python may live where nobody cannot run it.
        self.worker.write_text(
            "#!/bin/sh\n"
            "echo 'connect: not tried'\n"
            f"if s=$(cat '{self.seed}' 2>&1); then echo \"seed: ok $s\"; else echo \"seed: refused $s\"; fi\n"
            f"if (echo x > '{self.kit}/escaped') 2>/dev/null; then echo 'kit write: ok'; "
            "else echo 'kit write: refused'; fi\n"
            "if (echo x > \"$HOME/probe\") 2>/dev/null; then echo 'home write: ok'; "
            "else echo 'home write: refused'; fi\n")

    def test_contained_no_seed_no_kit_writes_but_home(self):
        got = self.attempts("--contain")
        self.assertNotIn(SECRET, got["seed"])
        self.assertTrue(got["seed"].startswith("refused"), got)
        self.assertTrue(got["kit write"].startswith("refused"), got)
        self.assertFalse((self.kit / "escaped").exists())
        self.assertTrue(got["home write"].startswith("ok"), got)

    test_outside_the_sandbox_everything_works = None
    test_inside_no_network_no_seed_no_writes_but_home = None
    test_a_hidden_directory_is_empty_inside = None
    test_hide_without_sandbox_is_a_usage_error = None

if __name__ == "__main__":
    unittest.main()

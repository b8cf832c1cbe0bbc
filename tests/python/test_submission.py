import io
import os
import sys
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "grader" / "py"))

from bwlab import submission  # noqa: E402
from bwlab.submission import SubmissionError  # noqa: E402

NAMES = ["haxpy", "vector_sum"]
HAXPY = b"// haxpy by a student\n"
VSUM = b"// vector_sum by a student\n"


def make_tar(path, members, mode="w:gz"):
    """members: (name, bytes) for files, (name, None) for folders, or TarInfo objects."""
    with tarfile.open(path, mode) as tf:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tf.addfile(m)
                continue
            name, data = m
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tf.addfile(info)
            else:
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))


def make_zip(path, members):
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members:
            if isinstance(name, zipfile.ZipInfo):
                zf.writestr(name, data)
            else:
                zf.writestr(name, data)


class Base(unittest.TestCase):
    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.tmp = Path(self._tmp.name)

    def tearDown(self):
        self._tmp.cleanup()

    def write(self, rel, data):
        p = self.tmp / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        return p


class Directories(Base):
    def test_kit_layout(self):
        self.write("sub/exercises/haxpy/haxpy.cu", HAXPY)
        self.write("sub/exercises/vector_sum/vector_sum.cu", VSUM)
        s = submission.load(self.tmp / "sub", NAMES)
        self.assertEqual(s.kind, "directory")
        self.assertEqual(s.files, {"haxpy": HAXPY, "vector_sum": VSUM})
        self.assertEqual(s.found_at["haxpy"], "exercises/haxpy/haxpy.cu")
        self.assertEqual(s.missing, {})

    def test_short_layout_and_missing(self):
        self.write("sub/haxpy/haxpy.cu", HAXPY)
        s = submission.load(self.tmp / "sub", NAMES)
        self.assertEqual(s.files, {"haxpy": HAXPY})
        self.assertEqual(s.missing, {"vector_sum": "missing file exercises/vector_sum/vector_sum.cu"})

    def test_one_wrapping_folder(self):
        self.write("sub/alice-lab1/exercises/haxpy/haxpy.cu", HAXPY)
        self.write("sub/alice-lab1/vector_sum/vector_sum.cu", VSUM)
        self.write("sub/.hidden", b"ignored")
        s = submission.load(self.tmp / "sub", NAMES)
        self.assertEqual(s.files, {"haxpy": HAXPY, "vector_sum": VSUM})
        self.assertEqual(s.found_at["haxpy"], "alice-lab1/exercises/haxpy/haxpy.cu")

    def test_only_student_files_are_taken(self):
        self.write("sub/exercises/haxpy/haxpy.cu", HAXPY)
        self.write("sub/exercises/haxpy/haxpy.h", b"#error a forged contract\n")
        self.write("sub/exercises/haxpy/adapter.cu", b"#error a forged adapter\n")
        self.write("sub/CMakeLists.txt", b"evil()\n")
        s = submission.load(self.tmp / "sub", NAMES)
        self.assertEqual(set(s.files), {"haxpy"})
        out = self.tmp / "out"
        s.write(out)
        written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
        self.assertEqual(written, ["haxpy/haxpy.cu"])
        self.assertEqual((out / "haxpy" / "haxpy.cu").read_bytes(), HAXPY)

    def test_symlinked_file_refused(self):
        target = self.write("elsewhere/secret.cu", b"secret")
        (self.tmp / "sub" / "haxpy").mkdir(parents=True)
        os.symlink(target, self.tmp / "sub" / "haxpy" / "haxpy.cu")
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "sub", NAMES)
        self.assertIn("symbolic link", str(cm.exception))

    def test_symlinked_folder_refused(self):
        self.write("elsewhere/haxpy/haxpy.cu", HAXPY)
        (self.tmp / "sub" / "exercises").mkdir(parents=True)
        os.symlink(self.tmp / "elsewhere" / "haxpy", self.tmp / "sub" / "exercises" / "haxpy")
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "sub", NAMES)

    def test_submission_that_is_a_symlink_refused(self):
        # A link a student's archive left among the submissions could name
        # the solutions, or another student's folder or archive.
        self.write("solutions/haxpy/haxpy.cu", HAXPY)
        make_tar(self.tmp / "alice.tar.gz", [("haxpy/haxpy.cu", HAXPY)])
        os.symlink(self.tmp / "solutions", self.tmp / "mallory")
        os.symlink(self.tmp / "alice.tar.gz", self.tmp / "mallory.tar.gz")
        for name in ("mallory", "mallory.tar.gz"):
            with self.subTest(name=name), self.assertRaises(SubmissionError) as cm:
                submission.load(self.tmp / name, NAMES)
            self.assertIn("is a symbolic link", str(cm.exception))
        self.assertEqual(submission.load(self.tmp / "solutions", NAMES).files["haxpy"], HAXPY)

    def test_fifo_refused(self):
        (self.tmp / "sub" / "haxpy").mkdir(parents=True)
        os.mkfifo(self.tmp / "sub" / "haxpy" / "haxpy.cu")
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "sub", NAMES)

    def test_not_there(self):
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "nothing", NAMES)

    def test_digest_follows_content(self):
        self.write("a/haxpy/haxpy.cu", HAXPY)
        self.write("b/exercises/haxpy/haxpy.cu", HAXPY)
        self.write("c/haxpy/haxpy.cu", HAXPY + b"// changed\n")
        da, db, dc = (submission.load(self.tmp / d, NAMES).digest() for d in "abc")
        self.assertEqual(da, db)
        self.assertNotEqual(da, dc)
        self.assertRegex(da, r"^[0-9a-f]{16}$")


class TarArchives(Base):
    def test_tar_gz(self):
        make_tar(self.tmp / "s.tar.gz", [("exercises/haxpy/haxpy.cu", HAXPY),
                                         ("exercises/vector_sum/vector_sum.cu", VSUM),
                                         ("notes.txt", b"hi")])
        s = submission.load(self.tmp / "s.tar.gz", NAMES)
        self.assertEqual(s.kind, "tar")
        self.assertEqual(s.files, {"haxpy": HAXPY, "vector_sum": VSUM})

    def test_nested_folder_and_dot_slash(self):
        make_tar(self.tmp / "s.tgz", [("./lab/", None), ("./lab/exercises/haxpy/haxpy.cu", HAXPY)])
        s = submission.load(self.tmp / "s.tgz", NAMES)
        self.assertEqual(s.files, {"haxpy": HAXPY})
        self.assertEqual(s.found_at["haxpy"], "lab/exercises/haxpy/haxpy.cu")
        self.assertIn("vector_sum", s.missing)

    def test_plain_tar(self):
        make_tar(self.tmp / "s.tar", [("haxpy/haxpy.cu", HAXPY)], mode="w")
        self.assertEqual(submission.load(self.tmp / "s.tar", NAMES).files, {"haxpy": HAXPY})

    def test_path_traversal_refused(self):
        make_tar(self.tmp / "s.tar.gz", [("exercises/haxpy/haxpy.cu", HAXPY), ("../../evil.cu", b"x")])
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "s.tar.gz", NAMES)
        self.assertIn("..", str(cm.exception))

    def test_absolute_path_refused(self):
        make_tar(self.tmp / "s.tar.gz", [("/etc/evil.cu", b"x")])
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "s.tar.gz", NAMES)
        self.assertIn("absolute", str(cm.exception))

    def test_symlink_refused(self):
        link = tarfile.TarInfo("exercises/haxpy/haxpy.cu")
        link.type = tarfile.SYMTYPE
        link.linkname = "/etc/passwd"
        make_tar(self.tmp / "s.tar.gz", [link])
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "s.tar.gz", NAMES)
        self.assertIn("link", str(cm.exception))

    def test_hard_link_refused(self):
        link = tarfile.TarInfo("haxpy/haxpy.cu")
        link.type = tarfile.LNKTYPE
        link.linkname = "other"
        make_tar(self.tmp / "s.tar.gz", [("other", b"x"), link])
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "s.tar.gz", NAMES)

    def test_device_refused(self):
        dev = tarfile.TarInfo("dev/sda")
        dev.type = tarfile.BLKTYPE
        make_tar(self.tmp / "s.tar.gz", [("haxpy/haxpy.cu", HAXPY), dev])
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "s.tar.gz", NAMES)
        self.assertIn("device", str(cm.exception))

    def test_too_large_refused(self):
        big = b"\0" * (submission.MAX_TOTAL_BYTES + 1)
        make_tar(self.tmp / "s.tar.gz", [("haxpy/haxpy.cu", HAXPY), ("big.bin", big)])
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "s.tar.gz", NAMES)
        self.assertIn("MiB", str(cm.exception))

    def test_too_many_members_refused(self):
        make_tar(self.tmp / "s.tar.gz", [(f"f{i}", b"") for i in range(submission.MAX_MEMBERS + 1)])
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "s.tar.gz", NAMES)
        self.assertIn("entries", str(cm.exception))

    def test_oversized_student_file_refused(self):
        make_tar(self.tmp / "s.tar.gz", [("haxpy/haxpy.cu", b"/" * (submission.MAX_FILE_BYTES + 1))])
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "s.tar.gz", NAMES)

    def test_huge_extended_header_refused_before_it_is_read(self):
        # tarfile reads a PAX header whole before the member it describes: a
        # 1 GiB one (1 MiB compressed) took 3 GiB and 31 s. This one is 8 MiB
        # of one record; it must be refused from its size alone.
        payload = b"x" * (8 << 20)
        rec = b" comment=" + payload + b"\n"
        n = len(rec) + 7   # the record's length counts its own 7 digits
        rec = str(n).encode() + rec
        self.assertEqual(len(rec), n)
        info = tarfile.TarInfo("././@PaxHeader")
        info.type, info.size = tarfile.XHDTYPE, len(rec)
        with open(self.tmp / "bomb.tar", "wb") as f:
            f.write(info.tobuf(format=tarfile.USTAR_FORMAT))
            f.write(rec + b"\0" * (-len(rec) % 512))
            cu = tarfile.TarInfo("haxpy/haxpy.cu")
            cu.size = len(HAXPY)
            f.write(cu.tobuf(format=tarfile.USTAR_FORMAT) + HAXPY + b"\0" * (-len(HAXPY) % 512))
            f.write(b"\0" * 1024)
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "bomb.tar", NAMES)
        self.assertIn("extended tar header of %d bytes" % len(rec), str(cm.exception))

    def ext_tar(self, name: str, headers: list[tuple[bytes, bytes]], member=None) -> Path:
        """A plain tar: extended headers (type, payload) in a row, then
        member (a TarInfo, default haxpy/haxpy.cu) with HAXPY as its data."""
        path = self.tmp / name
        with open(path, "wb") as f:
            for kind, payload in headers:
                info = tarfile.TarInfo("././@PaxHeader")
                info.type, info.size = kind, len(payload)
                f.write(info.tobuf(format=tarfile.USTAR_FORMAT))
                f.write(payload + b"\0" * (-len(payload) % 512))
            cu = member or tarfile.TarInfo("haxpy/haxpy.cu")
            cu.size = len(HAXPY)
            f.write(cu.tobuf(format=tarfile.GNU_FORMAT) + HAXPY + b"\0" * (-len(HAXPY) % 512))
            f.write(b"\0" * 1024)
        return path

    @staticmethod
    def pax_record(key: str, value: str) -> bytes:
        body = f" {key}={value}\n".encode()
        n = len(body) + 1
        while len(str(n)) + len(body) != n:   # the length counts its own digits
            n += 1
        return str(n).encode() + body

    def refused(self, path: Path) -> str:
        with self.assertRaises(SubmissionError) as cm:
            submission.load(path, NAMES)
        return str(cm.exception)

    def test_small_extended_headers_in_a_row_refused(self):
        # Catches the cap on one header's size alone: global headers under it,
        # chained, once took 1.16 GB (and 1500 of them a RecursionError).
        g = [(tarfile.XGLTYPE, self.pax_record(f"k{i}", "v" * 1000)) for i in range(9)]
        self.assertIn("more than 8 extended tar headers in a row",
                      self.refused(self.ext_tar("run.tar", g)))
        ok = self.ext_tar("ok.tar", g[:3])   # a few are what real tars hold
        self.assertEqual(submission.load(ok, NAMES).files["haxpy"], HAXPY)

    def test_extended_headers_capped_in_all(self):
        # Catches a cap per run only: members apart, each with 60 KiB of headers.
        path = self.tmp / "many.tar"
        with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
            for i in range(20):
                info = tarfile.TarInfo(f"f{i}.txt")
                info.pax_headers = {"comment": "c" * 60000}
                tf.addfile(info, io.BytesIO(b""))
        self.assertIn("more than 1024 KiB of extended tar headers", self.refused(path))

    def test_a_large_header_after_a_small_one_says_so(self):
        # Catches tarfile's own error handling turning the refusal into "not
        # a tar archive" (a header refused after the first one).
        big = self.pax_record("comment", "x" * (100 << 10))
        path = self.ext_tar("late.tar", [(tarfile.XGLTYPE, self.pax_record("a", "b")),
                                          (tarfile.XHDTYPE, big)])
        self.assertIn(f"extended tar header of {len(big)} bytes", self.refused(path))

    def test_sparse_files_refused(self):
        # Catches tarfile reading a sparse map (old GNU extension blocks, PAX
        # 1.0's map in the data) before any cap of ours applies.
        old = tarfile.TarInfo("haxpy/haxpy.cu")
        old.type = tarfile.GNUTYPE_SPARSE
        self.assertIn("is a sparse file", self.refused(self.ext_tar("gnu.tar", [], old)))
        pax = b"".join(self.pax_record(k, v) for k, v in (
            ("GNU.sparse.major", "1"), ("GNU.sparse.minor", "0"),
            ("GNU.sparse.name", "haxpy/haxpy.cu"), ("GNU.sparse.realsize", "99")))
        self.assertIn("is a sparse file",
                      self.refused(self.ext_tar("pax1.tar", [(tarfile.XHDTYPE, pax)])))

    def test_pax_archive_with_long_names_still_read(self):
        # What tar writes for a long or non-ASCII name: a small PAX header.
        long_dir = "d" * 150
        with tarfile.open(self.tmp / "pax.tar.gz", "w:gz", format=tarfile.PAX_FORMAT) as tf:
            for name, data in ((f"{long_dir}/zoë.txt", b"hi"), (f"{long_dir}/haxpy/haxpy.cu", HAXPY)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        sub = submission.load(self.tmp / "pax.tar.gz", NAMES)
        self.assertEqual(sub.files["haxpy"], HAXPY)

    def test_garbage_file(self):
        self.write("s.tar.gz", b"this is not an archive at all")
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "s.tar.gz", NAMES)


class ZipArchives(Base):
    def test_zip(self):
        make_zip(self.tmp / "s.zip", [("exercises/haxpy/haxpy.cu", HAXPY),
                                      ("exercises/vector_sum/vector_sum.cu", VSUM)])
        s = submission.load(self.tmp / "s.zip", NAMES)
        self.assertEqual(s.kind, "zip")
        self.assertEqual(s.files, {"haxpy": HAXPY, "vector_sum": VSUM})

    def test_zip_nested_with_macos_clutter(self):
        make_zip(self.tmp / "s.zip", [("lab1/vector_sum/vector_sum.cu", VSUM),
                                      ("__MACOSX/lab1/._vector_sum.cu", b"junk")])
        s = submission.load(self.tmp / "s.zip", NAMES)
        self.assertEqual(s.files, {"vector_sum": VSUM})
        self.assertEqual(s.missing, {"haxpy": "missing file exercises/haxpy/haxpy.cu"})

    def test_zip_traversal_refused(self):
        make_zip(self.tmp / "s.zip", [("haxpy/../../x.cu", b"x")])
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "s.zip", NAMES)

    def test_zip_backslash_traversal_refused(self):
        make_zip(self.tmp / "s.zip", [("..\\..\\x.cu", b"x")])
        with self.assertRaises(SubmissionError):
            submission.load(self.tmp / "s.zip", NAMES)

    def test_zip_symlink_refused(self):
        info = zipfile.ZipInfo("haxpy/haxpy.cu")
        info.external_attr = (0o120777 << 16)
        make_zip(self.tmp / "s.zip", [(info, "/etc/passwd")])
        with self.assertRaises(SubmissionError) as cm:
            submission.load(self.tmp / "s.zip", NAMES)
        self.assertIn("link", str(cm.exception))


class Helpers(unittest.TestCase):
    def test_normalize(self):
        self.assertEqual(submission.normalize("./a//b/./c.cu"), "a/b/c.cu")
        self.assertEqual(submission.normalize("a\\b.cu"), "a/b.cu")
        for bad in ["/x", "C:/x", "a/../b", ".."]:
            with self.assertRaises(SubmissionError):
                submission.normalize(bad)

    def test_single_top(self):
        self.assertEqual(submission.single_top(["t", "t/a", "t/b/c"]), "t")
        self.assertIsNone(submission.single_top(["t/a", "u/b"]))
        self.assertIsNone(submission.single_top(["t/a", "readme"]))
        self.assertEqual(submission.single_top(["t/a", "__MACOSX/t/a"]), "t")

    def test_candidates_order(self):
        self.assertEqual(submission.candidates("haxpy", "top")[:3],
                         ["exercises/haxpy/haxpy.cu", "haxpy/haxpy.cu", "haxpy.cu"])
        self.assertEqual(submission.candidates("haxpy", "top")[3], "top/exercises/haxpy/haxpy.cu")


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
"""Self-test of run_onnx_tests.py with fake kiln-compile / kiln-run binaries.

Needs no kiln build and no network; stdlib only:

    python3 test/e2e/test_run_onnx_tests.py      (or python3 -m pytest test/e2e)
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "run_onnx_tests.py")

# The fakes decide what to do from the test directory's name.
# The fake compiler runs as `kiln-compile MODEL -o OUT ARGS` or, like the real one, as
# `kiln-compile --batch ARGS` reading "MODEL<tab>OUT" lines and ending each with the done line.
FAKE_COMPILE = r'''#!PYTHON
import os, signal, sys, time
def compile_one(model, out, args):
    name = os.path.basename(os.path.dirname(model))
    log = os.environ.get("FAKE_COMPILE_LOG")
    if log:
        with open(log, "a") as f:
            f.write(" ".join([name] + args + ["pid=%d" % os.getpid()]) + "\n")
    if "unsupported" in name:
        print("kiln-compile: error: node 'weird_node': unsupported op 'Unique'", file=sys.stderr)
        return 1
    if "cerror" in name:
        print("kiln-compile: error: cannot parse model", file=sys.stderr)
        return 1
    if "ccrash" in name:
        sys.stderr.flush()
        os.kill(os.getpid(), signal.SIGSEGV)
    if "ctimeout" in name:
        # a grandchild that would keep the pipe open if only the child were killed
        os.system("sleep 30")
        return 0
    if "noartifact" in name:
        return 0
    with open(out, "w") as f:
        f.write(name)
    return 0
if "--batch" in sys.argv:
    args = [a for a in sys.argv[1:] if a != "--batch"]
    for line in sys.stdin:
        model, out = line.rstrip("\n").split("\t")
        rc = compile_one(model, out, args)
        sys.stdout.flush()
        print("kiln-compile: batch done %d" % rc, file=sys.stderr, flush=True)
    sys.exit(0)
args = sys.argv[1:]
out = args.pop(args.index("-o") + 1)
args.remove("-o")
model = next(a for a in args if not a.startswith("-"))
args.remove(model)
sys.exit(compile_one(model, out, args))
'''

FAKE_RUN = r'''#!PYTHON
import os, sys, time
args = sys.argv[1:]
with open(args[0]) as f:
    name = f.read()
ds = os.path.basename(args[args.index("--test-data-dir") + 1])
log = os.environ.get("FAKE_RUN_LOG")
if log:
    with open(log, "a") as f:
        f.write(" ".join([name] + args[1:]) + "\n")
if "mismatch" in name and ds == "test_data_set_1":
    print("output 0 'y': mismatch at [3]: got 1.5 expected 1.0")
    sys.exit(1)
if "differ" in name:
    print("kiln-run: error: output 0 'y': 3 of 10 elements differ; first at [0,2]", file=sys.stderr)
    sys.exit(1)
if "rerror" in name:
    print("kiln-run: error: input 0: expected float[1,64], got int64[1,64]", file=sys.stderr)
    sys.exit(1)
if "rcrash" in name:
    os.abort()
if "rtimeout" in name:
    time.sleep(30)
if "rnocompare" in name:
    sys.exit(0)  # exits 0 having compared nothing
print("output 'y': ok (max abs diff 0)")
if "rpartial" not in name:  # the data sets hold two outputs; this one compares only the first
    print("output 'z': ok (max abs diff 0)")
sys.exit(0)
'''


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text.replace("PYTHON", sys.executable, 1))
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class RunnerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="kiln-e2e-selftest-")
        cls.bin = os.path.join(cls.tmp, "bin")
        os.makedirs(cls.bin)
        write_exe(os.path.join(cls.bin, "kiln-compile"), FAKE_COMPILE)
        write_exe(os.path.join(cls.bin, "kiln-run"), FAKE_RUN)
        cls.root = os.path.join(cls.tmp, "suite")
        cls.names = ["t_pass", "t_mismatch", "t_unsupported", "t_cerror", "t_ccrash",
                     "t_ctimeout", "t_noartifact", "t_differ", "t_rerror", "t_rcrash", "t_rtimeout",
                     "t_rnocompare", "t_rpartial", "t_nodata", "t_nooutputs"]
        for n in cls.names:
            os.makedirs(os.path.join(cls.root, "group", n))
            for ds in ("test_data_set_0", "test_data_set_1"):
                if n == "t_nodata":
                    continue  # a model without data sets
                os.makedirs(os.path.join(cls.root, "group", n, ds))
                for k in ((0, 1) if n != "t_nooutputs" else ()):  # t_nooutputs: inputs only
                    with open(os.path.join(cls.root, "group", n, ds, "output_%d.pb" % k), "w") as f:
                        f.write("fake")
            with open(os.path.join(cls.root, "group", n, "model.onnx"), "w") as f:
                f.write("fake")
        os.makedirs(os.path.join(cls.root, "group", "t_missing"))  # no model.onnx

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def run_runner(self, *args):
        cmd = [sys.executable, RUNNER, "--bin", self.bin, "--root", self.root,
               "--compile-timeout", "2", "--run-timeout", "2"] + list(args)
        start = time.time()
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = p.communicate(timeout=120)
        return p.returncode, out.decode(), time.time() - start

    def test_categories_and_report(self):
        self.check_categories_and_report([])

    def test_categories_and_report_per_process(self):
        self.check_categories_and_report(["--compile-per-process"])

    def check_categories_and_report(self, mode):
        report = os.path.join(self.tmp, "report.json")
        log = os.path.join(self.tmp, "run.log")
        if os.path.exists(log):
            os.unlink(log)
        os.environ["FAKE_RUN_LOG"] = log
        try:
            rc, out, secs = self.run_runner("-j", "4", "--rtol", "1e-3", "--atol", "1e-4",
                                            "--report", report, "group", "group/t_missing", *mode)
        finally:
            del os.environ["FAKE_RUN_LOG"]
        self.assertEqual(rc, 1, out)  # failures fail the run without --report-only
        with open(report) as f:
            data = json.load(f)
        status = dict((t["name"], t["status"]) for t in data["tests"])
        self.assertEqual(status, {
            "group/t_pass": "pass",
            "group/t_mismatch": "mismatch",
            "group/t_unsupported": "unsupported",
            "group/t_cerror": "compile-error",
            "group/t_ccrash": "crash",
            "group/t_ctimeout": "timeout",
            "group/t_noartifact": "compile-error",
            "group/t_differ": "mismatch",
            "group/t_rerror": "runtime-error",
            "group/t_rcrash": "crash",
            "group/t_rtimeout": "timeout",
            "group/t_missing": "missing",
            "group/t_rnocompare": "runtime-error",
            "group/t_rpartial": "runtime-error",
            "group/t_nodata": "missing",
            "group/t_nooutputs": "missing",
        })
        self.assertEqual(data["summary"]["pass"], 1)
        self.assertEqual(data["summary"]["timeout"], 2)
        # One FAIL line per failing test, and a summary.
        self.assertEqual(out.count("FAIL ["), 15, out)
        self.assertIn("FAIL [missing] group/t_nodata: no test_data_set_*/", out)
        self.assertIn("FAIL [runtime-error] group/t_rpartial: test_data_set_0: kiln-run exited 0 but "
                      "compared 1 of the data set's 2 outputs", out)
        self.assertIn("FAIL [unsupported] group/t_unsupported: kiln-compile: error: node "
                      "'weird_node': unsupported op 'Unique'", out)
        self.assertIn("kiln-e2e: 1 passed, 15 failed", out)
        # Timeouts kill the whole process group (the fake's `sleep 30` grandchild too).
        self.assertLess(secs, 25, out)
        # rtol/atol are passed through, one kiln-run per data set.
        with open(log) as f:
            lines = f.read().splitlines()
        pass_lines = [l for l in lines if l.startswith("t_pass ")]
        self.assertEqual(len(pass_lines), 2)
        for l in pass_lines:
            self.assertIn("--rtol 1e-3", l)
            self.assertIn("--atol 1e-4", l)
            self.assertIn("--quiet", l)

    def test_batch_compiles_share_a_process_until_one_dies(self):
        log = os.path.join(self.tmp, "batch.log")
        if os.path.exists(log):
            os.unlink(log)
        os.environ["FAKE_COMPILE_LOG"] = log
        try:
            rc, out, _ = self.run_runner("-j", "1", "--compile-arg=--target=x86-scalar", "group/t_cerror",
                                         "group/t_ccrash", "group/t_ctimeout", "group/t_pass",
                                         "group/t_rerror")
        finally:
            del os.environ["FAKE_COMPILE_LOG"]
        self.assertEqual(rc, 1, out)
        self.assertIn("FAIL [crash] group/t_ccrash: kiln-compile died: SIGSEGV", out)
        self.assertIn("FAIL [timeout] group/t_ctimeout", out)
        self.assertIn("FAIL [compile-error] group/t_cerror", out)
        self.assertIn("FAIL [runtime-error] group/t_rerror", out)
        with open(log) as f:
            lines = [l.split() for l in f.read().splitlines()]
        self.assertEqual([l[0] for l in lines], ["t_cerror", "t_ccrash", "t_ctimeout", "t_pass", "t_rerror"])
        for l in lines:
            self.assertEqual(l[1:3], ["--quiet", "--target=x86-scalar"], l)
        pid = dict((l[0], l[-1]) for l in lines)
        # A failed compile keeps its process; the crash and the timeout each end theirs.
        self.assertEqual(pid["t_cerror"], pid["t_ccrash"])
        self.assertNotEqual(pid["t_ccrash"], pid["t_ctimeout"])
        self.assertNotEqual(pid["t_ctimeout"], pid["t_pass"])
        self.assertEqual(pid["t_pass"], pid["t_rerror"])

    def test_expect_pass(self):
        good = os.path.join(self.tmp, "good.txt")
        with open(good, "w") as f:
            f.write("# comment\n\ngroup/t_pass\n")
        rc, out, _ = self.run_runner("--expect-pass", good, "group/t_pass", "group/t_rerror")
        self.assertEqual(rc, 0, out)
        self.assertIn("expected: 1 passed, 0 failed", out)

        bad = os.path.join(self.tmp, "bad.txt")
        with open(bad, "w") as f:
            f.write("group/t_pass\ngroup/t_rerror\ngroup/not_there\n")
        rc, out, _ = self.run_runner("--expect-pass", bad, "group/t_pass", "group/t_rerror")
        self.assertEqual(rc, 1, out)
        self.assertIn("EXPECTED PASS, got runtime-error: group/t_rerror", out)
        self.assertIn("EXPECTED PASS, got not-run: group/not_there", out)
        self.assertIn("expected: 1 passed, 2 failed", out)

    def test_list_file_and_write_pass(self):
        lst = os.path.join(self.tmp, "list.txt")
        with open(lst, "w") as f:
            f.write("group/t_pass\ngroup/t_mismatch  # fails\n")
        passed = os.path.join(self.tmp, "passed.txt")
        rc, out, _ = self.run_runner("--list", lst, "--write-pass", passed, "--strict")
        self.assertEqual(rc, 1, out)  # --strict: the mismatch fails the run
        self.assertIn("FAIL [mismatch] group/t_mismatch: test_data_set_1: output 0 'y': "
                      "mismatch", out)
        with open(passed) as f:
            self.assertEqual(f.read(), "group/t_pass\n")

    def test_list_filters(self):
        lst = os.path.join(self.tmp, "list.txt")
        with open(lst, "w") as f:
            f.write("group/t_pass\ngroup/t_mismatch\ngroup/t_rerror\n")
        only = os.path.join(self.tmp, "only.txt")
        with open(only, "w") as f:
            f.write("group/t_pass\ngroup/t_rerror\n")
        # --match drops the mismatch, --only-in the runtime error: what is left passes.
        rc, out, _ = self.run_runner("--list", lst, "--match", "t_(pass|rerror)$", "--only-in", only,
                                     "--strict")
        self.assertEqual(rc, 1, out)
        self.assertIn("kiln e2e: 2 tests", out)
        rc, out, _ = self.run_runner("--list", lst, "--match", "pass", "--only-in", only, "--strict")
        self.assertEqual(rc, 0, out)
        self.assertIn("kiln e2e: 1 tests", out)
        rc, out, _ = self.run_runner("--list", lst, "--match", "(", "--strict")
        self.assertEqual(rc, 2, out)

    def test_dynamic_mode_and_suites(self):
        report = os.path.join(self.tmp, "dyn.json")
        log = os.path.join(self.tmp, "compile.log")
        os.environ["FAKE_COMPILE_LOG"] = log
        try:
            rc, out, _ = self.run_runner("--dynamic", "--report", report, "group/t_pass",
                                         "group/t_rerror")
        finally:
            del os.environ["FAKE_COMPILE_LOG"]
        self.assertEqual(rc, 1, out)
        with open(log) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 2)
        for l in lines:
            self.assertIn("--symbolic-input-dims", l)
        with open(report) as f:
            data = json.load(f)
        self.assertEqual(data["mode"], "dynamic")
        self.assertEqual(data["suites"], {"group": {"pass": 1, "runtime-error": 1}})
        self.assertIn("dynamic shapes", out)

    def test_report_only(self):
        rc, out, _ = self.run_runner("group/t_pass", "group/t_rerror")
        self.assertEqual(rc, 1, out)
        rc, out, _ = self.run_runner("--report-only", "group/t_pass", "group/t_rerror")
        self.assertEqual(rc, 0, out)
        rc, out, _ = self.run_runner("group/t_pass")
        self.assertEqual(rc, 0, out)

    def test_usage_errors(self):
        p = subprocess.Popen([sys.executable, RUNNER, "--bin", os.path.join(self.tmp, "nope"),
                              "x"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        out, _ = p.communicate(timeout=60)
        self.assertEqual(p.returncode, 2)
        self.assertIn(b"not an executable file", out)


if __name__ == "__main__":
    unittest.main()

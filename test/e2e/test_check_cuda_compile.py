#!/usr/bin/env python3
"""Self-test of check_cuda_compile.py: a listed model that does not exist fails the gate (it used to be
dropped silently), and without ptxas the PTX text itself is checked (header, arch, one .entry per kernel).

    test_check_cuda_compile.py --bin build/bin --root .
"""
import argparse
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check_cuda_compile  # noqa: E402

ARGS = None
GOOD = """//
.version 8.7
.target sm_90
.address_size 64

.visible .entry main_kernel_0(
  .param .u64 p0
)
{
  ret;
}
"""


class PtxTextTest(unittest.TestCase):
    def test_good_module(self):
        self.assertIsNone(check_cuda_compile.check_ptx_text(GOOD, "sm_90", ["main_kernel_0"]))

    def test_problems(self):
        f = check_cuda_compile.check_ptx_text
        self.assertIn("not sm_80", f(GOOD, "sm_80", ["main_kernel_0"]))
        self.assertIn("no .entry for kernel main_kernel_1", f(GOOD, "sm_90", ["main_kernel_0", "main_kernel_1"]))
        self.assertIn("no .version", f(GOOD.replace(".version 8.7", ""), "sm_90", []))
        self.assertIn("not 64-bit", f(GOOD.replace(".address_size 64", ".address_size 32"), "sm_90", []))
        self.assertIn("targets nothing", f(GOOD.replace(".target sm_90", ""), "sm_90", []))


class GateTest(unittest.TestCase):
    def run_check(self, *extra):
        with tempfile.TemporaryDirectory() as tmp:
            lst = os.path.join(tmp, "list.txt")
            with open(lst, "w") as f:
                f.write("test/models/mlp\n" + "".join(m + "\n" for m in extra))
            p = subprocess.run([sys.executable, os.path.join(HERE, "check_cuda_compile.py"), "--bin", ARGS.bin,
                                "--root", ARGS.root, "--tests", lst, "--expect-pass", lst, "--arch", "sm_90",
                                "--no-ptxas", "-j", "2"], capture_output=True, text=True)
            return p.returncode, p.stdout + p.stderr

    def test_without_ptxas_reads_the_ptx(self):
        rc, out = self.run_check()
        self.assertEqual(rc, 0, out)
        self.assertIn("ptxas not found", out)
        self.assertIn("all 1 expected models compile", out)

    def test_missing_listed_model_fails(self):
        rc, out = self.run_check("test/models/no_such_model")
        self.assertEqual(rc, 1, out)
        self.assertIn("REGRESSION test/models/no_such_model (sm_90): missing", out)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--root", required=True)
    ARGS, rest = ap.parse_known_args()
    unittest.main(argv=[sys.argv[0]] + rest)

#!/usr/bin/env python3
"""Check how kiln-compile and kiln-run handle the files in test/models/bad/.

    test/e2e/check_bad_inputs.py --bin build/bin

Every malformed or unsafe model must make kiln-compile exit 1 with exactly one
line on stderr starting `kiln-compile: error:`, write no artifact, and not
crash or hang. The valid external-data model must compile (from another
working directory) and match its reference outputs. kiln-run must reject
inputs of the wrong dtype or shape with exit 1 and an error, and accept the
mlp's own test data (batch 1 and 7: the batch dimension is symbolic).

Prints one line per check and `N passed, N failed`; exits 1 if any failed.
Standard library only.
"""

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(os.path.dirname(HERE), "models")
BAD = os.path.join(MODELS, "bad")

# model -> words the error line must contain (case-insensitive)
REJECTED = [
    ("truncated.onnx", []),
    ("random.onnx", []),
    ("unsupported_op.onnx", ["unsupported", "Bernoulli", "weird_node"]),
    ("missing_initializer.onnx", ["missing_bias"]),
    ("range_empty_start.onnx", ["Range", "range_empty_start_node", "start"]),
    ("range_vector_delta.onnx", ["Range", "range_vector_delta_node", "delta"]),
    ("external_escape/model.onnx", []),
    ("external_abs/model.onnx", []),
    ("external_symlink/model.onnx", []),
    ("external_overflow/model.onnx", []),
]


def run(cmd, timeout, cwd=None):
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, cwd=cwd, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None, "", "timed out after %ss" % timeout
    return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")


def describe(rc, out, err):
    if rc is None:
        return err
    if rc < 0:
        return "killed by signal %d" % -rc
    text = (err.strip() or out.strip()).splitlines()
    return "exit %d: %s" % (rc, text[0] if text else "(no output)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", default=os.environ.get("KILN_BIN"),
                    help="directory with kiln-compile and kiln-run (default: $KILN_BIN)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per command")
    args = ap.parse_args()
    if not args.bin:
        ap.error("--bin DIR (or $KILN_BIN) is required")
    kc = os.path.join(os.path.abspath(args.bin), "kiln-compile")
    kr = os.path.join(os.path.abspath(args.bin), "kiln-run")
    for b in (kc, kr):
        if not os.access(b, os.X_OK):
            print("check_bad_inputs.py: error: %s is not executable" % b, file=sys.stderr)
            return 2

    results = []

    def check(name, ok, detail=""):
        results.append(ok)
        print("%s %s%s" % ("PASS" if ok else "FAIL", name, ("  (" + detail + ")") if detail else ""))
        sys.stdout.flush()

    tmp = tempfile.mkdtemp(prefix="kiln-bad-")
    try:
        for rel, words in REJECTED:
            art = os.path.join(tmp, "out.kiln")
            rc, out, err = run([kc, os.path.join(BAD, rel), "-o", art], args.timeout)
            lines = [l for l in err.splitlines() if l.strip()]
            problems = []
            if rc != 1:
                problems.append("want exit 1, got " + describe(rc, out, err))
            elif len(lines) != 1 or not lines[0].startswith("kiln-compile: error:"):
                problems.append("want one stderr line 'kiln-compile: error: ...', got %r"
                                % err.strip()[:300])
            else:
                missing = [w for w in words if w.lower() not in lines[0].lower()]
                if missing:
                    problems.append("error does not mention %s: %s" % (", ".join(missing), lines[0]))
            if os.path.exists(art):
                problems.append("wrote an artifact")
                os.remove(art)
            check("kiln-compile rejects bad/" + rel, not problems,
                  "; ".join(problems) or (lines[0] if lines else ""))

        # Valid external data, compiled from another working directory.
        ext = os.path.join(BAD, "external_ok")
        art = os.path.join(tmp, "external_ok.kiln")
        rc, out, err = run([kc, os.path.join(ext, "model.onnx"), "-o", art], args.timeout, cwd=tmp)
        check("kiln-compile bad/external_ok (cwd elsewhere)", rc == 0 and os.path.isfile(art),
              "" if rc == 0 else describe(rc, out, err))
        if rc == 0:
            for ds in ("test_data_set_0", "test_data_set_1"):
                rc, out, err = run([kr, art, "--test-data-dir", os.path.join(ext, ds), "--quiet"],
                                   args.timeout, cwd=tmp)
                check("kiln-run bad/external_ok/" + ds, rc == 0,
                      "" if rc == 0 else describe(rc, out, err))

        # kiln-run on the mlp.
        mlp = os.path.join(MODELS, "mlp")
        art = os.path.join(tmp, "mlp.kiln")
        rc, out, err = run([kc, os.path.join(mlp, "model.onnx"), "-o", art, "--quiet"], args.timeout)
        check("kiln-compile mlp", rc == 0, "" if rc == 0 else describe(rc, out, err))
        if rc == 0:
            for ds in ("test_data_set_0", "test_data_set_1"):
                d = os.path.join(mlp, ds)
                rc, out, err = run([kr, art, os.path.join(d, "input_0.pb"), "--expect",
                                    os.path.join(d, "output_0.pb"), "--quiet"], args.timeout)
                check("kiln-run mlp %s via INPUT --expect" % ds, rc == 0,
                      "" if rc == 0 else describe(rc, out, err))
            rc, out, err = run([kr, art, "x=" + os.path.join(mlp, "test_data_set_1", "input_0.pb"),
                                "--quiet"], args.timeout)
            check("kiln-run mlp NAME=FILE input", rc == 0, "" if rc == 0 else describe(rc, out, err))
            # A wrong reference must be reported as a mismatch (exit 1).
            rc, out, err = run([kr, art, os.path.join(mlp, "test_data_set_0", "input_0.pb"),
                                "--expect", os.path.join(mlp, "test_data_set_1", "input_0.pb"),
                                "--quiet"], args.timeout)
            check("kiln-run mlp detects a wrong expectation", rc == 1, describe(rc, out, err))
            for bad in ("wrong_dtype_input.pb", "wrong_shape_input.pb"):
                rc, out, err = run([kr, art, os.path.join(BAD, bad)], args.timeout)
                ok = rc == 1 and "error" in (out + err).lower()
                check("kiln-run mlp rejects bad/" + bad, ok, describe(rc, out, err))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    passed = sum(1 for r in results if r)
    print("%d passed, %d failed" % (passed, len(results) - passed))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

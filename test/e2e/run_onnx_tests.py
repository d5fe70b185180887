#!/usr/bin/env python3
"""End-to-end test runner for kiln: compile ONNX test directories and check outputs.

Each test is a directory holding `model.onnx` and `test_data_set_*/` folders
(`input_K.pb`, `output_K.pb`), the layout of ONNX's backend node tests and of
kiln's test/models. For every test this script

  1. runs `kiln-compile model.onnx -o TMP/model.kiln --quiet` (through one
     `kiln-compile --batch` process per worker, which compiles the same way; a
     crash or timeout there ends only that model's compile: a new process
     takes the next; --compile-per-process starts one process per model)
  2. runs `kiln-run TMP/model.kiln --test-data-dir DATASET --quiet` for every
     data set (with --rtol/--atol/--threads when given),

each step in its own subprocess (own process group) with a timeout, several
tests in parallel (-j). Each test ends in one category:

  pass           compiled, every data set matched
  mismatch       kiln-run exited 1 on a data set and reported a mismatch
                 (its output says "mismatch" or "differ", or has no "error:")
  unsupported    kiln-compile failed and its message contains "unsupported"
  compile-error  kiln-compile failed otherwise (or wrote no artifact)
  runtime-error  kiln-run failed otherwise
  crash          a step died from a signal (or exited 129..192, as through a shell)
  timeout        a step ran past its timeout (its process group is killed)
  missing        the test directory has no model.onnx, or no test_data_set_*/ with
                 an output_0.pb (a test that compares nothing has not passed)

A data set passes only when kiln-run exited 0 *and* reported one "ok" comparison
per output_K.pb in it: a kiln-run that compared fewer outputs than the data set
holds is a runtime-error, whatever its exit code.

Test directories come from the command line and/or --list FILE (one path per
line, relative to --root; blank lines and '#' comments ignored). A directory
without model.onnx is searched for test directories below it, so
`run_onnx_tests.py --bin build/bin --root $ONNX_DATA node` runs all node tests.
A test's name is its path relative to --root (default: the current
directory), with '/' separators, e.g. `node/test_abs`.

To run on another machine what was compiled here (a GPU machine without LLVM/MLIR):
--save-artifacts DIR compiles only, writing each artifact to DIR/NAME/model.kiln next to
copies of its data sets; on the other machine `--prebuilt --root DIR` runs those
artifacts (only kiln-run is needed in --bin).

Exit status: 2 on usage errors (e.g. missing binaries). With --expect-pass
LIST, 1 if any test named there did not pass (or was not run), else 0.
Without it, 1 if any test did not pass, else 0; --report-only makes it 0
whatever happened (to survey a suite; never in a gate).

Standard library only; runs on any Python 3 (3.5 or newer).
"""

import argparse
import concurrent.futures
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

CATEGORIES = ["pass", "mismatch", "unsupported", "compile-error", "runtime-error",
              "crash", "timeout", "missing"]
# When data sets of one test end differently, the test takes the worst.
SEVERITY = {"pass": 0, "mismatch": 1, "runtime-error": 2, "timeout": 3, "crash": 4}
# kiln-run's words for a wrong output (tools/run/tensor_compare.cpp: "... elements
# differ; first at ...", "shape mismatch: ...", "dtype mismatch: ...").
MISMATCH_RE = re.compile(r"mismatch|\bdiffer")
MAX_LOG = 4000  # characters of a step's output kept in the report


def parse_args(argv):
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tests", nargs="*", metavar="TEST_DIR",
                    help="test directories (or folders holding them)")
    ap.add_argument("--bin", default=os.environ.get("KILN_BIN"),
                    help="directory with kiln-compile and kiln-run (default: $KILN_BIN)")
    ap.add_argument("--root", default=".",
                    help="directory that --list paths and test names are relative to (default: .)")
    ap.add_argument("--list", action="append", default=[], metavar="FILE",
                    help="file listing test directories relative to --root (repeatable)")
    ap.add_argument("--match", metavar="REGEX",
                    help="keep only the --list entries this regular expression finds (re.search)")
    ap.add_argument("--only-in", action="append", default=[], metavar="FILE",
                    help="keep only the --list entries also listed in FILE (repeatable: in every one)")
    ap.add_argument("-j", "--jobs", type=int, default=2, help="tests run in parallel (default 2)")
    ap.add_argument("--rtol", help="passed to kiln-run")
    ap.add_argument("--atol", help="passed to kiln-run")
    ap.add_argument("--threads", help="passed to kiln-run as --threads")
    ap.add_argument("--compile-arg", action="append", default=[], metavar="ARG",
                    help="extra kiln-compile argument (repeatable), e.g. --compile-arg=--quantize=int8")
    ap.add_argument("--dynamic", action="store_true",
                    help="dynamic-shape mode: compile with --symbolic-input-dims (every input dim "
                         "symbolic, the compiler never sees the test's sizes), run on the same data")
    ap.add_argument("--compile-per-process", action="store_true",
                    help="one kiln-compile process per model, as a user runs it (default: each worker "
                         "compiles its models in one `kiln-compile --batch` process, which starts once)")
    ap.add_argument("--compile-timeout", type=float, default=300.0,
                    help="seconds for one kiln-compile (default 300)")
    ap.add_argument("--run-timeout", type=float, default=120.0,
                    help="seconds for one kiln-run (default 120)")
    ap.add_argument("--report", metavar="FILE", help="write a JSON report here")
    ap.add_argument("--expect-pass", metavar="LIST_FILE",
                    help="tests (names, one a line) that must pass; exit 1 otherwise")
    ap.add_argument("--write-pass", metavar="FILE",
                    help="write the names of the tests that passed to FILE (sorted)")
    ap.add_argument("--report-only", action="store_true",
                    help="exit 0 even when tests fail (without --expect-pass); never use it in a gate")
    ap.add_argument("--strict", action="store_true",
                    help="the default (kept for old command lines): without --expect-pass, exit 1 unless every "
                         "test passed")
    ap.add_argument("--keep-temp", action="store_true", help="keep the compiled artifacts")
    ap.add_argument("--save-artifacts", metavar="DIR",
                    help="compile only: keep each artifact as DIR/NAME/model.kiln with copies of its data sets")
    ap.add_argument("--prebuilt", action="store_true",
                    help="each test directory holds model.kiln (from --save-artifacts): run it, compile nothing")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test as it ends")
    return ap.parse_args(argv)


def read_list(path):
    names = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                names.append(line)
    return names


def norm_name(path, root):
    rel = os.path.relpath(os.path.abspath(path), root)
    if rel == ".." or rel.startswith(".." + os.sep):
        rel = os.path.abspath(path)
    return rel.replace(os.sep, "/")


MODEL_FILE = "model.onnx"  # model.kiln with --prebuilt


def discover(path):
    """Test directories at or under `path` (a directory with model.onnx is one test)."""
    if os.path.isfile(os.path.join(path, MODEL_FILE)) or not os.path.isdir(path):
        return [path]
    found = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        if MODEL_FILE in filenames:
            found.append(dirpath)
            dirnames[:] = []
    return found or [path]


def data_sets(test_dir):
    sets = []
    for entry in os.listdir(test_dir):
        m = re.match(r"^test_data_set_(\d+)$", entry)
        if m and os.path.isdir(os.path.join(test_dir, entry)):
            sets.append((int(m.group(1)), entry))
    return [name for _, name in sorted(sets)]


def expected_outputs(dataset_dir):
    """How many output_K.pb files (K = 0, 1, ... without gaps) a data set holds."""
    k = 0
    while os.path.isfile(os.path.join(dataset_dir, "output_%d.pb" % k)):
        k += 1
    return k


# kiln-run's line for one compared output (tools/run/kiln-run.cpp): "output 'y': ok (...)".
COMPARED_OK_RE = re.compile(r"^output '.*': ok \(", re.M)


def run_step(cmd, timeout):
    """Run cmd in its own process group. Returns dict(rc, output, timed_out, seconds)."""
    start = time.time()
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as e:
        return {"rc": None, "output": "cannot run %s: %s" % (cmd[0], e),
                "timed_out": False, "seconds": 0.0}
    timed_out = False
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        out, _ = proc.communicate()
    return {"rc": proc.returncode, "output": out.decode("utf-8", "replace"),
            "timed_out": timed_out, "seconds": round(time.time() - start, 3)}


BATCH_DONE_RE = re.compile(br"^kiln-compile: batch done (-?[0-9]+)\r?\n", re.M)


class BatchCompiler(object):
    """A `kiln-compile --batch` process that compiles one model after another (a small model's
    compile is mostly the process start: loading libLLVM/libMLIR). compile() gives the dict run_step
    gives for `kiln-compile MODEL -o ARTIFACT ARGS`: what the compile printed, its exit status, and
    on a crash the dying process's status (a new process serves the next model), on a timeout
    timed_out with the process group killed. One per worker thread."""

    def __init__(self, cmd):
        self.cmd = list(cmd) + ["--batch"]
        self.proc = None

    def _start(self):
        self.proc = subprocess.Popen(self.cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, start_new_session=True)

    def _kill(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except OSError:
            pass
        self.proc.wait()

    def compile(self, model, artifact, timeout):
        if "\t" in model + artifact or "\n" in model + artifact:
            return run_step(self.cmd[:-1] + [model, "-o", artifact], timeout)
        start = time.time()
        if self.proc is None or self.proc.poll() is not None:
            try:
                self._start()
            except OSError as e:
                return {"rc": None, "output": "cannot run %s: %s" % (self.cmd[0], e),
                        "timed_out": False, "seconds": 0.0}
        out, fd = b"", self.proc.stdout.fileno()
        try:
            self.proc.stdin.write(("%s\t%s\n" % (model, artifact)).encode("utf-8"))
            self.proc.stdin.flush()
        except (IOError, OSError):
            pass  # it died: reading gives its end and status
        while True:
            done = BATCH_DONE_RE.search(out)
            if done:
                return {"rc": int(done.group(1)), "output": out[:done.start()].decode("utf-8", "replace"),
                        "timed_out": False, "seconds": round(time.time() - start, 3)}
            left = start + timeout - time.time()
            if left <= 0:
                self._kill()
                self.proc = None
                return {"rc": None, "output": out.decode("utf-8", "replace"), "timed_out": True,
                        "seconds": round(time.time() - start, 3)}
            if not select.select([fd], [], [], left)[0]:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:  # the process ended without finishing this model
                rc = self.proc.wait()
                self.proc = None
                return {"rc": rc, "output": out.decode("utf-8", "replace"), "timed_out": False,
                        "seconds": round(time.time() - start, 3)}
            out += chunk

    def close(self):
        if self.proc is None:
            return
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        except (IOError, OSError, subprocess.TimeoutExpired):
            self._kill()
        self.proc = None


def signal_name(num):
    try:
        return signal.Signals(num).name
    except (ValueError, AttributeError):
        return "signal %d" % num


def crash_reason(rc):
    """'SIGSEGV' etc. when rc means the process died from a signal, else None."""
    if rc is None:
        return None
    if rc < 0:
        return signal_name(-rc)
    if 128 < rc <= 128 + 64:
        return "exit %d (%s?)" % (rc, signal_name(rc - 128))
    return None


def summary_line(output):
    """The most telling line of a step's output."""
    lines = [l.strip() for l in output.splitlines() if l.strip()]
    for l in lines:
        if "error" in l.lower():
            return l
    for l in lines:
        if MISMATCH_RE.search(l.lower()):
            return l
    return lines[-1] if lines else ""


def classify_compile(step, artifact):
    out = step["output"]
    if step["timed_out"]:
        return "timeout", "kiln-compile timed out after %.0fs" % step["seconds"]
    sig = crash_reason(step["rc"])
    if sig:
        return "crash", "kiln-compile died: %s %s" % (sig, summary_line(out))
    if step["rc"] == 0:
        if not os.path.isfile(artifact):
            return "compile-error", "kiln-compile exited 0 but wrote no artifact"
        return "pass", ""
    if step["rc"] is None:
        return "compile-error", out
    if "unsupported" in out.lower():
        return "unsupported", summary_line(out)
    return "compile-error", "exit %s: %s" % (step["rc"], summary_line(out))


def classify_run(step, outputs_expected):
    out = step["output"]
    if step["timed_out"]:
        return "timeout", "kiln-run timed out after %.0fs" % step["seconds"]
    sig = crash_reason(step["rc"])
    if sig:
        return "crash", "kiln-run died: %s %s" % (sig, summary_line(out))
    if step["rc"] == 0:
        compared = len(COMPARED_OK_RE.findall(out))
        if compared != outputs_expected:
            return "runtime-error", "kiln-run exited 0 but compared %d of the data set's %d outputs" % (
                compared, outputs_expected)
        return "pass", ""
    low = out.lower()
    if step["rc"] == 1 and (MISMATCH_RE.search(low) or "error:" not in low):
        return "mismatch", summary_line(out)
    return "runtime-error", "exit %s: %s" % (step["rc"], summary_line(out))


def tail(text):
    return text if len(text) <= MAX_LOG else "...\n" + text[-MAX_LOG:]


def suite_summary(results):
    """{suite: {category: count}}, a suite being the first component of a test's name."""
    suites = {}
    for r in results:
        suite = r["name"].split("/", 1)[0] if "/" in r["name"] else "."
        sc = suites.setdefault(suite, {})
        sc[r["status"]] = sc.get(r["status"], 0) + 1
    return suites


class Runner(object):
    def __init__(self, args, compile_bin, run_bin):
        self.args = args
        self.compile_bin = compile_bin
        self.run_bin = run_bin
        self.lock = threading.Lock()
        self.done = 0
        self.total = 0
        self.local = threading.local()  # each worker thread's BatchCompiler
        self.compilers = []

    def compile(self, model, artifact, extra):
        """`kiln-compile MODEL -o ARTIFACT --quiet EXTRA` as run_step's dict: through this worker
        thread's --batch process, or in a process of its own with --compile-per-process."""
        cmd = [self.compile_bin, "--quiet"] + extra
        if self.args.compile_per_process:
            return run_step(cmd + [model, "-o", artifact], self.args.compile_timeout)
        compiler = getattr(self.local, "compiler", None)
        if compiler is None:
            compiler = self.local.compiler = BatchCompiler(cmd)
            with self.lock:
                self.compilers.append(compiler)
        return compiler.compile(model, artifact, self.args.compile_timeout)

    def close(self):
        for c in self.compilers:
            c.close()

    def run_test(self, name, test_dir):
        result = {"name": name, "dir": os.path.abspath(test_dir), "status": None,
                  "message": "", "compile": None, "datasets": []}
        model = os.path.join(test_dir, MODEL_FILE)
        if not os.path.isfile(model):
            result["status"] = "missing"
            result["message"] = "no %s in %s" % (MODEL_FILE, test_dir)
            return self.finish(result)
        sets = data_sets(test_dir)
        empty = [ds for ds in sets if expected_outputs(os.path.join(test_dir, ds)) == 0]
        if not sets or empty:
            result["status"] = "missing"
            result["message"] = ("no test_data_set_*/ in %s: nothing to compare" % test_dir if not sets
                                 else "%s has no output_0.pb: nothing to compare" % empty[0])
            return self.finish(result)
        tmp = tempfile.mkdtemp(prefix="kiln-e2e-")
        try:
            artifact = os.path.join(tmp, "model.kiln")
            if self.args.prebuilt:
                artifact = model
            else:
                extra = (["--symbolic-input-dims"] if self.args.dynamic else []) + self.args.compile_arg
                step = self.compile(model, artifact, extra)
                status, message = classify_compile(step, artifact)
                result["compile"] = {"rc": step["rc"], "seconds": step["seconds"],
                                     "timed_out": step["timed_out"], "output": tail(step["output"])}
                if status != "pass":
                    result["status"], result["message"] = status, message
                    return self.finish(result)
            if self.args.save_artifacts:
                keep = os.path.join(self.args.save_artifacts, name)
                os.makedirs(keep, exist_ok=True)
                shutil.copyfile(artifact, os.path.join(keep, "model.kiln"))
                for ds in sets:
                    shutil.rmtree(os.path.join(keep, ds), ignore_errors=True)
                    shutil.copytree(os.path.join(test_dir, ds), os.path.join(keep, ds))
                result["status"] = "pass"
                return self.finish(result)
            worst, worst_msg = "pass", ""
            for ds in sets:
                cmd = [self.run_bin, artifact, "--test-data-dir", os.path.join(test_dir, ds),
                       "--quiet"]
                for flag, value in (("--rtol", self.args.rtol), ("--atol", self.args.atol),
                                    ("--threads", self.args.threads)):
                    if value is not None:
                        cmd += [flag, str(value)]
                step = run_step(cmd, self.args.run_timeout)
                ds_status, ds_msg = classify_run(step, expected_outputs(os.path.join(test_dir, ds)))
                result["datasets"].append({
                    "name": ds, "status": ds_status, "message": ds_msg, "rc": step["rc"],
                    "seconds": step["seconds"], "timed_out": step["timed_out"],
                    "output": tail(step["output"])})
                if SEVERITY[ds_status] > SEVERITY[worst]:
                    worst, worst_msg = ds_status, "%s: %s" % (ds, ds_msg)
            result["status"], result["message"] = worst, worst_msg
            if self.args.keep_temp:
                result["artifact"] = artifact
            return self.finish(result)
        finally:
            if not self.args.keep_temp:
                shutil.rmtree(tmp, ignore_errors=True)

    def finish(self, result):
        with self.lock:
            self.done += 1
            if self.args.verbose:
                print("[%d/%d] %-13s %s%s" % (
                    self.done, self.total, result["status"], result["name"],
                    ("  " + result["message"]) if result["message"] else ""))
                sys.stdout.flush()
        return result


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if not args.bin:
        print("run_onnx_tests.py: error: --bin DIR (or $KILN_BIN) is required", file=sys.stderr)
        return 2
    compile_bin = os.path.join(os.path.abspath(args.bin), "kiln-compile")
    run_bin = os.path.join(os.path.abspath(args.bin), "kiln-run")
    if args.prebuilt and args.save_artifacts:
        print("run_onnx_tests.py: error: --prebuilt and --save-artifacts exclude each other", file=sys.stderr)
        return 2
    global MODEL_FILE
    if args.prebuilt:
        MODEL_FILE = "model.kiln"
    if args.save_artifacts:
        args.save_artifacts = os.path.abspath(args.save_artifacts)
    for b in ([run_bin] if args.prebuilt else [compile_bin, run_bin]):
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            print("run_onnx_tests.py: error: %s is not an executable file" % b, file=sys.stderr)
            return 2
    if args.jobs < 1:
        print("run_onnx_tests.py: error: -j must be at least 1", file=sys.stderr)
        return 2
    root = os.path.abspath(args.root)

    paths = []
    try:
        only = [set(n.rstrip("/") for n in read_list(f)) for f in args.only_in]
        for list_file in args.list:
            for p in read_list(list_file):
                if args.match and not re.search(args.match, p):
                    continue
                if all(p.rstrip("/") in names for names in only):
                    paths.append(os.path.join(root, p))
    except (IOError, OSError) as e:
        print("run_onnx_tests.py: error: cannot read %s" % e, file=sys.stderr)
        return 2
    except re.error as e:
        print("run_onnx_tests.py: error: --match: %s" % e, file=sys.stderr)
        return 2
    for p in args.tests:
        if not os.path.exists(p) and os.path.exists(os.path.join(root, p)):
            p = os.path.join(root, p)
        paths.append(p)
    tests, seen = [], set()
    for p in paths:
        for d in discover(p):
            name = norm_name(d, root)
            if name not in seen:
                seen.add(name)
                tests.append((name, d))
    if not tests:
        print("run_onnx_tests.py: error: no tests given", file=sys.stderr)
        return 2

    expected = None
    if args.expect_pass:
        try:
            expected = [n.rstrip("/") for n in read_list(args.expect_pass)]
        except (IOError, OSError) as e:
            print("run_onnx_tests.py: error: cannot read %s: %s" % (args.expect_pass, e),
                  file=sys.stderr)
            return 2

    runner = Runner(args, compile_bin, run_bin)
    runner.total = len(tests)
    start = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        futures = [pool.submit(runner.run_test, name, d) for name, d in tests]
        results = [f.result() for f in futures]
    runner.close()
    elapsed = time.time() - start
    results.sort(key=lambda r: r["name"])

    counts = dict((c, 0) for c in CATEGORIES)
    for r in results:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    failures = [r for r in results if r["status"] != "pass"]
    for r in failures:
        print("FAIL [%s] %s: %s" % (r["status"], r["name"], r["message"]))
    print("")
    print("kiln e2e: %d tests in %.1fs (bin %s%s)" % (len(results), elapsed, args.bin,
                                                    ", dynamic shapes" if args.dynamic else ""))
    for c in CATEGORIES:
        if counts.get(c):
            print("  %-14s %d" % (c, counts[c]))
    suites = suite_summary(results)
    if len(suites) > 1:
        print("by suite (first path component of the test name):")
        for suite, sc in sorted(suites.items()):
            total = sum(sc.values())
            print("  %-20s %4d/%-4d pass (%.1f%%)%s" % (
                suite, sc.get("pass", 0), total, 100.0 * sc.get("pass", 0) / total,
                "".join("  %s %d" % (c, sc[c]) for c in CATEGORIES if c != "pass" and sc.get(c))))

    by_name = dict((r["name"], r) for r in results)
    exit_code = 0
    expect_info = None
    if expected is not None:
        not_passing = []
        for n in expected:
            r = by_name.get(n)
            status = r["status"] if r else "not-run"
            if status != "pass":
                not_passing.append((n, status))
        expected_set = set(expected)
        newly = [r["name"] for r in results if r["status"] == "pass" and r["name"] not in expected_set]
        for n, status in not_passing:
            print("EXPECTED PASS, got %s: %s" % (status, n))
        if newly:
            print("note: %d passing tests are not in %s%s" % (
                len(newly), args.expect_pass, " (e.g. %s)" % ", ".join(newly[:5])))
        expect_info = {"list": args.expect_pass, "listed": len(expected),
                       "not_passing": [{"name": n, "status": s} for n, s in not_passing],
                       "passing_not_listed": newly}
        print("expected: %d passed, %d failed" % (len(expected) - len(not_passing),
                                                  len(not_passing)))
        exit_code = 1 if not_passing else 0
    else:
        print("kiln-e2e: %d passed, %d failed" % (counts["pass"], len(failures)))
        if failures and not args.report_only:
            exit_code = 1

    if args.write_pass:
        with open(args.write_pass, "w") as f:
            for r in results:
                if r["status"] == "pass":
                    f.write(r["name"] + "\n")
    if args.report:
        report = {
            "version": 1,
            "bin": os.path.abspath(args.bin),
            "root": root,
            "rtol": args.rtol, "atol": args.atol, "threads": args.threads,
            "jobs": args.jobs,
            "mode": "dynamic" if args.dynamic else "static",
            "suites": suites,
            "seconds": round(elapsed, 3),
            "summary": counts,
            "expect_pass": expect_info,
            "tests": results,
        }
        with open(args.report, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)
            f.write("\n")
    return exit_code


if __name__ == "__main__":
    sys.exit(main())

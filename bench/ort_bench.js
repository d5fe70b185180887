#!/usr/bin/env node
'use strict';
// Time a model with ONNX Runtime (onnxruntime-node, CPU), the baseline for kiln.
//
//   node bench/ort_bench.js MODEL.onnx [INPUT.pb | NAME=INPUT.pb ...] [--test-data-dir DIR]
//        [--threads N] [--iterations N] [--warmup W] [--opt-level all|extended|basic|disabled]
//        [--json] [--profile PREFIX]
//
// Inputs are ONNX TensorProto files, bound in the model's input order (or by
// NAME=). --test-data-dir DIR reads DIR/input_K.pb. The session uses
// intraOpNumThreads = --threads (default 1), interOpNumThreads = 1 and
// sequential execution. After W warm-up runs, N runs are timed one by one
// (wall clock around `await session.run(...)`), and one line is printed in
// kiln-run's format:
//
//   latency_ms median=.. p90=.. min=.. max=.. iterations=N threads=T
//
// median is the middle value (mean of the two middle ones for even N), p90 the
// nearest-rank 90th percentile. --json prints the same figures as JSON instead.
// --profile PREFIX turns on ONNX Runtime's profiler for the timed runs and prints, on
// stderr, where its JSON trace was written (PREFIX_<date>.json) and a table of each
// node's mean microseconds per run, largest first: where ORT's time goes, to set beside
// kiln-run --profile-summary (the timed runs then include the profiler's overhead).
// onnxruntime-node comes from bench/node_modules (bench/setup.sh).

const fs = require('fs');
const path = require('path');
const tp = require('../test/models/tensor_proto.js');

function usage(msg) {
  if (msg) console.error('ort_bench.js: error: ' + msg);
  console.error('usage: ort_bench.js MODEL.onnx [INPUT.pb|NAME=INPUT.pb ...] [--test-data-dir DIR] ' +
    '[--threads N] [--iterations N] [--warmup W] [--opt-level L] [--json]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { model: null, inputs: [], dataDir: null, threads: 1, iterations: 100, warmup: 10,
    optLevel: 'all', json: false, profile: null };
  const intArg = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) usage(`${name} needs an integer >= ${min}, got '${v}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === '--threads') o.threads = intArg(a, next(), 1);
    else if (a === '--iterations') o.iterations = intArg(a, next(), 1);
    else if (a === '--warmup') o.warmup = intArg(a, next(), 0);
    else if (a === '--test-data-dir') o.dataDir = next();
    else if (a === '--opt-level') o.optLevel = next();
    else if (a === '--json') o.json = true;
    else if (a === '--profile') o.profile = next();
    else if (a === '-h' || a === '--help') usage();
    else if (a.startsWith('--')) usage(`unknown option ${a}`);
    else if (!o.model) o.model = a;
    else o.inputs.push(a);
  }
  if (!o.model) usage('no model given');
  if (!['all', 'extended', 'basic', 'disabled'].includes(o.optLevel)) usage('bad --opt-level');
  return o;
}

function percentiles(times) {
  const s = times.slice().sort((a, b) => a - b);
  const n = s.length;
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  const p90 = s[Math.max(0, Math.ceil(0.9 * n) - 1)];
  return { median, p90, min: s[0], max: s[n - 1] };
}

// onnxruntime-node's endProfiling() returns nothing: the newest PREFIX_*.json is the trace.
function profileFile(returned, prefix) {
  if (typeof returned === 'string') return returned;
  const dir = path.dirname(path.resolve(prefix));
  const base = path.basename(prefix) + '_';
  const found = fs.readdirSync(dir).filter((f) => f.startsWith(base) && f.endsWith('.json'))
    .map((f) => path.join(dir, f)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
  if (!found.length) throw new Error(`no profile ${prefix}_*.json was written`);
  return found[0];
}

// Sums the trace's node events (name `<node>_kernel_time`) per node over all runs.
function printProfile(file, runs) {
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  const perNode = new Map();
  let total = 0;
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const node = e.name.slice(0, -'_kernel_time'.length);
    const op = e.args && e.args.op_name ? e.args.op_name : '';
    const cur = perNode.get(node) || { op, us: 0 };
    cur.us += e.dur;
    perNode.set(node, cur);
    total += e.dur;
  }
  const rows = [...perNode.entries()].sort((a, b) => b[1].us - a[1].us);
  console.error(`ort profile: ${file}, ${runs} runs, nodes ${(total / runs).toFixed(1)} us/run`);
  console.error('   share     us/run  op                 node');
  for (const [node, { op, us }] of rows) {
    console.error(`${(100 * us / total).toFixed(1).padStart(7)}%  ${(us / runs).toFixed(2).padStart(9)}  ` +
      `${op.padEnd(18)} ${node}`);
  }
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const ort = tp.loadOrt();
  const session = await ort.InferenceSession.create(o.model, {
    intraOpNumThreads: o.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: o.optLevel,
    ...(o.profile ? { enableProfiling: true, profileFilePrefix: o.profile } : {}),
  });

  let specs = o.inputs.slice();
  if (o.dataDir) {
    const re = /^input_(\d+)\.pb$/;
    specs = specs.concat(fs.readdirSync(o.dataDir)
      .filter((f) => re.test(f))
      .sort((a, b) => Number(re.exec(a)[1]) - Number(re.exec(b)[1]))
      .map((f) => path.join(o.dataDir, f)));
  }
  if (specs.length !== session.inputNames.length) {
    usage(`model has ${session.inputNames.length} inputs (${session.inputNames.join(', ')}), ` +
      `got ${specs.length} input files`);
  }
  const feeds = {};
  specs.forEach((spec, i) => {
    let name = session.inputNames[i];
    let file = spec;
    const eq = spec.indexOf('=');
    if (eq > 0 && !fs.existsSync(spec)) {
      name = spec.slice(0, eq);
      file = spec.slice(eq + 1);
      if (!session.inputNames.includes(name)) usage(`model has no input '${name}'`);
    }
    feeds[name] = tp.toOrtTensor(ort, tp.readTensorFile(file));
  });

  for (let i = 0; i < o.warmup; i++) await session.run(feeds);
  const times = [];
  for (let i = 0; i < o.iterations; i++) {
    const t0 = process.hrtime.bigint();
    await session.run(feeds);
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  const p = percentiles(times);
  if (o.profile) printProfile(profileFile(session.endProfiling(), o.profile), o.warmup + o.iterations);
  if (o.json) {
    console.log(JSON.stringify({ ...p, iterations: o.iterations, threads: o.threads,
      ort_version: ort.env.versions ? ort.env.versions.node : undefined }));
  } else {
    const f = (x) => x.toFixed(4);
    console.log(`latency_ms median=${f(p.median)} p90=${f(p.p90)} min=${f(p.min)} ` +
      `max=${f(p.max)} iterations=${o.iterations} threads=${o.threads}`);
  }
}

main().catch((e) => {
  console.error('ort_bench.js: error: ' + (e && e.message ? e.message : e));
  process.exit(1);
});

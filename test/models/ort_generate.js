#!/usr/bin/env node
'use strict';
// Greedy token decoding with ONNX Runtime (onnxruntime-node, CPU), for
// decoder-only models in the Hugging Face / Optimum "with past" layout
// (inputs input_ids, attention_mask, position_ids, past_key_values.{i}.key/value;
// outputs logits, present.{i}.key/value), such as test/models/lm/*/model.onnx.
//
//   node test/models/ort_generate.js --model MODEL.onnx
//        (--prompts-file FILE | --prompt IDS [--prompt IDS ...] | --prompt-len L)
//        [--batch B] [--new-tokens N] [--threads T] [--opt-level all|extended|basic|disabled]
//        [--out OUT.json] [--bench [--warmup W] [--rounds R]]
//
// Prompts: --prompts-file is JSON, an array of arrays of token ids (or an object
// with such a "prompts" array); --prompt "1,2,3" gives one prompt (repeatable);
// --prompt-len L makes B synthetic prompts of L ids each (row b, position i:
// id (1 + 7*b + 13*i) % (vocab - 1)), for benchmarks. Prompts are decoded in
// order, B at a time (the last group may be smaller).
//
// Decoding: a group of prompts is LEFT padded to its longest prompt with pad id 0
// (attention_mask 0 on pads, 1 elsewhere), position_ids = max(cumsum(mask) - 1, 0);
// the first call (prefill) gets empty past tensors [B, kv_heads, 0, head_dim].
// Each following call feeds the argmax token of the last position of every row
// (lowest id on ties) as input_ids [B,1], appends 1 to attention_mask, gives
// position_ids = previous + 1, and feeds present.{i}.* back as past_key_values.{i}.*.
// Exactly N tokens are generated (no stop at EOS), i.e. N model calls.
//
// --out OUT.json writes {"model", "threads", "opt_level", "new_tokens", "pad_token_id",
// "vocab_size", "batches": [{"prompts", "padded_length", "tokens", "logits_offset"}],
// "logits": {"file", "dtype", "layout"}} and the logits file OUT.logits.bin
// (OUT.json's name with .json replaced): for each batch in turn, at logits_offset
// bytes, float32 little-endian [new_tokens][batch][vocab]: the last-position
// logits of each model call, i.e. the logits that chose each new token.
//
// --bench times the decoding of each group W (default 1) times untimed, then R
// (default 5) times timed, and prints one JSON object: time to first token
// (prefill call + argmax), per-token decode latency (each later call + argmax;
// median, p90, min, max over all rounds), tokens/s. Timings are wall clock
// around building the feeds, session.run and the argmax.
//
// The session uses intraOpNumThreads = --threads (default 1), interOpNumThreads
// = 1, sequential execution, and graph optimization level --opt-level (default
// "all" with --bench, "disabled" otherwise). num_kv_heads, head_dim and vocab
// come from the model's input/output shapes. onnxruntime-node comes from
// bench/node_modules (bench/setup.sh) or $KILN_ORT_NODE_MODULES.

const fs = require('fs');
const path = require('path');
const tp = require('./tensor_proto.js');

function usage(msg) {
  if (msg) console.error('ort_generate.js: error: ' + msg);
  console.error('usage: ort_generate.js --model MODEL.onnx (--prompts-file F | --prompt IDS... | ' +
    '--prompt-len L) [--batch B] [--new-tokens N] [--threads T] [--opt-level L] [--out OUT.json] ' +
    '[--bench [--warmup W] [--rounds R]]');
  process.exit(2);
}

function parseArgs(argv) {
  const o = { model: null, prompts: [], promptsFile: null, promptLen: 0, batch: 1, newTokens: 64,
    threads: 1, optLevel: null, out: null, bench: false, warmup: 1, rounds: 5 };
  const intArg = (name, v, min) => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) usage(`${name} needs an integer >= ${min}, got '${v}'`);
    return n;
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const next = () => { if (i + 1 >= argv.length) usage(`${a} needs a value`); return argv[++i]; };
    if (a === '--model') o.model = next();
    else if (a === '--prompts-file') o.promptsFile = next();
    else if (a === '--prompt') {
      const v = next();
      const ids = v.split(/[\s,]+/).filter((s) => s.length).map((s) => intArg('--prompt', s, 0));
      if (!ids.length) usage('--prompt needs at least one token id');
      o.prompts.push(ids);
    } else if (a === '--prompt-len') o.promptLen = intArg(a, next(), 1);
    else if (a === '--batch') o.batch = intArg(a, next(), 1);
    else if (a === '--new-tokens') o.newTokens = intArg(a, next(), 1);
    else if (a === '--threads') o.threads = intArg(a, next(), 1);
    else if (a === '--opt-level') o.optLevel = next();
    else if (a === '--out') o.out = next();
    else if (a === '--bench') o.bench = true;
    else if (a === '--warmup') o.warmup = intArg(a, next(), 0);
    else if (a === '--rounds') o.rounds = intArg(a, next(), 1);
    else if (a === '-h' || a === '--help') usage();
    else usage(`unknown argument '${a}'`);
  }
  if (!o.model) usage('no --model given');
  const sources = (o.promptsFile ? 1 : 0) + (o.prompts.length ? 1 : 0) + (o.promptLen ? 1 : 0);
  if (sources !== 1) usage('give exactly one of --prompts-file, --prompt, --prompt-len');
  if (o.optLevel === null) o.optLevel = o.bench ? 'all' : 'disabled';
  if (!['all', 'extended', 'basic', 'disabled'].includes(o.optLevel)) usage('bad --opt-level');
  return o;
}

function readPrompts(file) {
  let p = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (p && !Array.isArray(p)) p = p.prompts;
  if (!Array.isArray(p) || !p.length) throw new Error(`${file}: expected a non-empty array of prompts`);
  p.forEach((ids, k) => {
    if (!Array.isArray(ids) || !ids.length || !ids.every((t) => Number.isInteger(t) && t >= 0)) {
      throw new Error(`${file}: prompt ${k} is not a non-empty array of token ids`);
    }
  });
  return p;
}

// Model layout from the session's metadata.
function describe(session) {
  const meta = {};
  for (const m of session.inputMetadata) meta[m.name] = m;
  for (const n of ['input_ids', 'attention_mask', 'position_ids']) {
    if (!meta[n]) throw new Error(`model has no input '${n}'`);
  }
  let layers = 0;
  while (meta[`past_key_values.${layers}.key`]) layers++;
  if (!layers) throw new Error("model has no input 'past_key_values.0.key'");
  const shape = meta['past_key_values.0.key'].shape;
  const kvHeads = shape[1], headDim = shape[3];
  if (!Number.isInteger(kvHeads) || !Number.isInteger(headDim)) {
    throw new Error('past_key_values.0.key needs static num_kv_heads and head_dim dims');
  }
  const logits = session.outputMetadata.find((m) => m.name === 'logits');
  if (!logits) throw new Error("model has no output 'logits'");
  const vocab = logits.shape[2];
  if (!Number.isInteger(vocab)) throw new Error('logits needs a static vocab dim');
  return { layers, kvHeads, headDim, vocab };
}

function argmaxRows(data, batch, seq, vocab) {
  const out = new Array(batch);
  for (let b = 0; b < batch; b++) {
    const base = (b * seq + seq - 1) * vocab;
    let best = 0, bv = data[base];
    for (let v = 1; v < vocab; v++) {
      if (data[base + v] > bv) { bv = data[base + v]; best = v; }
    }
    out[b] = best;
  }
  return out;
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

// Greedy decoding of one group of prompts. Returns tokens, the last-position
// logits of every call (Float32Array [steps][batch][vocab]) and timings.
async function generate(ort, session, desc, prompts, newTokens) {
  const B = prompts.length, V = desc.vocab;
  const L = Math.max(...prompts.map((p) => p.length));
  const ids = new BigInt64Array(B * L), mask = new BigInt64Array(B * L), pos = new BigInt64Array(B * L);
  prompts.forEach((p, b) => {
    for (let i = 0; i < L; i++) {
      const j = i - (L - p.length);
      ids[b * L + i] = BigInt(j >= 0 ? p[j] : 0);
      mask[b * L + i] = j >= 0 ? 1n : 0n;
      pos[b * L + i] = BigInt(Math.max(j, 0));   // = max(cumsum(mask) - 1, 0)
    }
  });
  const logits = new Float32Array(newTokens * B * V);
  const tokens = prompts.map(() => []);
  const stepMs = [];
  let past = {};
  for (let i = 0; i < desc.layers; i++) {
    for (const kind of ['key', 'value']) {
      past[`past_key_values.${i}.${kind}`] =
        new ort.Tensor('float32', new Float32Array(0), [B, desc.kvHeads, 0, desc.headDim]);
    }
  }
  let maskData = mask, total = L, seq = L;
  let idsData = ids, posData = pos;
  const lastPos = prompts.map((p) => BigInt(p.length - 1));
  for (let step = 0; step < newTokens; step++) {
    const t0 = nowMs();
    const feeds = Object.assign({
      input_ids: new ort.Tensor('int64', idsData, [B, seq]),
      attention_mask: new ort.Tensor('int64', maskData, [B, total]),
      position_ids: new ort.Tensor('int64', posData, [B, seq]),
    }, past);
    const res = await session.run(feeds);
    const lg = res.logits;
    if (lg.dims[0] !== B || lg.dims[1] !== seq || lg.dims[2] !== V) {
      throw new Error(`logits has shape [${lg.dims}], expected [${B},${seq},${V}]`);
    }
    const next = argmaxRows(lg.data, B, seq, V);
    stepMs.push(nowMs() - t0);
    for (let b = 0; b < B; b++) {
      logits.set(lg.data.subarray((b * seq + seq - 1) * V, (b * seq + seq) * V), (step * B + b) * V);
      tokens[b].push(next[b]);
    }
    // Next call: one new token per row.
    past = {};
    for (let i = 0; i < desc.layers; i++) {
      for (const kind of ['key', 'value']) past[`past_key_values.${i}.${kind}`] = res[`present.${i}.${kind}`];
    }
    seq = 1;
    idsData = BigInt64Array.from(next, (t) => BigInt(t));
    const m2 = new BigInt64Array(B * (total + 1));
    for (let b = 0; b < B; b++) {
      m2.set(maskData.subarray(b * total, (b + 1) * total), b * (total + 1));
      m2[b * (total + 1) + total] = 1n;
    }
    maskData = m2;
    total += 1;
    for (let b = 0; b < B; b++) lastPos[b] += 1n;
    posData = BigInt64Array.from(lastPos);
  }
  return { tokens, logits, paddedLength: L, ttftMs: stepMs[0], decodeMs: stepMs.slice(1) };
}

function stats(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  const n = s.length;
  if (!n) return { median: null, p90: null, min: null, max: null, count: 0 };
  const median = n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
  const p90 = s[Math.max(0, Math.ceil(0.9 * n) - 1)];
  const r = (x) => Math.round(x * 1e4) / 1e4;
  return { median: r(median), p90: r(p90), min: r(s[0]), max: r(s[n - 1]), count: n };
}

async function main() {
  const o = parseArgs(process.argv.slice(2));
  const ort = tp.loadOrt();
  const tLoad = nowMs();
  const session = await ort.InferenceSession.create(o.model, {
    intraOpNumThreads: o.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: o.optLevel,
  });
  const loadMs = nowMs() - tLoad;
  const desc = describe(session);
  let prompts;
  if (o.promptsFile) prompts = readPrompts(o.promptsFile);
  else if (o.prompts.length) prompts = o.prompts;
  else {
    prompts = [];
    for (let b = 0; b < o.batch; b++) {
      prompts.push(Array.from({ length: o.promptLen }, (_, i) => (1 + 7 * b + 13 * i) % (desc.vocab - 1)));
    }
  }
  for (const p of prompts) {
    for (const t of p) if (t >= desc.vocab) throw new Error(`token id ${t} >= vocab ${desc.vocab}`);
  }
  const groups = [];
  for (let k = 0; k < prompts.length; k += o.batch) groups.push(prompts.slice(k, k + o.batch));

  const results = [];
  const ttft = [], decode = [], totals = [];
  let decodeTokens = 0, allTokens = 0;
  for (const g of groups) {
    if (o.bench) {
      for (let w = 0; w < o.warmup; w++) await generate(ort, session, desc, g, o.newTokens);
      let last;
      for (let r = 0; r < o.rounds; r++) {
        last = await generate(ort, session, desc, g, o.newTokens);
        ttft.push(last.ttftMs);
        decode.push(...last.decodeMs);
        decodeTokens += g.length * last.decodeMs.length;
        allTokens += g.length * o.newTokens;
        totals.push(last.ttftMs + last.decodeMs.reduce((a, b) => a + b, 0));
      }
      results.push(last);
    } else {
      results.push(await generate(ort, session, desc, g, o.newTokens));
    }
  }

  if (o.out) {
    const base = o.out.endsWith('.json') ? o.out.slice(0, -5) : o.out;
    const binPath = base + '.logits.bin';
    let offset = 0;
    const batches = results.map((r, k) => {
      const b = { prompts: groups[k], padded_length: r.paddedLength, tokens: r.tokens,
        logits_offset: offset };
      offset += r.logits.byteLength;
      return b;
    });
    const fd = fs.openSync(binPath, 'w');
    for (const r of results) {
      fs.writeSync(fd, Buffer.from(r.logits.buffer, r.logits.byteOffset, r.logits.byteLength));
    }
    fs.closeSync(fd);
    const doc = {
      model: path.basename(o.model), threads: o.threads, opt_level: o.optLevel,
      new_tokens: o.newTokens, pad_token_id: 0, vocab_size: desc.vocab, batches,
      logits: { file: path.basename(binPath), dtype: 'float32 little-endian',
        layout: 'per batch at logits_offset bytes: [new_tokens][batch][vocab]' },
    };
    fs.writeFileSync(o.out, JSON.stringify(doc) + '\n');
  }

  if (o.bench) {
    const B = groups[0].length;
    const decodeSum = decode.reduce((a, b) => a + b, 0);
    const totalSum = totals.reduce((a, b) => a + b, 0);
    const report = {
      runtime: 'onnxruntime-node ' + ((ort.env.versions && ort.env.versions.node) || ''),
      model: o.model, batch: B, groups: groups.length,
      prompt_lengths: groups[0].map((p) => p.length), padded_length: results[0].paddedLength,
      new_tokens: o.newTokens, threads: o.threads, opt_level: o.optLevel,
      warmup: o.warmup, rounds: o.rounds,
      load_ms: Math.round(loadMs * 100) / 100,
      ttft_ms: stats(ttft),
      decode_ms: stats(decode),
      // Rows decoded per second in the decode phase (each decode call yields B tokens).
      decode_tokens_per_s: decode.length ? Math.round((decodeTokens / decodeSum) * 1e3 * 100) / 100 : null,
      // All generated tokens over all calls, prefill included.
      tokens_per_s: Math.round((allTokens / totalSum) * 1e3 * 100) / 100,
      total_ms: stats(totals),
    };
    console.log(JSON.stringify(report));
  } else if (!o.out) {
    for (const r of results) for (const t of r.tokens) console.log(t.join(' '));
  }
}

main().catch((e) => {
  console.error('ort_generate.js: error: ' + (e && e.message ? e.message : e));
  process.exit(1);
});

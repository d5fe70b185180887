#!/usr/bin/env node
'use strict';
// Compute reference outputs with ONNX Runtime (onnxruntime-node).
//
//   node test/models/ort_reference.js MODEL.onnx DATASET_DIR [DATASET_DIR...]
//
// For each DATASET_DIR, reads input_0.pb, input_1.pb, ... (ONNX TensorProto),
// binds them to the model's inputs (by the tensor's name when it matches an
// input name, otherwise in order), runs the model on one thread with graph
// optimizations disabled, and writes output_K.pb (TensorProto, named after the
// model's K-th output) into the same directory.
//
// onnxruntime-node comes from bench/node_modules (bench/setup.sh installs it),
// or $KILN_ORT_NODE_MODULES.

const fs = require('fs');
const path = require('path');
const tp = require('./tensor_proto.js');

function inputFiles(dir, prefix) {
  const re = new RegExp(`^${prefix}_(\\d+)\\.pb$`);
  return fs.readdirSync(dir)
    .map((f) => [f, re.exec(f)])
    .filter(([, m]) => m)
    .sort((a, b) => Number(a[1][1]) - Number(b[1][1]))
    .map(([f]) => path.join(dir, f));
}

async function main() {
  const args = process.argv.slice(2);
  if (args.length < 2) {
    console.error('usage: ort_reference.js MODEL.onnx DATASET_DIR [DATASET_DIR...]');
    process.exit(2);
  }
  const [model, ...dirs] = args;
  const ort = tp.loadOrt();
  const session = await ort.InferenceSession.create(model, {
    intraOpNumThreads: 1,
    interOpNumThreads: 1,
    graphOptimizationLevel: 'disabled',
  });
  for (const dir of dirs) {
    const files = inputFiles(dir, 'input');
    if (files.length !== session.inputNames.length) {
      throw new Error(`${dir}: ${files.length} input files, model has ${session.inputNames.length} inputs`);
    }
    const feeds = {};
    files.forEach((f, i) => {
      const t = tp.readTensorFile(f);
      const name = session.inputNames.includes(t.name) ? t.name : session.inputNames[i];
      feeds[name] = tp.toOrtTensor(ort, t);
    });
    const results = await session.run(feeds);
    session.outputNames.forEach((name, k) => {
      const out = path.join(dir, `output_${k}.pb`);
      fs.writeFileSync(out, tp.ortTensorToProto(name, results[name]));
      console.log(`${out}: ${name} ${results[name].type}[${results[name].dims.join(',')}]`);
    });
  }
}

main().catch((e) => {
  console.error('ort_reference.js: error: ' + (e && e.message ? e.message : e));
  process.exit(1);
});

'use strict';
// Minimal reader/writer for ONNX TensorProto files (input_K.pb / output_K.pb),
// written from the field numbers in onnx.proto. Only what test data needs:
//   1 dims (int64, packed or not), 2 data_type (int32), 4 float_data,
//   5 int32_data, 7 int64_data, 8 name (string), 9 raw_data (bytes),
//   10 double_data, 11 uint64_data.
// Shared by test/models/ort_reference.js and bench/ort_bench.js.

const fs = require('fs');

// onnx TensorProto.DataType -> [ORT tensor type, TypedArray, element size]
const DTYPES = {
  1: ['float32', Float32Array, 4],
  2: ['uint8', Uint8Array, 1],
  3: ['int8', Int8Array, 1],
  4: ['uint16', Uint16Array, 2],
  5: ['int16', Int16Array, 2],
  6: ['int32', Int32Array, 4],
  7: ['int64', BigInt64Array, 8],
  9: ['bool', Uint8Array, 1],
  10: ['float16', Uint16Array, 2],
  11: ['float64', Float64Array, 8],
  12: ['uint32', Uint32Array, 4],
  13: ['uint64', BigUint64Array, 8],
};
const ORT_TO_ONNX = {};
for (const [k, v] of Object.entries(DTYPES)) {
  if (!(v[0] in ORT_TO_ONNX)) ORT_TO_ONNX[v[0]] = Number(k);
}

class Reader {
  constructor(buf, start = 0, end = buf.length) {
    this.buf = buf; this.pos = start; this.end = end;
  }
  eof() { return this.pos >= this.end; }
  varint() { // returns BigInt
    let result = 0n, shift = 0n;
    for (;;) {
      if (this.pos >= this.end) throw new Error('truncated varint');
      const b = this.buf[this.pos++];
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
      if (shift > 70n) throw new Error('varint too long');
    }
  }
  bytes() {
    const n = Number(this.varint());
    if (this.pos + n > this.end) throw new Error('truncated length-delimited field');
    const s = this.pos; this.pos += n;
    return [s, this.pos];
  }
  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) this.bytes();
    else if (wire === 5) this.pos += 4;
    else throw new Error('unsupported wire type ' + wire);
  }
}

function toSigned64(v) { return BigInt.asIntN(64, v); }

// Parse a serialized TensorProto. Returns {name, dataType, dims:number[], data:TypedArray}.
function decodeTensor(buf) {
  const r = new Reader(buf);
  const dims = [];
  let dataType = 0, name = '', raw = null;
  const floats = [], ints = [], doubles = [];
  // Repeated numeric field: either packed (wire 2) or one value per tag.
  const rep = (wire, out, readOne, size) => {
    if (wire === 2) {
      const [s, e] = r.bytes();
      const sub = new Reader(buf, s, e);
      while (!sub.eof()) out.push(readOne(sub, size));
    } else {
      out.push(readOne(r, size));
    }
  };
  const readVar = (rd) => rd.varint();
  const readF32 = (rd) => { const v = buf.readFloatLE(rd.pos); rd.pos += 4; return v; };
  const readF64 = (rd) => { const v = buf.readDoubleLE(rd.pos); rd.pos += 8; return v; };
  while (!r.eof()) {
    const key = Number(r.varint());
    const field = key >>> 3, wire = key & 7;
    switch (field) {
      case 1: rep(wire, dims, readVar); break;
      case 2: dataType = Number(r.varint()); break;
      case 4: rep(wire, floats, readF32); break;
      case 5: rep(wire, ints, readVar); break;
      case 7: rep(wire, ints, readVar); break;
      case 8: { const [s, e] = r.bytes(); name = buf.toString('utf8', s, e); break; }
      case 9: { const [s, e] = r.bytes(); raw = buf.subarray(s, e); break; }
      case 10: rep(wire, doubles, readF64); break;
      case 11: rep(wire, ints, readVar); break;
      default: r.skip(wire);
    }
  }
  const info = DTYPES[dataType];
  if (!info) throw new Error('unsupported TensorProto data_type ' + dataType);
  const [, Arr, size] = info;
  const shape = dims.map((d) => Number(toSigned64(d)));
  const count = shape.reduce((a, b) => a * b, 1);
  let data;
  if (raw) {
    if (raw.length !== count * size) {
      throw new Error(`raw_data has ${raw.length} bytes, expected ${count * size}`);
    }
    const copy = new Uint8Array(raw); // aligned copy
    data = new Arr(copy.buffer, 0, count);
  } else {
    data = new Arr(count);
    let src;
    if (dataType === 1) src = floats;
    else if (dataType === 11) src = doubles;
    else src = ints;
    if (src.length !== count) throw new Error(`tensor has ${src.length} values, expected ${count}`);
    for (let i = 0; i < count; i++) {
      let v = src[i];
      if (typeof v === 'bigint') {
        if (Arr === BigInt64Array) v = toSigned64(v);
        else if (Arr === BigUint64Array) v = BigInt.asUintN(64, v);
        else v = Number(BigInt.asIntN(32, v));
      }
      data[i] = v;
    }
  }
  return { name, dataType, dims: shape, data };
}

function readTensorFile(file) {
  return decodeTensor(fs.readFileSync(file));
}

function encodeVarint(v) {
  let x = BigInt.asUintN(64, BigInt(v));
  const out = [];
  do {
    let b = Number(x & 0x7fn);
    x >>= 7n;
    if (x) b |= 0x80;
    out.push(b);
  } while (x);
  return Buffer.from(out);
}

function lenField(field, payload) {
  return Buffer.concat([encodeVarint((field << 3) | 2), encodeVarint(payload.length), payload]);
}

// Serialize a TensorProto with dims, data_type, name and raw_data (little endian).
function encodeTensor(name, dataType, dims, data) {
  const parts = [];
  if (dims.length) parts.push(lenField(1, Buffer.concat(dims.map((d) => encodeVarint(d)))));
  parts.push(encodeVarint((2 << 3) | 0), encodeVarint(dataType));
  if (name) parts.push(lenField(8, Buffer.from(name, 'utf8')));
  parts.push(lenField(9, Buffer.from(data.buffer, data.byteOffset, data.byteLength)));
  return Buffer.concat(parts);
}

// Convert a decoded tensor to an onnxruntime Tensor.
function toOrtTensor(ort, t) {
  return new ort.Tensor(DTYPES[t.dataType][0], t.data, t.dims);
}

// Serialize an onnxruntime Tensor as TensorProto.
function ortTensorToProto(name, tensor) {
  const dt = ORT_TO_ONNX[tensor.type];
  if (!dt) throw new Error('cannot serialize tensor type ' + tensor.type);
  return encodeTensor(name, dt, tensor.dims.map(Number), tensor.data);
}

// Load onnxruntime-node: from the normal module path, $KILN_ORT_NODE_MODULES,
// or bench/node_modules of this repository (installed by bench/setup.sh).
function loadOrt() {
  const path = require('path');
  const candidates = [];
  if (process.env.KILN_ORT_NODE_MODULES) {
    candidates.push(path.join(process.env.KILN_ORT_NODE_MODULES, 'onnxruntime-node'));
  }
  candidates.push(path.join(__dirname, '..', '..', 'bench', 'node_modules', 'onnxruntime-node'));
  candidates.push('onnxruntime-node');
  const errors = [];
  for (const c of candidates) {
    try { return require(c); } catch (e) { errors.push(`${c}: ${e.message.split('\n')[0]}`); }
  }
  throw new Error('onnxruntime-node not found (run bench/setup.sh):\n  ' + errors.join('\n  '));
}

module.exports = {
  DTYPES, decodeTensor, readTensorFile, encodeTensor, toOrtTensor, ortTensorToProto, loadOrt,
};

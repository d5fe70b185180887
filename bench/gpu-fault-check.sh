#!/bin/sh
# The CUDA runtime's fault reports and pointer checks on a real GPU: KILN_CUDA_CHECK_POINTERS on the
# test llama (its products read a host address) and a strided Conv (its kernel does), the fault
# messages with and without KILN_CUDA_SYNC=1, and in one process a fault, the broken context, unload,
# reset and a healthy run (bench/gpu_fault_reload.py). Prepare DIR (default gpucheck-cudart, ~4 MB)
# on the build machine:
#   build/bin/kiln-compile --target=cuda --gpu-arch=sm_90 $ONNX/pytorch-converted/test_Conv2d_strided/model.onnx -o DIR/conv.kiln
#   cp build/bin/kiln-run build/test/cuda/artifacts/{llama,softmax}_sm90.kiln DIR/
#   cp $ONNX/pytorch-converted/test_Conv2d_strided/test_data_set_0/input_0.pb DIR/
#   cp -L build/runtime/libkiln_runtime.so.1 DIR/libkiln_runtime.so
# then there: sh bench/gpu-fault-check.sh DIR
D=${1:-gpucheck-cudart}
R="$D/kiln-run"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
D="$D" python3 - <<'PY'
import os
import numpy as np
from onnx import numpy_helper, TensorProto
t = TensorProto(); t.ParseFromString(open(os.environ["D"] + "/input_0.pb", "rb").read())
np.save(os.environ["D"] + "/conv_in.npy", numpy_helper.to_array(t).astype(np.float32))
np.save(os.environ["D"] + "/softmax_in.npy", np.ones((3, 4, 5), np.float32))
PY
G="generate $D/llama_sm90.kiln --prompt-ids 5,17,42 --max-new-tokens 4 --ids"
echo "== 1 llama, KILN_CUDA_CHECK_POINTERS=1"; KILN_CUDA_CHECK_POINTERS=1 timeout 60 $R $G; echo "rc=$?"
echo "== 2 llama, plain"; timeout 60 $R $G; echo "rc=$?"
echo "== 3 llama, KILN_CUDA_SYNC=1"; KILN_CUDA_SYNC=1 timeout 60 $R $G; echo "rc=$?"
echo "== 4 conv, plain"; timeout 60 $R $D/conv.kiln $D/conv_in.npy; echo "rc=$?"
echo "== 5 conv, KILN_CUDA_SYNC=1"; KILN_CUDA_SYNC=1 timeout 60 $R $D/conv.kiln $D/conv_in.npy; echo "rc=$?"
echo "== 6 conv, KILN_CUDA_CHECK_POINTERS=1 (no parameter table yet)"; KILN_CUDA_CHECK_POINTERS=1 timeout 60 $R $D/conv.kiln $D/conv_in.npy; echo "rc=$?"
echo "== 7 softmax, KILN_CUDA_CHECK_POINTERS=1"; KILN_CUDA_CHECK_POINTERS=1 timeout 60 $R $D/softmax_sm90.kiln $D/softmax_in.npy 2>&1 | tail -3
echo "== 8 in one process: fault, broken, unload, reset, run"; timeout 120 python3 bench/gpu_fault_reload.py $D/libkiln_runtime.so $D; echo "rc=$?"

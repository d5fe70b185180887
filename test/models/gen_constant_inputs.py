#!/usr/bin/python3
"""Turns ONNX node tests whose shape-like inputs (scales, sizes, axes, ...) are fed
as data into tests where those inputs are initializers, the way exported models
carry them. Expected outputs are the ONNX suite's own. Run with /usr/bin/python3.

Usage: gen_constant_inputs.py OUT_DIR TEST_DIR... (each TEST_DIR an ONNX node test)
"""
import glob, os, sys
import onnx
from onnx import numpy_helper

out_root = sys.argv[1]
for test in sys.argv[2:]:
    model = onnx.load(os.path.join(test, "model.onnx"))
    g = model.graph
    data = sorted(glob.glob(os.path.join(test, "test_data_set_0", "input_*.pb")))
    inputs = [numpy_helper.to_array(onnx.load_tensor(p)) for p in data]
    keep, consts = [], []
    for i, vi in enumerate(g.input):
        if i == 0:
            keep.append(vi)
        else:
            consts.append(numpy_helper.from_array(inputs[i], vi.name))
    del g.input[:]
    g.input.extend(keep)
    g.initializer.extend(consts)
    name = os.path.basename(test.rstrip("/"))
    out = os.path.join(out_root, name)
    os.makedirs(os.path.join(out, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(out, "model.onnx"))
    with open(data[0], "rb") as src, open(os.path.join(out, "test_data_set_0", "input_0.pb"), "wb") as dst:
        dst.write(src.read())
    for p in glob.glob(os.path.join(test, "test_data_set_0", "output_*.pb")):
        with open(p, "rb") as src, open(os.path.join(out, "test_data_set_0", os.path.basename(p)), "wb") as dst:
            dst.write(src.read())
    print(out)

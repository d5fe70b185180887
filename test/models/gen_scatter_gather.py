#!/usr/bin/python3
"""Writes small ONNX tests for GatherND, ScatterElements, ScatterND, TopK and Einsum
cases the ONNX suite does not cover: the max/min reductions, duplicate indices,
out-of-range indices (kiln's choice, ONNX leaves them undefined: scatters skip
them, GatherND clamps them), TopK ties, integers and k at run time, Einsum with
three operands, implicit output and ellipsis. Expected outputs come from the
numpy references below. Run with /usr/bin/python3 (needs the onnx package).

Usage: gen_scatter_gather.py OUT_DIR
"""
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

rng = np.random.default_rng(7)
out_root = sys.argv[1]


def save(name, op, inputs, outputs, attrs, opset, initializers=()):
    """inputs/outputs: lists of (name, array); initializers are fed as constants."""
    node = helper.make_node(op, [n for n, _ in inputs] + [n for n, _ in initializers],
                            [n for n, _ in outputs], **attrs)
    vi = lambda n, a: helper.make_tensor_value_info(n, onnx.mapping.NP_TYPE_TO_TENSOR_TYPE[a.dtype], a.shape)
    graph = helper.make_graph([node], name, [vi(n, a) for n, a in inputs], [vi(n, a) for n, a in outputs],
                              initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    d = os.path.join(out_root, name)
    os.makedirs(os.path.join(d, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for k, (n, a) in enumerate(inputs):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", f"input_{k}.pb"))
    for k, (n, a) in enumerate(outputs):
        onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(d, "test_data_set_0", f"output_{k}.pb"))
    print(d)


COMBINE = {"none": lambda a, u: u, "add": lambda a, u: a + u, "mul": lambda a, u: a * u,
           "max": max, "min": min}


def scatter_elements(data, indices, updates, axis, reduction):
    out = data.copy()
    for pos in np.ndindex(*indices.shape):
        i = int(indices[pos])
        n = data.shape[axis]
        i = i + n if i < 0 else i
        if not 0 <= i < n:
            continue  # kiln skips out-of-range indices
        tgt = list(pos)
        tgt[axis] = i
        out[tuple(tgt)] = COMBINE[reduction](out[tuple(tgt)], updates[pos])
    return out


def scatter_nd(data, indices, updates, reduction):
    out = data.copy()
    k = indices.shape[-1]
    for pos in np.ndindex(*indices.shape[:-1]):
        coords = []
        for j in range(k):
            c = int(indices[pos + (j,)])
            c = c + data.shape[j] if c < 0 else c
            coords.append(c)
        if not all(0 <= c < data.shape[j] for j, c in enumerate(coords)):
            continue
        for tail in np.ndindex(*data.shape[k:]):
            at = tuple(coords) + tail
            out[at] = COMBINE[reduction](out[at], updates[pos + tail])
    return out


def gather_nd(data, indices):
    k = indices.shape[-1]
    out = np.zeros(indices.shape[:-1] + data.shape[k:], data.dtype)
    for pos in np.ndindex(*indices.shape[:-1]):
        coords = []
        for j in range(k):
            c = int(indices[pos + (j,)])
            c = c + data.shape[j] if c < 0 else c
            coords.append(min(max(c, 0), data.shape[j] - 1))  # kiln clamps
        out[pos] = data[tuple(coords)]
    return out


def top_k(x, k, axis, largest):
    # Stable sort: equal values keep the lower index first.
    order = np.argsort(-x if largest else x, axis=axis, kind="stable")
    idx = np.take(order, np.arange(k), axis=axis)
    return np.take_along_axis(x, idx, axis=axis), idx.astype(np.int64)


data = rng.standard_normal((3, 5)).astype(np.float32)
dup = np.array([[1, 3, 1], [0, 0, 4], [2, 2, 2]], np.int64)
upd = rng.standard_normal((3, 3)).astype(np.float32)
for red in ["max", "min", "mul"]:
    save(f"scatter_elements_{red}", "ScatterElements",
         [("data", data), ("indices", dup), ("updates", upd)],
         [("y", scatter_elements(data, dup, upd, 1, red))], {"axis": 1, "reduction": red}, 18)
bad = np.array([[7, -1], [-9, 2]], np.int64)
upd2 = rng.standard_normal((2, 2)).astype(np.float32)
save("scatter_elements_out_of_range", "ScatterElements",
     [("data", data), ("indices", bad), ("updates", upd2)],
     [("y", scatter_elements(data, bad, upd2, 1, "none"))], {"axis": 1}, 13)
# Updates smaller than data on the other axis (rows 0-1 only), int32 indices, int data.
idata = rng.integers(-50, 50, (4, 3)).astype(np.int32)
iidx = np.array([[2, 0, 1], [-1, 0, 0]], np.int32)
iupd = rng.integers(-50, 50, (2, 3)).astype(np.int32)
save("scatter_elements_partial_int", "ScatterElements",
     [("data", idata), ("indices", iidx), ("updates", iupd)],
     [("y", scatter_elements(idata, iidx, iupd, 0, "add"))], {"axis": 0, "reduction": "add"}, 16)

nd = rng.standard_normal((4, 3, 2)).astype(np.float32)
ndi = np.array([[[1], [3]], [[1], [-4]]], np.int64)
ndu = rng.standard_normal((2, 2, 3, 2)).astype(np.float32)
for red in ["max", "min"]:
    save(f"scatternd_{red}", "ScatterND", [("data", nd), ("indices", ndi), ("updates", ndu)],
         [("y", scatter_nd(nd, ndi, ndu, red))], {"reduction": red}, 18)
ndbad = np.array([[0, 5], [9, 0], [2, 1], [-1, -3]], np.int64)
ndu2 = rng.standard_normal((4, 2)).astype(np.float32)
save("scatternd_out_of_range", "ScatterND", [("data", nd), ("indices", ndbad), ("updates", ndu2)],
     [("y", scatter_nd(nd, ndbad, ndu2, "none"))], {}, 13)

gi = np.array([[[0, 7]], [[-1, -9]], [[3, 1]]], np.int64)
save("gathernd_out_of_range", "GatherND", [("data", nd), ("indices", gi)],
     [("y", gather_nd(nd, gi))], {}, 13)

ties = np.array([[3, 1, 3, 2, 1, 3], [0, 0, 0, 0, 0, 0], [5, -1, 4, 5, -1, 2]], np.float32)
for largest in [1, 0]:
    v, i = top_k(ties, 4, 1, largest)
    save(f"top_k_ties_{'largest' if largest else 'smallest'}", "TopK",
         [("x", ties), ("k", np.array([4], np.int64))], [("values", v), ("indices", i)],
         {"axis": 1, "largest": largest}, 11)
ix = rng.integers(-5, 5, (6, 3)).astype(np.int32)
v, i = top_k(ix, 6, 0, 1)
save("top_k_int_all_constant_k", "TopK", [("x", ix)], [("values", v), ("indices", i)],
     {"axis": 0, "sorted": 0}, 11, initializers=[("k", np.array([6], np.int64))])
v, i = top_k(ties, 2, 1, 1)
save("top_k_opset1", "TopK", [("x", ties)], [("values", v), ("indices", i)], {"axis": 1, "k": 2}, 1)

a = rng.standard_normal((2, 3)).astype(np.float32)
b = rng.standard_normal((3, 4)).astype(np.float32)
c = rng.standard_normal((4, 2)).astype(np.float32)
save("einsum_three_operands", "Einsum", [("a", a), ("b", b), ("c", c)],
     [("y", np.einsum("ij,jk,kl->il", a, b, c))], {"equation": "ij,jk,kl->il"}, 12)
save("einsum_implicit", "Einsum", [("a", a), ("b", b)], [("y", np.einsum("ij,jk", a, b))],
     {"equation": "ij,jk"}, 12)
e = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
f = rng.standard_normal((3, 5, 2)).astype(np.float32)
save("einsum_ellipsis_broadcast_rank", "Einsum", [("e", e), ("f", f)],
     [("y", np.einsum("...ij,...jk->...ik", e, f))], {"equation": "...ij,...jk->...ik"}, 12)
sq = rng.standard_normal((4, 4)).astype(np.float32)
save("einsum_trace", "Einsum", [("x", sq)], [("y", np.einsum("ii", sq))], {"equation": "ii"}, 12)
g = rng.standard_normal((2, 1, 4, 5)).astype(np.float32)
save("einsum_ellipsis_broadcast_one", "Einsum", [("g", g), ("f", f)],
     [("y", np.einsum("...ij,...jk->...ik", g, f))], {"equation": "...ij,...jk->...ik"}, 12)

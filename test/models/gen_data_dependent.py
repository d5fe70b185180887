#!/usr/bin/python3
"""Writes small ONNX tests whose outputs have data-dependent sizes (NonZero,
Compress, Unique, NonMaxSuppression), each with two data sets whose outputs
differ in size (one of them empty where the op allows it), to check that one
artifact returns whatever size the data decides (docs/dynamic-shapes.md).
Expected outputs come from numpy (the NonMaxSuppression reference is below).
Run with /usr/bin/python3 (needs the onnx package).

Usage: gen_data_dependent.py OUT_DIR   (kiln keeps them in test/models/data_dependent)
"""
import os, sys
import numpy as np
import onnx
from onnx import helper, numpy_helper, TensorProto

out_root = sys.argv[1]
vi = lambda n, dtype, shape: helper.make_tensor_value_info(n, dtype, shape)


def save(name, nodes, inputs, outputs, data_sets):
    """inputs/outputs: (name, TensorProto type, shape with None for a data-dependent dim);
    data_sets: lists of (input arrays, output arrays)."""
    graph = helper.make_graph(nodes, name, [vi(*i) for i in inputs], [vi(*o) for o in outputs])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    onnx.checker.check_model(model)
    d = os.path.join(out_root, name)
    os.makedirs(d, exist_ok=True)
    onnx.save(model, os.path.join(d, "model.onnx"))
    for s, (ins, outs) in enumerate(data_sets):
        sd = os.path.join(d, f"test_data_set_{s}")
        os.makedirs(sd, exist_ok=True)
        for k, ((n, _, _), a) in enumerate(zip(inputs, ins)):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(sd, f"input_{k}.pb"))
        for k, ((n, _, _), a) in enumerate(zip(outputs, outs)):
            onnx.save_tensor(numpy_helper.from_array(a, n), os.path.join(sd, f"output_{k}.pb"))
    print(d)


# NonZero and Compress on one input, results read by further ops (so their
# dynamic dims flow on): idx = NonZero(x > 0), rows = Compress(x, keep, axis 0) * 2,
# flat = Compress(x, reshape(x > 0, [-1])) (flattened).
def nonzero_compress(x, keep):
    mask = x > 0
    return [np.array(np.nonzero(mask), dtype=np.int64), np.compress(keep, x, axis=0) * 2,
            np.compress(mask.reshape(-1), x.reshape(-1))]


x0 = np.array([[1, -2, 3], [0, 5, -6], [7, 8, 9], [-1, -1, 0.5]], dtype=np.float32)
x1 = -np.abs(x0)
k0 = np.array([True, False, True, True])
k1 = np.array([False, False, False, False])
save("nonzero_compress",
     [helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.zeros((), np.float32))),
      helper.make_node("Constant", [], ["two"], value=numpy_helper.from_array(np.full((), 2, np.float32))),
      helper.make_node("Greater", ["x", "zero"], ["mask"]),
      helper.make_node("NonZero", ["mask"], ["idx"]),
      helper.make_node("Compress", ["x", "keep"], ["sel"], axis=0),
      helper.make_node("Mul", ["sel", "two"], ["rows"]),
      helper.make_node("Constant", [], ["minus1"], value=numpy_helper.from_array(np.array([-1], np.int64))),
      helper.make_node("Reshape", ["mask", "minus1"], ["mask1d"]),
      helper.make_node("Compress", ["x", "mask1d"], ["flat"])],
     [("x", TensorProto.FLOAT, [4, 3]), ("keep", TensorProto.BOOL, [4])],
     [("idx", TensorProto.INT64, [2, None]), ("rows", TensorProto.FLOAT, [None, 3]),
      ("flat", TensorProto.FLOAT, [None])],
     [([x0, k0], nonzero_compress(x0, k0)), ([x1, k1], nonzero_compress(x1, k1))])


# Unique over int64 values along an axis and flattened, sorted and in order of first occurrence.
def unique(x, axis, sorted_):
    y, idx, inv, cnt = np.unique(x, True, True, True, axis=axis)
    if not sorted_:
        order = np.argsort(idx)
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        idx, cnt, inv = idx[order], cnt[order], rank[inv]
        y = x.reshape(-1)[idx] if axis is None else np.take(x, idx, axis=axis)
    return [y, idx.astype(np.int64), inv.reshape(-1).astype(np.int64), cnt.astype(np.int64)]


u0 = np.array([[3, 1, 3], [2, 2, 1], [3, 1, 3], [0, 5, 0]], dtype=np.int64)
u1 = np.array([[4, 4, 4], [4, 4, 4], [4, 4, 4], [4, 4, 4]], dtype=np.int64)
save("unique",
     [helper.make_node("Unique", ["x"], ["y", "indices", "inverse", "counts"], axis=0, sorted=1),
      helper.make_node("Unique", ["x"], ["fy", "findices", "finverse", "fcounts"], sorted=0)],
     [("x", TensorProto.INT64, [4, 3])],
     [("y", TensorProto.INT64, [None, 3]), ("indices", TensorProto.INT64, [None]),
      ("inverse", TensorProto.INT64, [4]), ("counts", TensorProto.INT64, [None]),
      ("fy", TensorProto.INT64, [None]), ("findices", TensorProto.INT64, [None]),
      ("finverse", TensorProto.INT64, [12]), ("fcounts", TensorProto.INT64, [None])],
     [([u], unique(u, 0, True) + unique(u, None, False)) for u in (u0, u1)])


# NonMaxSuppression with the box limit and both thresholds as graph inputs.
def iou(a, b):
    ya, xa, yb, xb = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    yc, xc, yd, xd = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    area_a, area_b = (yb - ya) * (xb - xa), (yd - yc) * (xd - xc)
    inter = max(0.0, min(yb, yd) - max(ya, yc)) * max(0.0, min(xb, xd) - max(xa, xc))
    if area_a <= 0 or area_b <= 0 or inter <= 0:
        return 0.0
    return inter / (area_a + area_b - inter)


def nms(boxes, scores, max_boxes, iou_threshold, score_threshold):
    rows = []
    for b in range(scores.shape[0]):
        for c in range(scores.shape[1]):
            order = [i for i in np.argsort(-scores[b, c], kind="stable") if scores[b, c, i] > score_threshold]
            kept = []
            for i in order:
                if len(kept) == max_boxes:
                    break
                if all(iou(boxes[b, i], boxes[b, j]) <= iou_threshold for j in kept):
                    kept.append(i)
            rows += [[b, c, i] for i in kept]
    return np.array(rows, dtype=np.int64).reshape(-1, 3)


rng = np.random.default_rng(11)
corners = rng.uniform(0, 10, size=(2, 12, 2)).astype(np.float32)
sizes = rng.uniform(1, 4, size=(2, 12, 2)).astype(np.float32)
boxes = np.concatenate([corners, corners + sizes], axis=2)[:, :, [0, 1, 2, 3]]
scores = rng.uniform(0, 1, size=(2, 3, 12)).astype(np.float32)
sets = []
for m, t, s in ((5, 0.3, 0.2), (2, 0.6, 0.5)):
    ins = [boxes, scores, np.array([m], np.int64), np.array([t], np.float32), np.array([s], np.float32)]
    sets.append((ins, [nms(boxes, scores, m, t, s)]))
save("nms",
     [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_boxes", "iou", "score"], ["selected"])],
     [("boxes", TensorProto.FLOAT, [2, 12, 4]), ("scores", TensorProto.FLOAT, [2, 3, 12]),
      ("max_boxes", TensorProto.INT64, [1]), ("iou", TensorProto.FLOAT, [1]), ("score", TensorProto.FLOAT, [1])],
     [("selected", TensorProto.INT64, [None, 3])], sets)

# The thresholds omitted: IoU threshold 0 (any overlap suppresses), no score threshold.
sets = []
for m in (4, 1):
    sets.append(([boxes, scores, np.array([m], np.int64)], [nms(boxes, scores, m, 0.0, -np.inf)]))
save("nms_defaults",
     [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_boxes"], ["selected"], center_point_box=0)],
     [("boxes", TensorProto.FLOAT, [2, 12, 4]), ("scores", TensorProto.FLOAT, [2, 3, 12]),
      ("max_boxes", TensorProto.INT64, [1])],
     [("selected", TensorProto.INT64, [None, 3])], sets)

# In one process: a faulting model, the broken context, unload, then a healthy model loads (the
# runtime resets the context) and runs. Usage: gpu_fault_reload.py LIBKILN_RUNTIME_SO DIR (see gpu-fault-check.sh).
import ctypes as C, sys, numpy as np
from onnx import numpy_helper, TensorProto
lib = C.CDLL(sys.argv[1])
P = C.c_void_p
lib.kiln_error_message.restype = C.c_char_p
lib.kiln_error_message.argtypes = [P]
lib.kiln_model_load.restype = P; lib.kiln_model_load.argtypes = [C.c_char_p, P, C.POINTER(P)]
lib.kiln_session_create.restype = P; lib.kiln_session_create.argtypes = [P, C.POINTER(P)]
lib.kiln_tensor_wrap.restype = P
lib.kiln_tensor_wrap.argtypes = [C.c_int, C.POINTER(C.c_int64), C.c_size_t, P, C.c_size_t, C.POINTER(P)]
lib.kiln_session_run.restype = P; lib.kiln_session_run.argtypes = [P, C.POINTER(P), C.c_size_t, C.POINTER(P), C.c_size_t]
lib.kiln_session_destroy.argtypes = [P]; lib.kiln_model_destroy.argtypes = [P]; lib.kiln_tensor_destroy.argtypes = [P]
def err(e): return lib.kiln_error_message(e).decode() if e else "ok"
def load(path):
    m = P(); e = lib.kiln_model_load(path.encode(), None, C.byref(m)); print("load", path, ":", err(e)); return m if not e else None
def run(m, x):
    s = P(); lib.kiln_session_create(m, C.byref(s))
    shape = (C.c_int64 * x.ndim)(*x.shape); t = P()
    lib.kiln_tensor_wrap(1, shape, x.ndim, x.ctypes.data, x.nbytes, C.byref(t))
    ins = (P * 1)(t); outs = (P * 1)()
    r = []
    for i in range(2):
        e = lib.kiln_session_run(s, ins, 1, outs, 1); r.append(err(e)); print("  run", i, ":", r[-1])
        if not e: lib.kiln_tensor_destroy(outs[0])
    lib.kiln_tensor_destroy(t); lib.kiln_session_destroy(s)
t = TensorProto(); t.ParseFromString(open(sys.argv[2] + "/input_0.pb", "rb").read())
conv_in = np.ascontiguousarray(numpy_helper.to_array(t).astype(np.float32))
conv = load(sys.argv[2] + "/conv.kiln")
if conv: run(conv, conv_in)
load(sys.argv[2] + "/softmax_sm90.kiln")  # refused while the broken context is held
if conv: lib.kiln_model_destroy(conv)
sm = load(sys.argv[2] + "/softmax_sm90.kiln")  # the last user is gone: reset, then healthy
if sm:
    run(sm, np.ones((3, 4, 5), np.float32)); lib.kiln_model_destroy(sm)

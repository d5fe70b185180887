"""Threads: sessions on several Python threads at once, the GIL released while a model runs."""

import threading

import numpy as np

import kiln


def test_concurrent_sessions_give_serial_results(artifacts):
    m = kiln.load(artifacts("cnn"), threads=2)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal((2, 3, 32, 32)).astype(np.float32) for _ in range(8)]
    s = m.session()
    expected = [s.run({"image": x})["logits"] for x in inputs]
    errors, results = [], {}

    def worker(t):
        try:
            sess = m.session()  # one session per thread (kiln.h)
            for r in range(10):
                i = (t + r) % len(inputs)
                results[(t, r)] = (i, sess.run({"image": inputs[i]})["logits"])
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(results) == 40
    for i, got in results.values():
        np.testing.assert_array_equal(got, expected[i])


def test_gil_is_released_and_a_shared_session_is_busy(artifacts):
    """A second thread calling run on the same session while a long run is in progress gets
    BusyError: it could only make that call while the first was inside the model because the first
    let go of the GIL (with the GIL held, the second call would wait and then succeed)."""
    m = kiln.load(artifacts("cnn"), threads=1)
    s = m.session()
    big = np.random.default_rng(1).standard_normal((256, 3, 32, 32)).astype(np.float32)
    small = big[:1].copy()
    for attempt in range(5):
        started = threading.Event()
        outcome = {}

        def long_run():
            started.set()
            outcome["long"] = s.run({"image": big})["logits"].shape

        t = threading.Thread(target=long_run)
        t.start()
        started.wait()
        # Wait until the long run is inside the runtime (it releases the GIL there).
        threading.Event().wait(0.02)
        try:
            s.run({"image": small})
            outcome["second"] = "ran"
        except kiln.BusyError as e:
            outcome["second"] = str(e)
        t.join()
        assert outcome["long"] == (256, 10)
        if outcome["second"] != "ran":
            assert "already running" in outcome["second"] or "busy" in outcome["second"].lower()
            return
    raise AssertionError("never saw the second call reach the runtime during a long run: GIL held?")

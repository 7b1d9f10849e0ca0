"""dirigo.streams on synthesized traces (what the tracer records on the GPU: launches with their stream, ATen ops
with `_stream`, the shim's stream-sync records), on the CPU: the side-stream candidate of
tests/python/verdict_pairs/gpu/side_stream_unsynced.py is a race, side_stream_synced.py is not, and every other
way of ordering the streams (stream synchronize, device synchronize, a blocking stream) counts as ordering."""
import copy

from dirigo import streams

SIDE = 0x7F00AA00  # a pool stream's handle (non-blocking, as c10::cuda::getStreamFromPool makes them)
EV = 0x5500


def program(ops):
    return {"tensors": [{"id": "t0", "storage": "s0"}, {"id": "t1", "storage": "s1"}],
            "inputs": [{"name": "x", "tensor": "t0", "kind": "input"}],
            "outputs": [{"name": "out0", "tensor": "t1"}], "ops": ops}


EMPTY = {"kind": "aten", "name": "aten::empty_like", "overload": "default", "args": [{"tensor": "t0"}],
         "outputs": ["t1"], "mutates": [], "_stream": 0}


def kernel(stream, flags=1):
    return {"kind": "launch", "kernel": "scale_kernel", "stream": stream, "stream_flags": flags,
            "args": [{"tensor": "t0", "byte_offset": 0}, {"tensor": "t1", "byte_offset": 0}, {"scalar": 4}]}


def sync(what, stream=None, event=None):
    return {"kind": "stream-sync", "sync": what, "stream": stream, "event": event}


def race(ops, caller=0):
    ops = copy.deepcopy(ops)
    c = streams.canonicalize(ops, first=caller)
    return streams.find_race(program(ops), caller_stream=c)


UNSYNCED = [EMPTY, kernel(SIDE)]
SYNCED = [EMPTY, sync("event-record", 0, EV), sync("stream-wait-event", SIDE, EV), kernel(SIDE),
          sync("event-record", SIDE, EV), sync("stream-wait-event", 0, EV)]


def test_side_stream_without_sync_is_a_race_on_the_output():
    f = race(UNSYNCED)
    assert f["kind"] == "call-history" and f["type"] == "unsynchronized-stream"
    assert "output out0" in f["message"] and "scale_kernel" in f["message"]


def test_side_stream_with_events_both_ways_is_ordered():
    assert race(SYNCED) is None


def test_waiting_only_for_the_input_still_leaves_the_output_unordered():
    f = race([EMPTY, sync("event-record", 0, EV), sync("stream-wait-event", SIDE, EV), kernel(SIDE)])
    assert f is not None and "output out0" in f["message"]


ZERO = {"kind": "aten", "name": "aten::zero_", "overload": "default", "args": [{"tensor": "t1"}], "outputs": ["t1"],
        "mutates": ["t1"], "_stream": 0}


def test_waiting_only_for_the_result_leaves_a_main_stream_write_unordered():
    # zero_ on the main stream writes out0; the side kernel uses it without waiting for that
    f = race([EMPTY, ZERO, kernel(SIDE), sync("event-record", SIDE, EV), sync("stream-wait-event", 0, EV)])
    assert f is not None and "zero_" in f["message"]
    # an allocation alone writes nothing: no race with it
    assert race([EMPTY, kernel(SIDE), sync("event-record", SIDE, EV), sync("stream-wait-event", 0, EV)]) is None


def test_stream_synchronize_and_device_synchronize_order_the_host():
    base = [EMPTY, sync("event-record", 0, EV), sync("stream-wait-event", SIDE, EV), kernel(SIDE)]
    assert race(base + [sync("stream-synchronize", SIDE)]) is None
    assert race(base + [sync("device-synchronize")]) is None
    assert race(base + [sync("event-record", SIDE, EV + 1), sync("event-synchronize", None, EV + 1)]) is None


def test_a_blocking_stream_synchronizes_with_the_legacy_default_stream():
    assert race([EMPTY, kernel(SIDE, flags=0)]) is None
    assert race([EMPTY, kernel(SIDE, flags=-1)]) is None  # flags unknown: taken as blocking (never invents a race)


def test_one_stream_is_ordered_by_construction():
    assert race([EMPTY, kernel(0)]) is None


def test_a_second_op_on_the_main_stream_reading_the_side_result_races():
    read = {"kind": "aten", "name": "aten::add", "overload": "Tensor", "args": [{"tensor": "t1"}, {"tensor": "t0"}],
            "outputs": ["t0"], "mutates": [], "_stream": 0}
    f = race([EMPTY, sync("event-record", 0, EV), sync("stream-wait-event", SIDE, EV), kernel(SIDE), read])
    assert f is not None and "aten::add" in f["message"]


def test_canonical_numbers_do_not_depend_on_the_pool_handles():
    a, b = copy.deepcopy(SYNCED), copy.deepcopy(SYNCED)
    for op in b:  # the second trace got another pool stream and another event
        if op.get("stream") == SIDE:
            op["stream"] = SIDE + 0x1000
        if op.get("event") == EV:
            op["event"] = EV + 7
    streams.canonicalize(a, first=0)
    streams.canonicalize(b, first=0)
    assert a == b
    assert streams.strip(a) == [x for x in a if x["kind"] != "stream-sync"]
    assert all("_stream" not in op and "stream_flags" not in op for op in streams.strip(b))

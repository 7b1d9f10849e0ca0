"""Stream order of a traced CUDA program (issue 17 items 2 and 4).

The launch shim records, besides launches, the calls that order streams (`cudaEventRecord`,
`cudaStreamWaitEvent`, `cudaStreamSynchronize`, `cudaEventSynchronize`, `cudaDeviceSynchronize`) as ops of
kind "stream-sync"; the recorder notes the stream each ATen op was issued on (`_stream`). Both are consumed
here and never reach the bundle:

- `canonicalize` numbers streams and events by first appearance (the default stream stays 0), so that two
  traces of one program agree whatever handles the stream pool gave out; host issue order is already a
  valid serialization of the stream order (every wait names an event recorded earlier);
- `find_race` replays that order with vector clocks and reports the first access of one stream to a storage
  that another stream wrote (or is the only possible writer of) with no happens-before edge between them,
  including the program's outputs, which the caller reads on its own stream after `forward` returns.

Soundness: a launch's pointer arguments are "maybe written" (the trace does not know which a kernel writes).
A race is reported only when one side certainly writes (an ATen op's output or in-place argument) or when the
storage was never written before the launch (freshly allocated: its values can only come from that launch,
or it holds garbage either way). Streams whose flags were not recorded count as blocking (they synchronize
with the legacy default stream), which can only hide a race, never invent one."""
from __future__ import annotations

LEGACY = 0          # the legacy default stream (PyTorch's default `cuda_stream` is 0; handle 0x1 is the same)
PER_THREAD = 2      # cudaStreamPerThread
NON_BLOCKING = 0x1  # cudaStreamNonBlocking
SYNC_KINDS = ("event-record", "stream-wait-event", "stream-synchronize", "event-synchronize", "device-synchronize")


def _stream_of(op: dict):
    if op["kind"] == "launch":
        return op.get("stream", LEGACY)
    if op["kind"] == "stream-sync":
        return op.get("stream")
    return op.get("_stream")


def canonicalize(ops: list[dict], first: int | None = None) -> int:
    """Stream and event handles renumbered in order of first appearance, in place: 0 the legacy default
    stream (handles 0 and 1), 2 the per-thread default, 3, 4, ... the others (`first`, the caller's stream,
    numbered before any op's); events 0, 1, ... Returns the number `first` got."""
    streams = {0: LEGACY, 1: LEGACY, 2: PER_THREAD}
    if first is not None and first not in streams:
        streams[first] = 3
    events: dict = {}
    for op in ops:
        key = "stream" if op["kind"] in ("launch", "stream-sync") else "_stream"
        if op.get(key) is not None:
            h = op[key]
            if h not in streams:
                streams[h] = 3 + sum(1 for v in streams.values() if v >= 3)
            op[key] = streams[h]
        if op["kind"] == "stream-sync" and op.get("event") is not None:
            op["event"] = events.setdefault(op["event"], len(events))
    return streams.get(first, LEGACY) if first is not None else LEGACY


def strip(ops: list[dict]) -> list[dict]:
    """The ops as the bundle holds them: no stream-sync records, no `_stream` notes, no `stream_flags`."""
    out = []
    for op in ops:
        if op["kind"] == "stream-sync":
            continue
        for k in ("_stream", "stream_flags"):
            op.pop(k, None)
        out.append(op)
    return out


def _join(a: dict, b: dict) -> dict:
    out = dict(a)
    for k, v in b.items():
        if v > out.get(k, 0):
            out[k] = v
    return out


def find_race(program: dict, caller_stream: int = LEGACY) -> dict | None:
    """The first unordered conflicting access in `program` (a traced program dict whose ops still hold the
    stream-sync records and `_stream` notes), as a failure record for the trace ("call-history",
    "unsynchronized-stream"), or None. `caller_stream`: where the caller reads the outputs after forward."""
    ops = program["ops"]
    if not any(op["kind"] == "launch" and op.get("stream", LEGACY) not in (LEGACY, caller_stream) for op in ops) \
            and not any(op["kind"] == "aten" and op.get("_stream") not in (None, LEGACY, caller_stream) for op in ops):
        return None  # one stream: ordered by construction
    storage_of = {t["id"]: t["storage"] for t in program["tensors"]}
    blocking: dict = {LEGACY: True, PER_THREAD: True}
    vc: dict = {}        # stream -> vector clock (stream -> count)
    events: dict = {}    # event -> clock recorded
    host: dict = {}      # what the host has waited for
    last: dict = {}      # storage -> list of (stream, count, certain_write, what)
    written: set = set()  # storages some op certainly wrote (or an input: written before the program)
    for e in program.get("inputs", []):
        written.add(storage_of.get(e["tensor"]))

    def clock(s):
        return vc.setdefault(s, {})

    def describe(i, op):
        if op["kind"] == "launch":
            return f"kernel {op.get('kernel', '?')} (op {i})"
        return f"{op.get('name', op['kind'])}.{op.get('overload', '')} (op {i})".replace(". (", " (")

    def access(i, op, s, storages: list[tuple[str, bool]]):
        """Records the op's accesses; the first earlier access it conflicts with, unordered: (stream, what,
        storage). A conflict needs a certain write on either side, or an earlier launch on a storage nothing
        had written before it (that launch is its only possible writer)."""
        c = clock(s)
        hit = None
        for st, certain in storages:
            for (q, n, p_certain, p_sole, what) in last.get(st, []):
                if q == s or c.get(q, 0) >= n:
                    continue  # the same stream (in order), or ordered by an event wait or a synchronize
                if hit is None and (certain or p_certain or p_sole):
                    hit = (q, what, st)
        for st, certain in storages:
            sole = op["kind"] == "launch" and st not in written
            last.setdefault(st, []).append((s, c[s], certain, sole, describe(i, op)))
            if certain:
                written.add(st)
        return hit

    for i, op in enumerate(ops):
        kind = op["kind"]
        if kind == "stream-sync":
            what, s, e = op.get("sync"), op.get("stream"), op.get("event")
            if what == "event-record" and s is not None:
                events[e] = dict(clock(s))
            elif what == "stream-wait-event" and s is not None:
                vc[s] = _join(clock(s), events.get(e, {}))
            elif what == "stream-synchronize" and s is not None:
                host = _join(host, clock(s))
            elif what == "event-synchronize":
                host = _join(host, events.get(e, {}))
            elif what == "device-synchronize":
                for c in list(vc.values()):
                    host = _join(host, c)
            continue
        s = _stream_of(op)
        if kind not in ("aten", "launch", "library", "copy") or s is None:
            continue
        if kind == "launch" and "stream_flags" in op and op["stream_flags"] is not None and op["stream_flags"] >= 0:
            blocking[s] = not (op["stream_flags"] & NON_BLOCKING)
        # the legacy default stream waits for every blocking stream, and they for it
        if s == LEGACY:
            for q, c in list(vc.items()):
                if q != LEGACY and blocking.get(q, True):
                    vc[LEGACY] = _join(clock(LEGACY), c)
        elif blocking.get(s, True):
            vc[s] = _join(clock(s), clock(LEGACY))
        vc[s] = _join(clock(s), host)
        vc[s][s] = vc[s].get(s, 0) + 1
        if kind == "aten":
            reads = [(storage_of.get(a["tensor"]), False) for a in _tensor_args(op)]
            outs = [] if op.get("name") in ALLOCATE_ONLY else op.get("outputs", [])  # views write nothing either
            if op.get("name") in ALLOCATE_ONLY or _is_view(op):
                reads = []
            writes = [(storage_of.get(t), True) for t in outs + op.get("mutates", [])]
            acc = [x for x in writes if x[0]] + [x for x in reads if x[0] and x[0] not in {w[0] for w in writes}]
        else:
            acc = [(storage_of.get(a["tensor"]), False) for a in _tensor_args(op)]
            acc = [x for x in acc if x[0]]
        hit = access(i, op, s, acc)
        if hit:
            q, what, st = hit
            return _failure(f"{describe(i, op)} on stream {s} uses storage {st}, which {what} on stream {q} "
                            f"writes, with no event wait or synchronize ordering the two")
    # the caller reads every output on its own stream once forward returns
    sink = dict(_join(clock(caller_stream), host))
    if caller_stream == LEGACY:
        for q, c in vc.items():
            if q != LEGACY and blocking.get(q, True):
                sink = _join(sink, c)
    for o in program.get("outputs", []):
        st = storage_of.get(o["tensor"])
        for (q, n, certain, sole, what) in last.get(st, []):
            if q == caller_stream or sink.get(q, 0) >= n:
                continue
            if certain or sole:
                return _failure(f"output {o['name']} is written by {what} on stream {q}, and forward returns "
                                f"it to the caller's stream {caller_stream} without an event wait or synchronize: "
                                f"the caller can read it before the kernel finished")
    return None


# ATen ops that allocate without writing (the caching allocator hands out memory; no kernel runs)
ALLOCATE_ONLY = {"aten::empty", "aten::empty_like", "aten::empty_strided", "aten::new_empty",
                 "aten::new_empty_strided", "aten::empty.memory_format"}


def _is_view(op: dict) -> bool:
    """An op whose output aliases its input (schema `Tensor(a) self -> Tensor(a)`): metadata only."""
    sch = op.get("schema", "")
    return "-> Tensor(a" in sch and "!" not in sch.split("->")[0]


def _tensor_args(op: dict) -> list[dict]:
    out = []

    def walk(a):
        if isinstance(a, dict):
            if "tensor" in a:
                out.append(a)
            for v in a.get("list", []) if isinstance(a.get("list"), list) else []:
                walk(v)
    for a in op.get("args", []):
        walk(a)
    for a in (op.get("kwargs") or {}).values():
        walk(a)
    return out


def _failure(sentence: str) -> dict:
    return {"kind": "call-history", "type": "unsynchronized-stream",
            "message": f"the candidate uses a side stream without synchronizing: {sentence}", "where": "",
            "phase": "across streams"}

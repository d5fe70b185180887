"""Per-kernel profiles of a run (``session.run(feeds, profile=True)``), from the C API's
``kiln_session_profile`` events."""

from typing import List, NamedTuple, Sequence, Tuple


class ProfileEvent(NamedTuple):
    """One kernel launch. Times in microseconds from the start of the run; ``flops`` and
    ``bytes`` are the compiler's estimates for the launch (0: unknown; see docs/runtime.md)."""
    kernel: str
    nodes: str
    start_us: float
    duration_us: float
    work_items: int
    flops: int
    bytes: int


class KernelStat(NamedTuple):
    """One kernel's launches added up: its share of the run and the bandwidth it achieved."""
    kernel: str
    nodes: str
    calls: int
    time_us: float
    bytes: int
    gb_per_s: float
    gflop_per_s: float


class Profile:
    """The kernel launches of one profiled run. ``events`` in launch order; :meth:`table` per
    kernel, costliest first; ``str(profile)`` prints that table."""

    def __init__(self, kernels: Sequence[Tuple[str, str]], rows: Sequence[tuple]):
        self.events: List[ProfileEvent] = []
        for kernel_id, start, duration, work, flops, nbytes in rows:
            name, nodes = kernels[kernel_id] if 0 <= kernel_id < len(kernels) else (f"#{kernel_id}", "")
            self.events.append(ProfileEvent(name, nodes, start, duration, work, flops, nbytes))

    @property
    def total_us(self) -> float:
        """Time spent in kernels (the sum of their durations)."""
        return sum(e.duration_us for e in self.events)

    def table(self) -> List[KernelStat]:
        acc = {}
        for e in self.events:
            calls, time_us, nbytes, flops = acc.get((e.kernel, e.nodes), (0, 0.0, 0, 0))
            acc[(e.kernel, e.nodes)] = (calls + 1, time_us + e.duration_us, nbytes + e.bytes, flops + e.flops)
        rows = []
        for (kernel, nodes), (calls, time_us, nbytes, flops) in acc.items():
            # bytes per microsecond / 1e3 = GB/s; flops per microsecond / 1e3 = GFLOP/s.
            gbs = nbytes / time_us / 1e3 if time_us > 0 else 0.0
            gfs = flops / time_us / 1e3 if time_us > 0 else 0.0
            rows.append(KernelStat(kernel, nodes, calls, time_us, nbytes, gbs, gfs))
        rows.sort(key=lambda r: r.time_us, reverse=True)
        return rows

    def __str__(self) -> str:
        lines = [f"{'kernel':<40} {'calls':>5} {'time us':>10} {'GB/s':>8} {'GFLOP/s':>8}  ONNX nodes"]
        for r in self.table():
            lines.append(f"{r.kernel[:40]:<40} {r.calls:>5} {r.time_us:>10.1f} {r.gb_per_s:>8.2f} "
                         f"{r.gflop_per_s:>8.2f}  {r.nodes}")
        lines.append(f"{'total':<40} {len(self.events):>5} {self.total_us:>10.1f}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<kiln.Profile {len(self.events)} launches, {self.total_us:.1f} us>"

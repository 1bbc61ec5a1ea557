"""TCP Small Queues against this machine's kernel (docs/tcp.md "TCP Small Queues").

scripts/tsq-kernel.py puts one kernel CUBIC flow through a veth pair with a 10 Mbit/s tbf on
the sender and samples the tbf's backlog; wirelab runs the same topology
(scenarios/tsq/tbf-veth.toml). With TSQ both hold about the TSQ limit in the sender's own
qdisc (medians over 1-6 s: kernel 112-119 kB, wirelab 115 kB); without TSQ wirelab's backlog
follows the window (~240 kB median, ~400 kB peak, still growing). Needs root and network namespaces (CI has them); skipped
elsewhere with the reason.
"""
import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("tsq_kernel", ROOT / "scripts" / "tsq-kernel.py")
tsq_kernel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tsq_kernel)

_why = tsq_kernel.missing()
pytestmark = pytest.mark.skipif(_why is not None, reason=f"kernel TSQ comparison: {_why}")


def test_kernel_and_wirelab_hold_about_the_tsq_limit_in_the_senders_tbf():
    seconds = 6
    try:
        tsq_kernel.setup(None, None)
        kernel = tsq_kernel.summary(tsq_kernel.sample_kernel(seconds))
    finally:
        tsq_kernel.teardown()
    wl = tsq_kernel.summary(tsq_kernel.run_wirelab([sys.executable, "-m", "wirelab"], seconds, None))
    k, w = kernel["backlog_b_median"], wl["backlog_b_median"]
    # The kernel is the oracle: TSQ keeps its tbf far below the window and the 400-ms tbf limit.
    assert kernel["samples"] >= 10 and 20_000 < k < 200_000, kernel
    assert kernel["drops"] == 0 and wl["drops"] == 0, (kernel, wl)
    # wirelab within a factor of 1.3 of the kernel, median and peak (measured 0.93-1.06
    # since wirelab's tbf re-charges the segments of GSO skbs above its max_size as
    # tbf_segment() does; 1.2-1.45 before; docs/tcp.md). Without TSQ wirelab's backlog
    # follows the window: 2.1x and 2.6x here.
    print("kernel", kernel, "wirelab", wl)
    assert k / 1.3 < w < k * 1.3, (kernel, wl)
    assert wl["backlog_b_max"] < 1.3 * kernel["backlog_b_max"], (kernel, wl)

"""The shared-memory channels' bursts (rts ChanNotify and ChanDrain, the runtime model's Notify
and Drain terms): a producer notifies a consumer that found its channel empty (it sets the
channel's ready bit), and the consumer drains every channel whose bit it takes, or re-sets
itself.  So every notification is followed by a drain, except those still pending when the run
ended (at most one per channel: the next needs a drain first), and a drain takes at least one
buffer unless it answers a notification whose buffers an earlier drain took (made late, at the
producer's fenced second look)."""

import pytest
from rt_helpers import rt_workload_rts


def _run(cmake_build, tmp_path, pes, workers, agg):
    return rt_workload_rts(
        cmake_build,
        tmp_path / f"b{pes}-{workers}-{agg}.json",
        [pes, 300000, 30000, 16, 0],
        MPROF_WORKERS=workers,
        MPROF_AGG_BYTES=agg,
    )


@pytest.mark.parametrize("pes,workers,agg", [(2, 2, 0), (2, 2, 4096), (16, 16, 0), (16, 2, 0)])
def test_bursts_are_bounded_by_buffers_and_by_each_other(cmake_build, tmp_path, pes, workers, agg):
    per_pe = _run(cmake_build, tmp_path, pes, workers, agg)
    total = {k: sum(s[k] for s in per_pe) for k in per_pe[0]}
    buffers = total["MsgSent"] + total["FastMsgSent"] + total["FlowMsgSent"]
    assert total["RemoteOp"] == 45000 * pes
    assert 0 < total["ChanDrain"] <= buffers + total["ChanNotify"], total
    # at most one notification pending per channel: messages and returns, each ordered pair
    assert 0 < total["ChanNotify"] <= total["ChanDrain"] + 2 * pes * (pes - 1), total
    if workers == pes:
        # a thread each: every PE both sends and receives, so each notifies and drains
        assert all(s["ChanNotify"] > 0 and s["ChanDrain"] > 0 for s in per_pe), per_pe


def test_one_pe_has_no_channel_traffic(cmake_build, tmp_path):
    (only,) = _run(cmake_build, tmp_path, 1, 1, 0)
    assert only["ChanNotify"] == only["ChanDrain"] == 0 and only["ThreadDisp"] > 0

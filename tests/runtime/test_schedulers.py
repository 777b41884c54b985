"""Schedulers: urgent before FIFO, FIFO order, preemptive fibers inside the enabling fiber,
custom deposit/select schedulers, round-robin between FIFO and custom, the Sched statistic."""

import pytest


def order_of(run):
    return run.stdout.split("order=")[1].split()[0]


def test_urgent_fifo_and_preemptive_order(rt):
    run = rt.run("schedulers", "builtin")
    # urgent 1,2 before FIFO a,b,c; x (urgent, enabled by a) before b; p runs inside a's
    # mp_spawn "(p)", q inside a's mp_counter_add "[q]"
    assert order_of(run) == "12a(p)[q]xbc"
    assert run.pe_stats(0)["Sched"] == 0


def test_block_until_inside_a_fifo_batch_keeps_the_rest_in_order(rt):
    # pe_main resumes right after b; c and d, queued before it resumed, still run before e
    assert order_of(rt.run("schedulers", "block")) == "abMcde"


def test_block_until_resumes_when_the_target_is_reached_not_before(rt):
    # b and d add 1 each (the counter changes, short of 3), f sets it to 3: pe_main resumes
    # right after f, and g, queued before pe_main blocked, runs after it
    assert order_of(rt.run("schedulers", "block-target")) == "abcdefMg"


@pytest.mark.parametrize(
    "scenario, expected",
    [("lifo", "54321"), ("prio", "9654321"), ("rr", "uaAbBcC")],
    ids=["custom-lifo", "custom-priority", "round-robin-fifo-custom"],
)
def test_custom_schedulers(rt, scenario, expected):
    run = rt.run("schedulers", scenario)
    assert order_of(run) == expected
    assert run.pe_stats(0)["Sched"] == 3  # three custom schedulers registered

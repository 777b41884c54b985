"""OTF2 traces (MPROF_TRACE, docs/tracing.md) as Chrome / Perfetto trace JSON.

The Trace Event Format's JSON object form, which ui.perfetto.dev, chrome://tracing and
Perfetto's trace processor open:

    process per OTF2 location group   ("process 0 on <host>"; one per rank under MPI)
    thread (track) per PE               tid = PE number, named "PE n"
    slice ("X") per region visit        name = access category (`pipe:produce`), `idle`, or
                                        the program (the PE's whole run, around the rest);
                                        cat "access", "idle" or "run"; preemptive fibers nest
    flow ("s" -> "f") per remote        from the invoking fiber at the send to the moment the
      invocation                        receiving PE turns the record into a fiber (paired in
                                        order per sender and receiver, as OTF2 readers pair
                                        MPI_SEND with MPI_RECV); args: bytes
    counter ("C") per metric sample     "PE n <module>" with one series per statistic; metric
                                        members in mode ABSOLUTE (the run's settings) become
                                        "PE n settings"

Timestamps are microseconds since the trace's global offset (its first timestamp), the unit
the format prescribes, with the archive's clock offsets applied (the OTF2 reader does that:
under MPI every rank's events are on rank 0's clock); `displayTimeUnit` is "ns"."""

from __future__ import annotations

import collections
import contextlib
import json
import os
import sys
from pathlib import Path

from ..errors import MprofError
from ..files import note_input, write_file


def _otf2():
    try:
        import otf2
    except ImportError:
        raise MprofError(
            "the OTF2 Python reader is not installed: pip install otf2 "
            "(scripts/bootstrap.sh installs it into .venv)"
        ) from None
    return otf2


def _anchor(archive: Path) -> Path:
    """The anchor file of an archive named by it or by its folder (MPROF_TRACE=DIR)."""
    return archive / "traces.otf2" if archive.is_dir() else archive


def convert(archive: str | Path) -> dict:
    """The trace `archive` (DIR/traces.otf2, or DIR) as a Chrome trace JSON object."""
    otf2 = _otf2()
    path = _anchor(Path(archive))
    if not path.is_file():
        raise MprofError(
            f"{archive}: no OTF2 archive (expected DIR/traces.otf2 as written by MPROF_TRACE=DIR)"
        )
    if path.suffix != ".otf2":
        raise MprofError(f"{archive}: not an OTF2 archive (the anchor file ends in .otf2)")
    with _library_messages() as messages:
        try:
            with otf2.reader.open(str(path)) as trace:
                return _convert(otf2, trace)
        except MprofError as exc:  # a location's events that do not nest: name the archive
            raise MprofError(f"{path}: {exc}") from None
        except Exception as exc:  # the OTF2 library reports damaged archives as its own errors
            why = next(
                (line.split("error: ", 1)[-1] for line in messages() if "error:" in line), str(exc)
            )
            raise MprofError(f"{path}: cannot read the OTF2 archive: {why}") from None


@contextlib.contextmanager
def _library_messages():
    """The OTF2 library prints its errors on file descriptor 2; collect them instead, so that
    a damaged archive gives one `mprof:` message (yields a function returning the lines)."""
    import tempfile

    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):  # no real stderr (embedded use): leave it alone
        yield lambda: []
        return
    with tempfile.TemporaryFile(mode="w+") as sink:
        os.dup2(sink.fileno(), 2)
        try:
            yield lambda: (sink.seek(0), sink.read().splitlines())[1]
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def _convert(otf2, trace) -> dict:
    defs = trace.definitions
    clock = defs.clock_properties
    resolution = float(clock.timer_resolution)
    origin = clock.global_offset

    def us(t: int) -> float:
        return (t - origin) * 1e6 / resolution

    groups: dict[str, int] = {}
    track: dict[str, tuple[int, int]] = {}  # location name -> (pid, tid)
    events: list[dict] = []
    hosts = {}
    for loc in sorted(defs.locations, key=lambda location: location._ref):
        group = loc.group
        node = group.system_tree_parent
        name = group.name
        if node is not None and node.class_name == "node":  # the host it ran on
            name = f"{group.name} on {node.name}"
            hosts[group.name] = node.name
        pid = groups.setdefault(name, len(groups))
        track[loc.name] = (pid, int(loc._ref))
    for name, pid in groups.items():
        events.append(
            {"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}}
        )
        events.append(
            {
                "ph": "M",
                "name": "process_sort_index",
                "pid": pid,
                "tid": 0,
                "args": {"sort_index": pid},
            }
        )
    for name, (pid, tid) in track.items():
        events.append(
            {"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}}
        )
        events.append(
            {
                "ph": "M",
                "name": "thread_sort_index",
                "pid": pid,
                "tid": tid,
                "args": {"sort_index": tid},
            }
        )
    by_rank = {tid: (pid, tid) for pid, tid in track.values()}

    stacks: dict[str, list] = collections.defaultdict(list)
    sends: dict[tuple[int, int], list] = collections.defaultdict(list)
    recvs: dict[tuple[int, int], list] = collections.defaultdict(list)
    for loc, ev in trace.events:
        pid, tid = track[loc.name]
        if isinstance(ev, otf2.events.Enter):
            stacks[loc.name].append((ev.region.name, ev.time))
        elif isinstance(ev, otf2.events.Leave):
            if not stacks[loc.name]:
                raise MprofError(f"{loc.name}: Leave of {ev.region.name} without Enter")
            name, t0 = stacks[loc.name].pop()
            events.append(
                {
                    "ph": "X",
                    "name": name,
                    "cat": _category(ev.region),
                    "pid": pid,
                    "tid": tid,
                    "ts": us(t0),
                    "dur": (ev.time - t0) * 1e6 / resolution,
                }
            )
        elif isinstance(ev, otf2.events.MpiSend):
            sends[(tid, int(ev.receiver))].append((ev.time, int(ev.msg_length)))
        elif isinstance(ev, otf2.events.MpiRecv):
            recvs[(int(ev.sender), tid)].append((ev.time, int(ev.msg_length)))
        elif isinstance(ev, otf2.events.Metric):
            series: dict[str, dict] = {}
            for member, value in zip(ev.metric.members, ev.values):
                module, _, stat = member.name.rpartition("::")
                absolute = member.metric_mode in (
                    otf2.MetricMode.ABSOLUTE_POINT,
                    otf2.MetricMode.ABSOLUTE_LAST,
                    otf2.MetricMode.ABSOLUTE_NEXT,
                )
                label = "settings" if absolute else (module or member.name)
                series.setdefault(label, {})[stat or member.name] = value
            for label, values in series.items():
                events.append(
                    {
                        "ph": "C",
                        "name": f"{loc.name} {label}",
                        "pid": pid,
                        "tid": tid,
                        "ts": us(ev.time),
                        "args": values,
                    }
                )
    for name, stack in stacks.items():
        if stack:
            raise MprofError(f"{name}: {len(stack)} region(s) entered and never left")

    flow = 0
    unmatched = 0
    for (src, dst), out in sorted(sends.items()):
        back = recvs.get((src, dst), [])
        unmatched += abs(len(out) - len(back))
        if src not in by_rank or dst not in by_rank:
            continue
        for (t_send, size), (t_recv, _) in zip(out, back):
            flow += 1
            spid, stid = by_rank[src]
            rpid, rtid = by_rank[dst]
            common = {"name": "remote invocation", "cat": "invoke", "id": flow}
            events.append(
                {
                    "ph": "s",
                    **common,
                    "pid": spid,
                    "tid": stid,
                    "ts": us(t_send),
                    "args": {"bytes": size},
                }
            )
            events.append(
                {"ph": "f", "bp": "e", **common, "pid": rpid, "tid": rtid, "ts": us(t_recv)}
            )
    events.sort(key=lambda e: (e.get("ts", -1.0), 0 if e["ph"] != "f" else 1))
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "source": "mprof trace convert",
            "timer_resolution": int(resolution),
            "hosts": sorted(set(hosts.values())),
            "global_offset": int(origin),
            "remote_invocations": flow,
            "unmatched_messages": unmatched,
        },
    }


def _category(region) -> str:
    """`idle`, `access` (an access category's region) or `run` (the PE's root region, named
    after the program: pe_main's code and the runtime between fibers)."""
    if region.name == "idle":
        return "idle"
    return "access" if region.description == "mprof access category" else "run"


def _note_archive(archive: Path) -> None:
    """Every file of an OTF2 archive as an input of the command (mprof.files): the anchor
    DIR/NAME.otf2, the global definitions DIR/NAME.def and the per-location files under
    DIR/NAME/, which the reader opens only later, one by one."""
    anchor = _anchor(archive)
    note_input(anchor)
    note_input(anchor.with_suffix(".def"))
    locations = anchor.with_suffix("")
    if locations.is_dir():
        for file in sorted(locations.rglob("*")):
            note_input(file)


def write(archive: str | Path, output: str | Path | None) -> dict:
    """Convert and write (to standard output when `output` is None); returns the JSON."""
    _note_archive(Path(archive))  # the output must replace no file of the trace
    data = convert(archive)
    text = json.dumps(data, separators=(",", ":")) + "\n"
    if output is None:
        sys.stdout.write(text)
        return data
    write_file(output, text, what="trace")
    return data

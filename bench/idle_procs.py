"""What the processes of the running service cost while idle, from /proc.

For `python -m bench.idle` (bench/idle.py). Every figure is a difference of
two readings of the same process, over the measured window:

- CPU: utime+stime of /proc/<pid>/stat (every thread, exited ones too, but
  in clock ticks: 10 ms here, too coarse for a process meant to use a few
  milliseconds a minute), and the sum of each live thread's run time from
  /proc/<pid>/task/<tid>/schedstat (nanoseconds). Both are reported; the
  targets are judged on the finer one, which equals the other whenever no
  thread started or ended in the window.
- Wake-ups: voluntary + involuntary context switches, summed over the live
  threads (/proc/<pid>/task/<tid>/status): a thread that sleeps and is woken
  counts one. Kept per thread too, to see which one wakes.
- Memory: Pss and Rss of /proc/<pid>/smaps_rollup at the end. PSS splits a
  page shared by n processes into n parts, so the sum over the service's
  processes is what the service costs the machine.
"""

import os
from dataclasses import dataclass, field

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _status_fields(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def _stat_fields(pid: int | str, tid: int | str | None = None) -> list[str]:
    path = f"/proc/{pid}/stat" if tid is None else f"/proc/{pid}/task/{tid}/stat"
    stat = _read(path)
    # The command name (field 2) may hold spaces and parentheses: split after it.
    return stat[stat.rindex(")") + 2 :].split()


def children(pid: int) -> list[int]:
    """Live child processes of `pid`, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fields = _stat_fields(entry)
        except (OSError, ValueError):
            continue  # exited while we looked
        if int(fields[1]) == pid and fields[0] != "Z":
            found.append(int(entry))
    return sorted(found)


def descendants(pid: int) -> list[int]:
    """`pid`'s children, their children, and so on (not `pid` itself)."""
    found, todo = [], [pid]
    while todo:
        for child in children(todo.pop()):
            found.append(child)
            todo.append(child)
    return sorted(found)


@dataclass
class ThreadSample:
    name: str
    run_ns: int
    switches: int


@dataclass
class Sample:
    ticks_s: float  # utime + stime of the whole process, tick resolution
    threads: dict[int, ThreadSample] = field(default_factory=dict)

    @property
    def run_s(self) -> float:
        return sum(t.run_ns for t in self.threads.values()) / 1e9

    @property
    def switches(self) -> int:
        return sum(t.switches for t in self.threads.values())


def sample(pid: int) -> Sample:
    """One reading of `pid`; raises ProcessLookupError if it is gone."""
    try:
        fields = _stat_fields(pid)
        tids = os.listdir(f"/proc/{pid}/task")
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessLookupError(pid) from None
    reading = Sample((int(fields[11]) + int(fields[12])) / CLOCK_TICKS)  # fields 14 and 15 of proc(5)
    for tid in tids:
        base = f"/proc/{pid}/task/{tid}"
        try:
            run_ns = int(_read(f"{base}/schedstat").split()[0])
            status = _status_fields(_read(f"{base}/status"))
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread exited between listing and reading
        switches = int(status["voluntary_ctxt_switches"]) + int(status["nonvoluntary_ctxt_switches"])
        reading.threads[int(tid)] = ThreadSample(status["Name"].strip(), run_ns, switches)
    return reading


def memory_kb(pid: int) -> dict[str, int]:
    """Pss and Rss of `pid` in kB (smaps_rollup; Linux >= 4.14)."""
    try:
        fields = _status_fields(_read(f"/proc/{pid}/smaps_rollup"))
    except (FileNotFoundError, ProcessLookupError):
        raise ProcessLookupError(pid) from None
    return {key.lower(): int(fields[key].split()[0]) for key in ("Pss", "Rss") if key in fields}


def delta(before: Sample, after: Sample, seconds: float) -> dict:
    """CPU and wake-ups of one process over `seconds`, and of each thread."""
    threads = []
    for tid, thread in sorted(after.threads.items()):
        start = before.threads.get(tid)
        run_ns = thread.run_ns - (start.run_ns if start else 0)
        switches = thread.switches - (start.switches if start else 0)
        threads.append(
            {
                "tid": tid,
                "name": thread.name,
                "new": start is None,
                "cpu_ms": run_ns / 1e6,
                "wakeups_per_s": switches / seconds,
            }
        )
    gone = [tid for tid in before.threads if tid not in after.threads]
    run_s = sum(t["cpu_ms"] for t in threads) / 1000
    return {
        "cpu_percent": 100.0 * run_s / seconds,
        "cpu_ticks_percent": 100.0 * (after.ticks_s - before.ticks_s) / seconds,
        "cpu_ms": run_s * 1000,
        "wakeups_per_s": sum(t["wakeups_per_s"] for t in threads),
        "threads": threads,
        "threads_ended": len(gone),
    }

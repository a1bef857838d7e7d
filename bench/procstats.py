"""What a process costs, read from /proc (Linux only; no extra dependency).

- CPU: /proc/<pid>/stat utime+stime counts every thread, also exited ones,
  but in clock ticks (10 ms here): fine for seconds of work, useless for an
  idle process that should use ~10 ms in 10 s. So idle CPU is measured from
  each live thread's /proc/<pid>/task/<tid>/schedstat, in nanoseconds.
- Wake-ups: every time a thread sleeps and is woken again it does one
  voluntary context switch; preemptions are the nonvoluntary ones. Both are
  summed over all threads, since our daemon's waits happen in its worker
  thread while the main thread waits for signals.
- Memory: VmRSS of the process.
"""

import os
from dataclasses import dataclass

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Sample:
    cpu_ticks_s: float  # utime + stime, all threads, tick resolution
    cpu_run_s: float  # sum of live threads' run time, ns resolution
    context_switches: int  # voluntary + nonvoluntary, all live threads
    rss_kb: int


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


def _status_fields(text: str) -> dict[str, str]:
    return dict(line.split(":", 1) for line in text.splitlines() if ":" in line)


def sample(pid: int) -> Sample:
    """One reading of `pid`; raises ProcessLookupError if it is gone."""
    try:
        stat = _read(f"/proc/{pid}/stat")
        status = _status_fields(_read(f"/proc/{pid}/status"))
    except FileNotFoundError:
        raise ProcessLookupError(pid) from None
    # The command name (field 2) may hold spaces and parentheses: split after it.
    fields = stat[stat.rindex(")") + 2 :].split()
    utime, stime = int(fields[11]), int(fields[12])  # fields 14 and 15 of proc(5)
    run_ns = switches = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            run_ns += int(_read(f"/proc/{pid}/task/{tid}/schedstat").split()[0])
            task = _status_fields(_read(f"/proc/{pid}/task/{tid}/status"))
        except (FileNotFoundError, ProcessLookupError):
            continue  # the thread exited between listing and reading
        switches += int(task["voluntary_ctxt_switches"]) + int(task["nonvoluntary_ctxt_switches"])
    rss_kb = int(status.get("VmRSS", "0 kB").split()[0])
    return Sample((utime + stime) / CLOCK_TICKS, run_ns / 1e9, switches, rss_kb)


def idle_figures(before: Sample, after: Sample, seconds: float) -> dict[str, float]:
    """CPU % of one core, wake-ups per second and RSS over a window of `seconds`."""
    return {
        "cpu_percent": 100.0 * (after.cpu_run_s - before.cpu_run_s) / seconds,
        "wakeups_per_s": (after.context_switches - before.context_switches) / seconds,
        "rss_mb": after.rss_kb / 1024,
    }

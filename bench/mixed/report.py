"""The mixed benchmark's tables and its target: expiry lateness p99 under web load."""

from bench import report as expiry_report

TARGET_P99_MS = 5.0
DATABASES = ("sqlite", "postgresql")


def check_target(vendor: str, result: dict) -> dict:
    name = f"{vendor}: expiry lateness p99 under web load <= {TARGET_P99_MS:g} ms"
    late = result.get("lateness", {}).get("all", {})
    p99 = late.get("lateness", {}).get("p99_ms")
    if "error" in result or p99 is None:
        return {"target": name, "measured": None, "status": "not measured"}
    ok = p99 <= TARGET_P99_MS and late["not_expired"] == 0 and result["web"]["failed"] == 0
    return {"target": name, "measured": round(p99, 3), "status": "met" if ok else "MISSED"}


def build(meta: dict, plan: dict, databases: dict) -> dict:
    targets = [check_target(v, r) for v, r in databases.items()]
    return {"meta": meta, "plan": plan, "databases": databases, "targets": targets}


def _ms(value) -> str:
    return "-" if value is None else f"{value:.2f}"


def render(full: dict) -> str:
    meta, plan = full["meta"], full["plan"]
    lines = [
        "MIXED: expiry lateness while gunicorn serves downloads and creates shares",
        f"  {meta.get('command', '')}",
        f"  commit {meta.get('git_commit', '?')}, {meta.get('cpu', '?')}, load average "
        f"{_load(meta.get('load_average_start'))} at start, {_load(meta.get('load_average_end'))} at end",
        f"  gunicorn {plan['workers']} workers x {plan['threads']} threads; wrk {plan['connections']} connections, "
        f"{plan['create_fraction']:.0%} POST /api/shares/ (lifetime {plan['created_lifetime_s']} s), "
        f"the rest GET /s/<token> (100 B); {plan['due_per_s']:,} seeded shares/s due for {plan['seconds']} s",
    ]
    if meta.get("daemon_env"):
        lines.append(f"  the daemon's environment adds: {' '.join(meta['daemon_env'])}")
    if meta.get("profiled"):
        lines.append(
            "  PROFILED: py-spy paused the daemon to sample it; its lateness is a little worse than unprofiled"
        )
    lines.append("")
    header = (
        f"  {'database':<11}{'req/s':>8}{'creates/s':>10}{'failed':>7}{'shares':>8}"
        f"{'p50 ms':>8}{'p99 ms':>8}{'p99.9 ms':>9}{'max ms':>8}{'not exp.':>9}{'daemon CPU':>11}"
    )
    lines += [header]
    for vendor, result in full["databases"].items():
        if "error" in result:
            lines.append(f"  {vendor:<11}error: {result['error']}")
            continue
        web, late = result["web"], result["lateness"]["all"]
        q = late["lateness"]
        lines.append(
            f"  {vendor:<11}{web['req_per_s']:>8.0f}{result['creates_per_s']:>10.0f}{web['failed']:>7}"
            f"{late['due']:>8}{_ms(q['p50_ms']):>8}{_ms(q['p99_ms']):>8}{_ms(q['p999_ms']):>9}{_ms(q['max_ms']):>8}"
            f"{late['not_expired']:>9}{result['daemon']['cpu_percent']:>10.1f}%"
            f"{result['daemon'].get('run_delay_percent', float('nan')):>12.1f}%"
        )
    lines += [
        "",
        "  where the lateness is (p50 / p99 / max ms): decided = ended_at - expires_at, write = commit - ended_at",
    ]
    for vendor, result in full["databases"].items():
        if "error" in result:
            continue
        for source in ("seeded", "created"):
            part = result["lateness"][source]
            if not part["due"]:
                continue
            cells = "   ".join(
                f"{what} {_ms(part[what]['p50_ms'])} / {_ms(part[what]['p99_ms'])} / {_ms(part[what]['max_ms'])}"
                for what in ("lateness", "decided", "write")
            )
            lines.append(f"  {vendor:<11}{source:<8}{part['due']:>7}  {cells}")
        if result.get("headroom_s", 1) < 0:
            lines.append(
                f"  {vendor:<11}WARNING: the daemon was ready {-result['headroom_s']:.2f} s after the first deadline"
            )
    for vendor, result in full["databases"].items():
        waits = result.get("pg_waits")
        if waits and waits.get("active"):
            every = f"{waits['samples']} samples every {waits['interval_s'] * 1000:g} ms"
            lines += ["", f"  {vendor}: pg_stat_activity, {every}, backends running a statement:"]
            for app, rows in waits["active"].items():
                for row in rows[:6]:
                    lines.append(f"    {app:<22}{row['samples']:>6}  {row['wait']:<28}{row['query']}")
        profile = result.get("profile")
        if profile and profile.get("categories"):
            lines += ["", f"  {vendor}: py-spy on the daemon ({profile['samples']} samples of its expiry thread):"]
            for name, share in profile["categories"].items():
                lines.append(f"    {name:<48}{share:>6.1f} %")
    lines += ["", "TARGETS"]
    for t in full["targets"]:
        measured = "-" if t["measured"] is None else f"{t['measured']:.2f} ms"
        lines.append(f"  {t['status']:<13}{t['target']}: {measured}")
    return "\n".join(lines)


def _load(value) -> str:
    return "?" if not value else " ".join(f"{x:.2f}" for x in value)


machine = expiry_report.machine
write_json = expiry_report.write_json

"""The web load of the mixed run: one wrk at N connections, each thread
alternating GET /s/<token> (100 B, one hot link, as bench.web's
download_small) and POST /api/shares/ (as its api_create) in the plan's
proportion. The two requests are formatted once per thread; per request the
Lua only picks one.
"""

import json
from pathlib import Path

from bench.web import load

SCRIPT = (
    r"""
local fraction = tonumber(os.getenv("BENCH_CREATE_FRACTION"))
local n = 0
local download, create

init = function(args)
  download = wrk.format("GET", os.getenv("BENCH_DOWNLOAD_PATH"), {})
  create = wrk.format("POST", "/api/shares/", {
    ["Authorization"] = "Token " .. os.getenv("BENCH_TOKEN"),
    ["Content-Type"] = "application/json",
  }, os.getenv("BENCH_CREATE_BODY"))
end

-- A create whenever n * fraction passes a whole number: evenly interleaved.
request = function()
  n = n + 1
  if math.floor(n * fraction) ~= math.floor((n - 1) * fraction) then return create end
  return download
end
"""
    + load.DONE
)


def write_script(workdir: Path) -> Path:
    path = workdir / "mixed.lua"
    path.write_text(SCRIPT)
    return path


def run(wrk: str, script: Path, base_url: str, seeded: dict, *, connections: int, seconds: int, plan) -> dict:
    body = json.dumps({"file": seeded["writer_file"], "expires_in": plan.created_lifetime_s})
    env = {
        "BENCH_CREATE_FRACTION": repr(plan.create_fraction),
        "BENCH_DOWNLOAD_PATH": f"/s/{seeded['links']['small']}",
        "BENCH_TOKEN": seeded["writer_token"],
        "BENCH_CREATE_BODY": body,
    }
    return load.run_script(wrk, script, base_url + "/", connections=connections, seconds=seconds, env=env)

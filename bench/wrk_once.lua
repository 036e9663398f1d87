-- wrk script: every path of a list requested once, over all threads and connections, the run
-- stopped by the harness (SIGINT) when every thread has its share answered. Used by
-- harness.wrk_once (bench/cold.py): wrk costs the shared 2 CPUs far less than a Python client.
-- Arguments: the file of paths (one per line), the number of threads. Thread k takes paths
-- k, k + threads, ...; once its share is sent, a connection repeats the thread's last path
-- until the share is answered (so up to connections - 1 of the answers counted may be such
-- repeats: 3 of 2,500 with 4 connections a thread, said in bench/README.md). Prints:
--   ONCE answered=N failed=F seconds=S p50=US p99=US
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } gitstore_timespec;
int clock_gettime(int clock, gitstore_timespec *now);
]]
local CLOCK_MONOTONIC = 1

local function now()
  local t = ffi.new("gitstore_timespec")
  ffi.C.clock_gettime(CLOCK_MONOTONIC, t)
  return tonumber(t.tv_sec) + tonumber(t.tv_nsec) / 1e9
end
local threads = {}
function setup(thread)
  thread:set("index", #threads)
  table.insert(threads, thread)
end
function init(args)
  paths = {}
  local total = tonumber(args[2])
  local n = 0
  for line in io.lines(args[1]) do
    if n % total == index then table.insert(paths, line) end
    n = n + 1
  end
  sent, answered, failed = 0, 0, 0
end
function request()
  if sent == 0 then started = now() end
  sent = sent + 1
  return wrk.format("GET", paths[math.min(sent, #paths)])
end
function response(status, headers, body)
  answered = answered + 1
  if status < 200 or status > 299 then failed = failed + 1 end
  if answered == #paths then
    finished = now()
    io.write("finished\n")
    io.stdout:flush()
    wrk.thread:stop()
  end
end
function done(summary, latency, requests)
  local first, last, count, bad = nil, nil, 0, 0
  for _, t in ipairs(threads) do
    local s, f = t:get("started"), t:get("finished")
    if s and (first == nil or s < first) then first = s end
    if f and (last == nil or f > last) then last = f end
    count = count + (t:get("answered") or 0)
    bad = bad + (t:get("failed") or 0)
  end
  io.write(string.format("ONCE answered=%d failed=%d seconds=%.6f p50=%d p99=%d\n",
    count, bad, (last or 0) - (first or 0), latency:percentile(50), latency:percentile(99)))
end

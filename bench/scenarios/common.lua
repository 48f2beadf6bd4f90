-- Shared by every scenario (the runner prepends it to the scenario's script). Counts responses by
-- status in each thread (a scenario may opt out with `response = nil`) and prints one
-- machine-readable line, `WRK_JSON {...}`, from done().
-- A scenario may set `issued` (requests it built), `next_index` (first input it did not use) and
-- `wrapped` (it ran out of distinct inputs and reused some).

local threads = {}
statuses = {}
issued = 0
next_index = 0
wrapped = false

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

function response(status, headers, body)
  statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency, requests)
  local merged, total_issued, any_wrapped, next_free = {}, 0, false, 0
  for _, t in ipairs(threads) do
    for code, n in pairs(t:get("statuses") or {}) do
      local c = tostring(code)
      merged[c] = (merged[c] or 0) + n
    end
    total_issued = total_issued + (t:get("issued") or 0)
    if t:get("wrapped") then any_wrapped = true end
    next_free = math.max(next_free, t:get("next_index") or 0)
  end
  local st = {}
  for code, n in pairs(merged) do st[#st + 1] = string.format('"%s":%d', code, n) end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests":%d,"durationUs":%d,"bytes":%d,"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latencyUs":{"mean":%.1f,"p50":%d,"p90":%d,"p99":%d,"max":%d},"statuses":{%s},"issued":%d,"nextIndex":%d,"wrapped":%s}\n',
    summary.requests, summary.duration, summary.bytes, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,
    table.concat(st, ","), total_issued, next_free, tostring(any_wrapped)))
end

-- POST /api/v1/join-tokens/exchange {token, deviceId}: every request spends a different single-use
-- token from the pool the server launcher minted, on its own device id and from its own client address
-- (X-Forwarded-For, the node trusts the proxy), so no request is a replay and none meets the per-IP
-- limit. Threads take interleaved indexes; `next_index` tells the runner where the next run starts.
-- args: tokens file, first index (0-based), thread count
local tokens = {}
local first, stride, n = 0, 1, 0
local headers = { ["Content-Type"] = "application/json" }

function init(args)
  for l in io.lines(args[1]) do if #l > 0 then tokens[#tokens + 1] = l end end
  stride = tonumber(args[3])
  first = tonumber(args[2]) + tid
  next_index = first
end

function request()
  local i = first + n * stride
  n = n + 1
  issued = n
  next_index = i + stride
  if i >= #tokens then
    wrapped = true
    i = i % #tokens
  end
  headers["X-Forwarded-For"] = string.format("10.%d.%d.%d", math.floor(i / 65536) % 256, math.floor(i / 256) % 256, i % 256)
  return wrk.format("POST", "/api/v1/join-tokens/exchange", headers,
    '{"token":"' .. tokens[i + 1] .. '","deviceId":"bench-device-' .. i .. '"}')
end

-- POST /api/v1/public/meetings/:id/join-links {"userId"}, with the API keys taken in turn so that
-- every key gets the same share of the load (the rate limit is per key per minute).
-- args: keys file, users file, meeting id, thread count
local reqs = {}
local n = 0

function init(args)
  local keys, users = {}, {}
  for l in io.lines(args[1]) do if #l > 0 then keys[#keys + 1] = l end end
  for l in io.lines(args[2]) do if #l > 0 then users[#users + 1] = l end end
  local path = "/api/v1/public/meetings/" .. args[3] .. "/join-links"
  for i = 1, #keys do
    local user = users[(i - 1) % #users + 1]
    reqs[i] = wrk.format("POST", path, {
      ["Authorization"] = "Bearer " .. keys[i],
      ["Content-Type"] = "application/json",
    }, '{"userId":"' .. user .. '"}')
  end
  -- threads start at different keys
  n = math.floor(tid * #reqs / tonumber(args[4]))
end

function request()
  n = n + 1
  issued = issued + 1
  return reqs[(n - 1) % #reqs + 1]
end

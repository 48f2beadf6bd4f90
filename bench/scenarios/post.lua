-- Baseline: a POST the size and shape of a mint request (bearer key, JSON body), echoed back by the
-- bare uWS server after it has read the whole body. No per-response Lua, as in get.lua.
wrk.method = "POST"
wrk.path = "/api/v1/public/meetings/mtg_01kaaaaaaaaaaaaaaaaaaaaaaa/join-links"
wrk.headers["Authorization"] = "Bearer aula_sk_" .. string.rep("x", 43)
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"userId":"usr_01kaaaaaaaaaaaaaaaaaaaaaaa"}'
response = nil

-- A POST the size and shape of a mint request, answered by the bare uWS server the way a mint is
-- answered (201, five headers, a body of a mint response's size) without doing one. No per-response Lua.
wrk.method = "POST"
wrk.path = "/shaped/api/v1/public/meetings/mtg_01kaaaaaaaaaaaaaaaaaaaaaaa/join-links"
wrk.headers["Authorization"] = "Bearer aula_sk_" .. string.rep("x", 43)
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{"userId":"usr_01kaaaaaaaaaaaaaaaaaaaaaaa"}'
response = nil

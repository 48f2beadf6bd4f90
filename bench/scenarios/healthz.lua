-- GET /healthz on the Aula node: no auth, no body, a constant answer. What the request pipeline costs
-- by itself (request id, header copy, logger child, error envelope, response headers) over bare uWS.
wrk.path = "/healthz"

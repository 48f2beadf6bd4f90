-- Baseline: GET / against the bare uWS hello world.
-- No per-response Lua: at hello-world rates wrk's own core is nearly as busy as the server's, so the
-- baseline gets wrk's fastest path; non-2xx then comes from wrk's own count of statuses above 399.
response = nil

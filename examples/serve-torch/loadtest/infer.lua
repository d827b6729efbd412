-- wrk script of scripts/loadtest: POSTs one v2 inference request, read from a file made by
-- make_request.py, to /v2/models/MODEL/infer. Binary requests carry the
-- Inference-Header-Content-Length header (its value is on the file's first line).
--   wrk -s infer.lua URL -- MODEL REQUEST_FILE [RATE_PER_THREAD]
-- With RATE_PER_THREAD each thread sends at most that many requests a second (the soak).
local ffi = require("ffi")
ffi.cdef [[
  typedef struct { long tv_sec; long tv_nsec; } wrk_timespec;
  int clock_gettime(int clk_id, wrk_timespec *tp);
]]
local ts = ffi.new("wrk_timespec")
local function now_ms()
  ffi.C.clock_gettime(1, ts) -- CLOCK_MONOTONIC
  return tonumber(ts.tv_sec) * 1000 + tonumber(ts.tv_nsec) / 1e6
end

local interval_ms, next_ms = nil, nil

function init(args)
  local model, file, rate = args[1], args[2], tonumber(args[3])
  local f = assert(io.open(file, "rb"))
  local header_length = tonumber(f:read("*l"))
  local body = f:read("*a")
  f:close()
  local headers = { ["Content-Type"] = "application/octet-stream" }
  if header_length >= 0 then
    headers["Inference-Header-Content-Length"] = tostring(header_length)
  else
    headers["Content-Type"] = "application/json"
  end
  request_bytes = wrk.format("POST", "/v2/models/" .. model .. "/infer", headers, body)
  if rate and rate > 0 then
    interval_ms = 1000 / rate
  end
end

function request()
  return request_bytes
end

-- The soak's rate: each request of this thread waits for its slot, one every interval_ms.
function delay()
  if not interval_ms then
    return 0
  end
  local t = now_ms()
  if not next_ms or next_ms < t - 1000 then
    next_ms = t
  end
  next_ms = next_ms + interval_ms
  local d = next_ms - interval_ms - t
  return d > 0 and d or 0
end

-- wrk script of scripts/loadtest --model minilm: POSTs OpenAI embeddings requests of one text each
-- to /v1/embeddings, cycling through a file of JSON bodies, one a line (made by loadtest.py from
-- sentences.txt). Each wrk thread starts at its own place in the list.
--   wrk -s embeddings.lua URL -- BODIES_FILE
local requests = {}
local next_request = 0
local threads = 0

function setup(thread)
  thread:set("thread_index", threads)
  threads = threads + 1
end

function init(args)
  local headers = { ["Content-Type"] = "application/json" }
  for body in io.lines(args[1]) do
    if #body > 0 then
      requests[#requests + 1] = wrk.format("POST", "/v1/embeddings", headers, body)
    end
  end
  assert(#requests > 0, "no request bodies in " .. args[1])
  next_request = ((thread_index or 0) * 37) % #requests
end

function request()
  next_request = next_request % #requests + 1
  return requests[next_request]
end

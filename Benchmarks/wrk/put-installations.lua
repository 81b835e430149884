-- wrk: PUT /{hub}/installations/{id} with a new installation per request (APNs device token, two tags).
-- Environment: HUB_TOKEN (a SharedAccessSignature with Manage), HUB_NAME.
local threads = 0
local counter = 0
local thread_id = 0
local headers = {}

function setup(thread)
  threads = threads + 1
  thread:set("thread_id", threads)
end

function init(args)
  headers["Authorization"] = os.getenv("HUB_TOKEN")
  headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  local id = string.format("wrk-%d-%d", thread_id, counter)
  local token = string.format("%08x%056x", thread_id, counter)
  local body = string.format(
    '{"installationId":"%s","platform":"apns","pushChannel":"%s","tags":["wrk","group:%d"]}',
    id, token, counter % 100)
  return wrk.format("PUT", "/" .. os.getenv("HUB_NAME") .. "/installations/" .. id, headers, body)
end

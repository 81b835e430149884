-- wrk: POST /{hub}/messages, each an APNs notification to one user's device (tag user:<n>), as a backend sends
-- per-user messages. Environment: HUB_TOKEN (a SharedAccessSignature with Send), HUB_NAME.
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
  headers["Content-Type"] = "application/json;charset=utf-8"
  headers["ServiceBusNotification-Format"] = "apple"
end

function request()
  counter = counter + 1
  headers["ServiceBusNotification-Tags"] = string.format("user:%d", (thread_id * 7919 + counter) % 10000)
  return wrk.format("POST", "/" .. os.getenv("HUB_NAME") .. "/messages", headers, '{"aps":{"alert":"Hello"}}')
end

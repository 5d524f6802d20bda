-- idnode-bench's wrk script for load spread over every member, as a load balancer would: the
-- shared keystone.lua (named by KEYSTONE_LUA: its modes and its WRKRESULT line), with wrk's
-- threads connected to the members of MEMBERS ("host:port,host:port,...") in turn, so each
-- member gets the same number of connections. After WRKRESULT it prints the answers each
-- member gave:
--   WRKMEMBERS <member 1>,<member 2>,...
dofile(assert(os.getenv("KEYSTONE_LUA"), "KEYSTONE_LUA is not set"))

local keystone_setup = setup
local keystone_done = done
local members = {}
for m in string.gmatch(assert(os.getenv("MEMBERS"), "MEMBERS is not set"), "[^,]+") do
   local host, port = string.match(m, "^(.+):(%d+)$")
   members[#members + 1] = assert(wrk.lookup(host, port)[1], "cannot resolve " .. m)
end
local spread = {}

function setup(thread)
   keystone_setup(thread)
   local i = (#spread % #members) + 1
   thread.addr = members[i]
   thread:set("member", i)
   spread[#spread + 1] = thread
end

-- counted in each thread's own state, read back in done()
answers = 0
function response(status, headers, body)
   answers = answers + 1
end

function done(summary, latency, requests)
   keystone_done(summary, latency, requests)
   local per = {}
   for i = 1, #members do per[i] = 0 end
   for _, t in ipairs(spread) do
      local i = t:get("member")
      per[i] = per[i] + (t:get("answers") or 0)
   end
   io.write("WRKMEMBERS " .. table.concat(per, ",") .. "\n")
end

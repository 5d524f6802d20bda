-- idnode-bench's wrk script for form posts (the OAuth2 endpoints). It runs the shared
-- keystone.lua (named by KEYSTONE_LUA: its setup, request and done, and so the same WRKRESULT
-- line) and adds one mode:
--   MODE=form  POST the body FORM_BODY as application/x-www-form-urlencoded to the URL, with
--              the Authorization header BASIC_AUTH (e.g. "Basic <base64>") when it is set
--   MODE=form_pool  as form, with the body FORM_KEY=<line> for the lines of FORM_POOL_FILE in
--              turn, each thread starting at its own share of the pool (tokens never seen
--              before by the node, when the pool is larger than what it remembers)
--   MODE=bearer  POST the JSON body BEARER_BODY to the URL with `Authorization: BEARER`
--              (the mapped JWT logins)
--   MODE=bearer_get  GET the URL with `Authorization: BEARER` (SCIM lists)
--   MODE=scim_user  POST a unique SCIM user per request to the URL with `Authorization: BEARER`
--              (RUN_TAG and the thread id make the names unique across runs and threads)
dofile(assert(os.getenv("KEYSTONE_LUA"), "KEYSTONE_LUA is not set"))

local keystone_init = init
local keystone_request = request
local form_mode = os.getenv("MODE")
local scim_tag = os.getenv("RUN_TAG") or tostring(os.time())
local scim_n = 0
local pool = {}
local pool_i = 0
local pool_key = os.getenv("FORM_KEY") or "token"

function init(args)
   keystone_init(args)
   if form_mode == "form_pool" then
      wrk.method = "POST"
      wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
      local basic = os.getenv("BASIC_AUTH")
      if basic then wrk.headers["Authorization"] = basic end
      -- (assert returns its message too, which io.lines would take for a read format)
      local file = os.getenv("FORM_POOL_FILE")
      assert(file, "FORM_POOL_FILE is not set")
      for line in io.lines(file) do
         pool[#pool + 1] = line
      end
      assert(#pool > 0, "FORM_POOL_FILE is empty")
      -- threads are numbered from 1 (keystone.lua's setup)
      pool_i = ((tid or 1) - 1) * math.floor(#pool / 4) % #pool
   elseif os.getenv("MODE") == "form" then
      wrk.method = "POST"
      wrk.body = os.getenv("FORM_BODY") or ""
      wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
      local basic = os.getenv("BASIC_AUTH")
      if basic then wrk.headers["Authorization"] = basic end
   elseif os.getenv("MODE") == "bearer" then
      wrk.method = "POST"
      wrk.body = os.getenv("BEARER_BODY") or ""
      wrk.headers["Content-Type"] = "application/json"
      wrk.headers["Authorization"] = assert(os.getenv("BEARER"), "BEARER is not set")
   elseif form_mode == "bearer_get" then
      wrk.headers["Authorization"] = assert(os.getenv("BEARER"), "BEARER is not set")
   elseif form_mode == "scim_user" then
      wrk.method = "POST"
      wrk.headers["Content-Type"] = "application/scim+json"
      wrk.headers["Authorization"] = assert(os.getenv("BEARER"), "BEARER is not set")
   end
end

function request()
   if form_mode == "form_pool" then
      pool_i = pool_i % #pool + 1
      return wrk.format("POST", nil, nil, pool_key .. "=" .. pool[pool_i])
   end
   if form_mode == "scim_user" then
      scim_n = scim_n + 1
      local u = string.format("%s-%d-%d", scim_tag, tid, scim_n)
      local b = string.format(
         '{"schemas":["urn:ietf:params:scim:schemas:core:2.0:User"],"externalId":"ext-%s",' ..
         '"userName":"user-%s@bench.example","name":{"givenName":"Bench","familyName":"User"},' ..
         '"emails":[{"value":"user-%s@bench.example","primary":true}],"active":true}', u, u, u)
      return wrk.format("POST", nil, nil, b)
   end
   return keystone_request()
end

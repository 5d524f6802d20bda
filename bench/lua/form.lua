-- idnode-bench's wrk script for form posts (the OAuth2 endpoints). It runs the shared
-- keystone.lua (named by KEYSTONE_LUA: its setup, request and done, and so the same WRKRESULT
-- line) and adds one mode:
--   MODE=form  POST the body FORM_BODY as application/x-www-form-urlencoded to the URL, with
--              the Authorization header BASIC_AUTH (e.g. "Basic <base64>") when it is set
--   MODE=bearer  POST the JSON body BEARER_BODY to the URL with `Authorization: BEARER`
--              (the mapped JWT logins)
dofile(assert(os.getenv("KEYSTONE_LUA"), "KEYSTONE_LUA is not set"))

local keystone_init = init

function init(args)
   keystone_init(args)
   if os.getenv("MODE") == "form" then
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
   end
end

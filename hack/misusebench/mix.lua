-- wrk script for hack/misusebench: the load generator's default endpoint mix (internal/loadgen
-- DefaultMix: 40 GET item, 25 PUT item, 15 list, 15 report, 5 DELETE) over 200 item ids.
local body = '{"name":"alpha-bravo","tags":["pool","parity"],"payload":"' .. string.rep("gray stable canary buffer ", 40) .. '"}'
local ops = {}
local function add(n, op) for _ = 1, n do ops[#ops + 1] = op end end
add(40, "get"); add(25, "put"); add(15, "list"); add(15, "report"); add(5, "delete")

request = function()
  local op = ops[math.random(#ops)]
  local id = "item-" .. math.random(0, 199)
  if op == "get" then
    return wrk.format("GET", "/api/v1/items/" .. id)
  elseif op == "put" then
    return wrk.format("PUT", "/api/v1/items/" .. id, {["Content-Type"] = "application/json"}, body)
  elseif op == "list" then
    return wrk.format("GET", "/api/v1/items?limit=50")
  elseif op == "report" then
    return wrk.format("GET", "/api/v1/report?n=50")
  end
  return wrk.format("DELETE", "/api/v1/items/" .. id)
end

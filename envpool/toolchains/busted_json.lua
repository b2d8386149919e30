-- swemint's busted output handler: busted's JSON report (the four lists, each test's full name,
-- spec file and line, status message), with only plain fields (busted 2.1's own json handler
-- prints nothing when a trace holds a value dkjson cannot encode, e.g. after pending()).
local json = require 'dkjson'

return function(options)
  local busted = require 'busted'
  local handler = require 'busted.outputHandlers.base'()

  local function slim(list)
    local out = {}
    for _, t in ipairs(list or {}) do
      local el = t.element or {}
      local tr = t.trace or el.trace or {}
      out[#out + 1] = {
        name = tostring(t.name or el.name or ''),
        element = {descriptor = tostring(el.descriptor or 'it')},
        trace = {source = tostring(tr.source or ''), short_src = tostring(tr.short_src or ''),
                 currentline = tonumber(tr.currentline)},
        message = type(t.message) == 'string' and t.message or nil,
      }
    end
    return out
  end

  handler.suiteEnd = function()
    io.write(json.encode({pendings = slim(handler.pendings), successes = slim(handler.successes),
                          failures = slim(handler.failures), errors = slim(handler.errors),
                          duration = handler.getDuration()}))
    io.write('\n')
    io.flush()
    return nil, true
  end

  busted.subscribe({'suite', 'end'}, handler.suiteEnd)
  return handler
end

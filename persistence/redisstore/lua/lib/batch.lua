-- lib/batch.lua: in-flight batches and the dead report.
-- lib: keys fields
--
-- In-flight batch: fields "2", n, token, seq, fetched_at, bound, timeout,
-- then n jobs, each two fields: id and a job record (lib/fields.lua's encoding,
-- without overflow) holding the payloads handed over.

local function put_raw(t, id, rec)
  t[#t + 1] = fld(id) .. fld(rec)
end

local function encode_batch(n, token, seq, at, bound, timeout, parts)
  return fld("2") .. fld(tostring(n)) .. fld(token) .. fld(seq) .. fld(at) ..
    fld(bound or "") .. fld(timeout or "") .. table.concat(parts)
end

local function decode_header(s)
  local pos = 1
  local h = {}
  local v, n
  v, pos = rdf(s, pos)
  n, pos = rdf(s, pos)
  h.n = tonumber(n)
  h.token, pos = rdf(s, pos)
  h.seq, pos = rdf(s, pos)
  h.at, pos = rdf(s, pos)
  h.bound, pos = rdf(s, pos)
  h.timeout, pos = rdf(s, pos)
  return h, pos
end

-- carry_outcome hands the last settlement's dead report, if any, to the
-- lease token that takes the shard over: the previous owner may never have
-- received it (a lost reply), and the retries_exhausted hook must see those
-- payloads at least once. The report is kept under the seq "carry", which
-- the new owner's first Advance adds to its own dead report
-- (docs/contract.md §3.5).
local function carry_outcome(token)
  local o = redis.call("GET", K.outcome)
  if not o then return end
  local pos, dead = 1, nil
  for _ = 1, 6 do dead, pos = rdf(o, pos) end
  if dead == "" then
    redis.call("DEL", K.outcome)
    return
  end
  redis.call("SET", K.outcome, fld(token) .. fld("carry") .. fld("0") .. fld("0") .. fld("0") .. fld(dead))
end

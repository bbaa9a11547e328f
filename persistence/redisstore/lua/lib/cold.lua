-- lib/cold.lua: records, overflow payloads, queued jobs and the morgue.
-- lib: keys clock fields batch
--
-- The helpers below are created only when a script calls cold(): creating
-- a closure costs Redis's Lua a few hundred nanoseconds, and the hot path
-- of a fetch or an enqueue needs none of them.

local COLD
local function cold()
  if COLD then return COLD end
  -- enc makes an id prefix-free and keeps byte order: NUL becomes \0\1, and
  -- \0\0 ends it.
  local function enc(id)
    if string.find(id, "\0", 1, true) then
      id = string.gsub(id, "%z", "\0\1")
    end
    return id .. "\0\0"
  end

  -- ---------------------------------------------------------------- score keys

  -- skey encodes a score as 8 bytes whose byte order is the numeric order.
  local function skey(x)
    local hi, lo = 0, 0
    if x ~= 0 then
      local a = math.abs(x)
      local m, e = math.frexp(a)
      local E = e + 1022
      local f
      if E <= 0 then
        f = a * 2 ^ 1074
        E = 0
      else
        f = (m * 2 - 1) * 2 ^ 52
      end
      hi = E * 1048576 + math.floor(f / 4294967296)
      lo = f % 4294967296
    end
    if x < 0 then
      hi = 2147483647 - hi
      lo = 4294967295 - lo
    else
      hi = hi + 2147483648
    end
    return string.char(
      math.floor(hi / 16777216) % 256, math.floor(hi / 65536) % 256,
      math.floor(hi / 256) % 256, hi % 256,
      math.floor(lo / 16777216) % 256, math.floor(lo / 65536) % 256,
      math.floor(lo / 256) % 256, lo % 256)
  end

  -- skey_num decodes skey.
  local function skey_num(k)
    local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(k, 1, 8)
    local hi = ((b1 * 256 + b2) * 256 + b3) * 256 + b4
    local lo = ((b5 * 256 + b6) * 256 + b7) * 256 + b8
    local sign = 1
    if hi >= 2147483648 then
      hi = hi - 2147483648
    else
      hi = 2147483647 - hi
      lo = 4294967295 - lo
      sign = -1
    end
    local E = math.floor(hi / 1048576)
    local f = (hi % 1048576) * 4294967296 + lo
    if E == 0 then
      if f == 0 then return 0 end
      return sign * math.ldexp(f, -1074)
    end
    return sign * math.ldexp(f + 4503599627370496, E - 1075)
  end

  local function skey_str(k)
    return string.format("%.17g", skey_num(k))
  end

  -- ---------------------------------------------------------------- records

  local function rec_decode(s)
    local flags = string.byte(s, 1)
    local r = {}
    local pos = 2
    r.at, pos = rdf(s, pos)
    r.rc, pos = rdf(s, pos)
    if flags % 4 >= 2 then r.fseq, pos = rdf(s, pos) end
    if flags % 2 == 1 then r.err, pos = rdf(s, pos) else r.err = "" end
    if flags % 16 >= 8 then r.hold, pos = rdf(s, pos) end
    r.ovn = 0
    if flags % 8 >= 4 then
      local v
      v, pos = rdf(s, pos)
      r.ovn = tonumber(v)
    end
    r.ovh = flags % 64 >= 32
    -- Bits 64 and 128: priority - 1 (docs/contract.md §3.16). pri0 and
    -- fseq0 say where the record was indexed when read (store moves it).
    r.pri = math.floor(flags / 64) + 1
    r.pri0, r.fseq0 = r.pri, r.fseq
    local hdrs = flags % 32 >= 16
    local ps = {}
    local n = #s
    while pos <= n do
      local sc, d, h
      sc, pos = rdf(s, pos)
      d, pos = rdf(s, pos)
      if hdrs then h, pos = rdf(s, pos) end
      if sc == "" then sc = r.at end
      ps[#ps + 1] = {sc, d, h}
    end
    r.ps = ps
    return r
  end

  local function rec_encode(r)
    local flags = 0
    local t = {"", fld(r.at), fld(r.rc)}
    if r.fseq then flags = flags + 2; t[#t + 1] = fld(r.fseq) end
    if r.err ~= "" then flags = flags + 1; t[#t + 1] = fld(r.err) end
    if r.hold then flags = flags + 8; t[#t + 1] = fld(r.hold) end
    if r.ovn > 0 then
      flags = flags + 4
      t[#t + 1] = fld(string.format("%.0f", r.ovn))
      if r.ovh then flags = flags + 32 end
    end
    local hdrs = false
    for _, p in ipairs(r.ps) do
      if p[3] and p[3] ~= "" then hdrs = true; break end
    end
    local at = r.at
    for _, p in ipairs(r.ps) do
      if p[1] == at then t[#t + 1] = "\0" else t[#t + 1] = fld(p[1]) end
      t[#t + 1] = fld(p[2])
      if hdrs then t[#t + 1] = fld(p[3] or "") end
    end
    if hdrs then flags = flags + 16 end
    if r.pri and r.pri > 1 then flags = flags + (r.pri - 1) * 64 end
    t[1] = string.char(flags)
    return table.concat(t)
  end

  local function new_rec(at, rc)
    return {at = at, rc = rc, err = "", ovn = 0, ovh = false, ps = {}, pri = 1}
  end

  -- zset_of returns the zset that indexes a queued record of priority pri
  -- outside the fifo: later for priority 1, else 2:p<pri>.
  local function zset_of(pri)
    if pri and pri > 1 then return PKEY[pri] end
    return K.later
  end

  -- plt orders payloads: score, then bytes.
  local function plt(a, b)
    local x, y = tonumber(a[1]), tonumber(b[1])
    if x ~= y then return x < y end
    return bcmp(a[2], b[2]) < 0
  end

  local function insert_sorted(ps, p)
    local i = #ps
    while i >= 1 and plt(p, ps[i]) do i = i - 1 end
    table.insert(ps, i + 1, p)
  end

  local function inline_bytes(ps)
    local n = 0
    for _, p in ipairs(ps) do n = n + #p[2] + #p[1] + #(p[3] or "") end
    return n
  end

  -- ---------------------------------------------------------------- overflow
  -- ns is "q" for queued payloads, "m" for the morgue's.

  local function ovpfx(ns, id) return ns .. enc(id) end

  -- ov_add puts a payload into the overflow of record r of id (the caller
  -- counts it in r.ovn); its headers follow the score key in ovs.
  local function ov_add(ns, id, r, sc, d, h)
    local p = ovpfx(ns, id)
    local k = skey(tonumber(sc))
    redis.call("ZADD", K.ovo, 0, p .. k .. d)
    if h and h ~= "" then
      r.ovh = true
      redis.call("HSET", K.ovs, p .. d, k .. h)
    else
      redis.call("HSET", K.ovs, p .. d, k)
    end
  end

  -- ov_del removes an overflow payload; v is its ovs value.
  local function ov_del(ns, id, d, v)
    local p = ovpfx(ns, id)
    redis.call("ZREM", K.ovo, p .. string.sub(v, 1, 8) .. d)
    redis.call("HDEL", K.ovs, p .. d)
  end

  -- ov_first returns the lowest n overflow payloads of id, each
  -- {score, data, member, headers}; headers are read (one HMGET) only
  -- when withh says some overflow payload of the id may carry them.
  local function ov_first(ns, id, n, withh)
    local p = ovpfx(ns, id)
    local ms = redis.call("ZRANGEBYLEX", K.ovo, "[" .. p, "(" .. string.sub(p, 1, -2) .. "\1", "LIMIT", 0, n)
    local out = {}
    local lp = #p
    for i, m in ipairs(ms) do
      out[i] = {skey_str(string.sub(m, lp + 1, lp + 8)), string.sub(m, lp + 9), m}
    end
    if withh and #out > 0 then
      for i = 1, #out, CHUNK do
        local fields = {}
        for j = i, math.min(i + CHUNK - 1, #out) do fields[#fields + 1] = p .. out[j][2] end
        local vs = redis.call("HMGET", K.ovs, unpack(fields))
        for j = 1, #fields do
          local v = vs[j]
          if v and #v > 8 then out[i + j - 1][4] = string.sub(v, 9) end
        end
      end
    end
    return out
  end

  -- ov_remove removes what ov_first returned (a contiguous range).
  local function ov_remove(ns, id, list)
    if #list == 0 then return end
    redis.call("ZREMRANGEBYLEX", K.ovo, "[" .. list[1][3], "[" .. list[#list][3])
    local p = ovpfx(ns, id)
    local fs = {}
    for i, e in ipairs(list) do fs[i] = p .. e[2] end
    hdel_list(K.ovs, fs)
  end

  -- refill moves the lowest overflow payloads inline when nothing is inline.
  local function refill(ns, id, r)
    if #r.ps > 0 or r.ovn == 0 then return end
    local list = ov_first(ns, id, INLINE_MAX, r.ovh)
    local take, bytes = {}, 0
    for i, e in ipairs(list) do
      bytes = bytes + #e[1] + #e[2] + #(e[4] or "")
      if i > 1 and bytes > INLINE_BYTES then break end
      take[i] = e
    end
    ov_remove(ns, id, take)
    for i, e in ipairs(take) do r.ps[i] = {e[1], e[2], e[4]} end
    r.ovn = r.ovn - #take
    if r.ovn == 0 then r.ovh = false end
  end

  -- add_payload merges a payload (with headers h, nil for none) into
  -- record r of id: an equal payload keeps the lower score, and the headers
  -- that came with it (docs/contract.md §10). Inline payloads stay the
  -- lowest ones, within the inline bounds; the rest go to the overflow.
  local function add_payload(ns, id, r, sc, d, h)
    local n = tonumber(sc)
    refill(ns, id, r)
    local ps = r.ps
    for i, p in ipairs(ps) do
      if p[2] == d then
        if n < tonumber(p[1]) then
          table.remove(ps, i)
          insert_sorted(ps, {sc, d, h})
        end
        return
      end
    end
    if r.ovn > 0 then
      local k = redis.call("HGET", K.ovs, ovpfx(ns, id) .. d)
      if k then
        if n >= skey_num(k) then return end
        ov_del(ns, id, d, k)
        r.ovn = r.ovn - 1
      end
      if #ps > 0 and not plt({sc, d}, ps[#ps]) then
        ov_add(ns, id, r, sc, d, h)
        r.ovn = r.ovn + 1
        return
      end
    end
    insert_sorted(ps, {sc, d, h})
    if #ps > 1 and (#ps > INLINE_MAX or inline_bytes(ps) > INLINE_BYTES) then
      while #ps > 1 and (#ps > INLINE_MAX or inline_bytes(ps) > INLINE_BYTES) do
        local last = table.remove(ps)
        ov_add(ns, id, r, last[1], last[2], last[3])
        r.ovn = r.ovn + 1
      end
    end
  end

  -- add_payloads merges payloads {score, data} into record r of id as
  -- add_payload would one by one, with one Redis command per kind of change
  -- instead of several per payload (the path of ids with many payloads).
  local function add_payloads(ns, id, r, list)
    if #list == 0 then return end
    if #list == 1 then return add_payload(ns, id, r, list[1][1], list[1][2], list[1][3]) end
    refill(ns, id, r)
    local ps = r.ps
    local pos = {}
    for i, p in ipairs(ps) do pos[p[2]] = i end
    -- Equal inline payloads take the lower score; the others are
    -- candidates, each with its lowest score in the list.
    local cand, candh, order, resort = {}, {}, {}, false
    for _, p in ipairs(list) do
      local sc, d = p[1], p[2]
      local i = pos[d]
      if i then
        if tonumber(sc) < tonumber(ps[i][1]) then
          ps[i] = {sc, d, p[3]}
          resort = true
        end
      elseif not cand[d] then
        cand[d] = sc
        candh[d] = p[3]
        order[#order + 1] = d
      elseif tonumber(sc) < tonumber(cand[d]) then
        cand[d] = sc
        candh[d] = p[3]
      end
    end
    if resort then table.sort(ps, plt) end
    if #order == 0 then return end
    local pfx = ovpfx(ns, id)
    local zrem, hdel, zadd, hset = {}, {}, {}, {}
    if r.ovn > 0 then
      for i = 1, #order, CHUNK do
        local fields = {}
        for j = i, math.min(i + CHUNK - 1, #order) do fields[#fields + 1] = pfx .. order[j] end
        local ks = redis.call("HMGET", K.ovs, unpack(fields))
        for j = 1, #fields do
          local k = ks[j]
          if k then
            local d = order[i + j - 1]
            if tonumber(cand[d]) >= skey_num(k) then
              cand[d] = nil
            else
              zrem[#zrem + 1] = pfx .. string.sub(k, 1, 8) .. d
              hdel[#hdel + 1] = pfx .. d
              r.ovn = r.ovn - 1
            end
          end
        end
      end
    end
    local function to_ov(sc, d, h)
      local k = skey(tonumber(sc))
      zadd[#zadd + 1] = 0
      zadd[#zadd + 1] = pfx .. k .. d
      hset[#hset + 1] = pfx .. d
      if h and h ~= "" then
        hset[#hset + 1] = k .. h
        r.ovh = true
      else
        hset[#hset + 1] = k
      end
      r.ovn = r.ovn + 1
    end
    -- With an overflow, a payload above the inline ones goes there: every
    -- inline payload stays at most the overflow's lowest.
    local last = nil
    if r.ovn > 0 then last = ps[#ps] end
    for _, d in ipairs(order) do
      local sc = cand[d]
      if sc then
        if last and not plt({sc, d}, last) then
          to_ov(sc, d, candh[d])
        else
          ps[#ps + 1] = {sc, d, candh[d]}
        end
      end
    end
    table.sort(ps, plt)
    local keep, bytes = 0, 0
    for i, p in ipairs(ps) do
      bytes = bytes + #p[1] + #p[2] + #(p[3] or "")
      if i > 1 and (i > INLINE_MAX or bytes > INLINE_BYTES) then break end
      keep = i
    end
    for i = #ps, keep + 1, -1 do
      local p = table.remove(ps)
      to_ov(p[1], p[2], p[3])
    end
    for i = 1, #zrem, CHUNK do
      redis.call("ZREM", K.ovo, unpack(zrem, i, math.min(i + CHUNK - 1, #zrem)))
    end
    hdel_list(K.ovs, hdel)
    for i = 1, #zadd, 2 * CHUNK do
      redis.call("ZADD", K.ovo, unpack(zadd, i, math.min(i + 2 * CHUNK - 1, #zadd)))
    end
    for i = 1, #hset, 2 * CHUNK do
      redis.call("HSET", K.ovs, unpack(hset, i, math.min(i + 2 * CHUNK - 1, #hset)))
    end
  end

  -- take_payloads takes up to n of the lowest payloads of record r (inline
  -- first, then overflow) and returns them; r keeps the rest (refilled).
  local function take_payloads(ns, id, r, n)
    local got = {}
    local ps = r.ps
    local ni = math.min(#ps, n)
    for i = 1, ni do got[i] = ps[i] end
    local rest = {}
    for i = ni + 1, #ps do rest[#rest + 1] = ps[i] end
    r.ps = rest
    if #rest == 0 and r.ovn > 0 and ni < n then
      local list = ov_first(ns, id, n - ni, r.ovh)
      ov_remove(ns, id, list)
      r.ovn = r.ovn - #list
      for _, e in ipairs(list) do got[#got + 1] = {e[1], e[2], e[4]} end
    end
    refill(ns, id, r)
    return got
  end

  -- drop_overflow deletes up to n overflow payloads of id; returns how many
  -- are left.
  local function drop_overflow(ns, id, r, n)
    if r.ovn == 0 then return 0 end
    local list = ov_first(ns, id, n)
    ov_remove(ns, id, list)
    r.ovn = r.ovn - #list
    if #list < n then r.ovn = 0 end
    if r.ovn == 0 then r.ovh = false end
    return r.ovn
  end

  -- ---------------------------------------------------------------- jobs

  local function load(id)
    local s = redis.call("HGET", K.jobs, id)
    if s then return rec_decode(s) end
    return nil
  end

  local function due_of(r)
    if r.hold and tonumber(r.hold) > tonumber(r.at) then return r.hold end
    return r.at
  end

  -- store writes record r of id and its index entries; old_rc is the retry
  -- count it had before (nil for a new record).
  local function store(id, r, old_rc)
    if r.pri0 and r.pri0 ~= r.pri and not r.fseq0 then
      -- Its priority changed: out of the zset of the old one.
      redis.call("ZREM", zset_of(r.pri0), id)
    end
    if not r.fseq then redis.call("ZADD", zset_of(r.pri), due_of(r), id) end
    r.pri0, r.fseq0 = r.pri, r.fseq
    if tonumber(r.rc) >= 0 then
      redis.call("ZADD", K.retries, r.rc, id)
    elseif old_rc and tonumber(old_rc) >= 0 then
      redis.call("ZREM", K.retries, id)
    end
    redis.call("HSET", K.jobs, id, rec_encode(r))
  end

  -- unlink removes the queued record of id and its index entries (not its
  -- overflow).
  local function unlink(id, r)
    redis.call("HDEL", K.jobs, id)
    if not r.fseq then redis.call("ZREM", zset_of(r.pri), id) end
    if tonumber(r.rc) >= 0 then redis.call("ZREM", K.retries, id) end
  end

  -- later_hold returns the larger of two holds still in the future, or nil.
  local function later_hold(a, b)
    local h
    if a and tonumber(a) > NOWN then h = a end
    if b and tonumber(b) > NOWN and (not h or tonumber(b) > tonumber(h)) then h = b end
    return h
  end

  -- requeue merges a job back as "failed job + queued job" (docs/contract.md
  -- §3.2 case 2): payloads united (lower score wins); perform_at, retry count
  -- and error are the given ones; hold keeps the id from being fetched before
  -- it. pri (nil: 1) is the priority of the payloads put back; the id
  -- keeps the most urgent of it and its queued record's.
  local function requeue(id, ps, rc, at, err, hold, pri)
    local r = load(id)
    local old_rc
    pri = pri or 1
    if r then
      old_rc = r.rc
      if pri < r.pri then r.pri = pri end
    else
      r = new_rec(at, rc)
      r.pri = pri
    end
    add_payloads("q", id, r, ps)
    r.rc, r.at = rc, at
    if tonumber(rc) >= 0 then r.err = err else r.err = "" end
    r.fseq = nil
    r.hold = later_hold(r.hold, hold)
    store(id, r, old_rc)
  end

  -- hold_queued keeps the queued record of id, if there is one, from being
  -- fetched before hold; its perform_at, retry count and error stay.
  local function hold_queued(id, hold)
    local r = load(id)
    if not r then return end
    local h = later_hold(r.hold, hold)
    if h == r.hold then return end
    r.hold, r.fseq = h, nil
    store(id, r, r.rc)
  end

  local function put_job(t, id, rc, at, err, ps, pri)
    put_raw(t, id, rec_encode({at = at, rc = rc, err = err, ovn = 0, ovh = false, ps = ps, pri = pri}))
  end


  -- decode_batch decodes an in-flight batch; a batch of a stateful queue
  -- ends with the field "s" and each job's state version as handed out
  -- (job.sv; nil in a batch without it, such as one written before stateful
  -- queues existed), then, when a timer brought some of its ids, the field
  -- "t" and per job "1" (job.tm: its timer fired) or "". A job without
  -- payloads is one that only its timer brought. A batch with an id
  -- cancelled while in flight (cancel_mark) ends with the field "c" and per
  -- job "k" (kill), "d" (delete) or "" (job.cx; h.cstart is where the
  -- section starts). Earlier releases stop reading at the unknown tag.
  local function decode_batch(s)
    local h, pos = decode_header(s)
    local jobs = {}
    for j = 1, h.n do
      local id, rec
      id, pos = rdf(s, pos)
      rec, pos = rdf(s, pos)
      local r = rec_decode(rec)
      jobs[j] = {id = id, rc = r.rc, at = r.at, err = r.err, ps = r.ps, pri = r.pri}
    end
    while pos <= #s do
      local tag, at = nil, pos
      tag, pos = rdf(s, pos)
      if tag == "c" then
        h.cstart = at
        local f
        for j = 1, h.n do
          f, pos = rdf(s, pos)
          if f ~= "" then jobs[j].cx = f end
        end
      elseif tag == "s" then
        for j = 1, h.n do jobs[j].sv, pos = rdf(s, pos) end
      elseif tag == "t" then
        local f
        for j = 1, h.n do
          f, pos = rdf(s, pos)
          jobs[j].tm = f == "1"
        end
      else
        break
      end
    end
    for j = 1, h.n do
      if #jobs[j].ps == 0 then jobs[j].tm = true end
    end
    return h, jobs
  end

  -- hold_of returns until when the ids of a restored batch wait: the
  -- deadline bound written at fetch, and no later than now + the call
  -- timeout (every call started before now). nil when no deadline was kept.
  local function hold_of(h)
    if h.timeout == "" then return nil end
    local t_us = tonumber(h.timeout) * 1000
    local bound_us = math.floor(tonumber(h.bound) * 1000000 + 0.5)
    local us = math.min(bound_us, NOW_US + t_us)
    if us <= NOW_US then return nil end
    return fmt_us(us)
  end

  -- requeue_job puts a job of a batch back: its payloads (requeue) and,
  -- when its timer brought it, its timer, due at the latest of due, hold
  -- and now (docs/contract.md §11).
  local function requeue_job(job, rc, at, err, hold, due)
    if #job.ps > 0 then requeue(job.id, job.ps, rc, at, err, hold, job.pri) end
    if job.tm then
      local t, tn = NOW, NOWN
      if due and tonumber(due) > tn then t, tn = due, tonumber(due) end
      if hold and tonumber(hold) > tn then t = hold end
      redis.call("ZADD", K.timers, t, job.id)
    end
  end

  -- ---------------------------------------------------------------- morgue

  -- morgue_put merges payloads into the morgue entry of id (the lower score
  -- wins), and sets its error and updated_at. A new entry keeps its
  -- creation time (first_at) in the record's retry count field, which a
  -- morgue record does not otherwise use ("" in entries written before).
  local function morgue_put(id, ps, err, at)
    local s = redis.call("HGET", K.morgue, id)
    local m
    if s then m = rec_decode(s) else m = new_rec(at, at) end
    add_payloads("m", id, m, ps)
    if not s or tonumber(at) >= tonumber(m.at) then
      m.at, m.err = at, err
    end
    redis.call("HSET", K.morgue, id, rec_encode(m))
    redis.call("ZADD", K.mat, m.at, id)
  end

  -- cancel_mark marks id of the in-flight batch cur as cancelled with mode
  -- ("k" or "d"): the settle, or a restore, disposes of its payloads
  -- instead of putting them back (docs/contract.md §3.13). It returns
  -- false when id is not in the batch.
  local function cancel_mark(cur, id, mode)
    local h, jobs = decode_batch(cur)
    local flags, found = {fld("c")}, false
    for j, job in ipairs(jobs) do
      local f = job.cx or ""
      if job.id == id then
        f, found = mode, true
      end
      flags[j + 1] = fld(f)
    end
    if not found then return false end
    local head = cur
    if h.cstart then head = string.sub(cur, 1, h.cstart - 1) end
    redis.call("SET", K.inflight, head .. table.concat(flags))
    return true
  end

  -- cancel_dispose disposes of a cancelled job of a batch (job.cx): its
  -- payloads go to the morgue with the error "cancelled" ("k") or are
  -- dropped ("d"), a timer that brought it is not set again, and the
  -- shard's "cancelled" counter counts it.
  local function cancel_dispose(job)
    if job.cx == "k" and #job.ps > 0 then morgue_put(job.id, job.ps, "cancelled", NOW) end
    redis.call("HINCRBY", K.meta, "cancelled", 1)
  end

  -- restore_inflight puts the in-flight batch back into the queue
  -- (docs/contract.md §3.7), a cancelled id excepted (cancel_dispose), and
  -- returns how many ids it restored.
  local function restore_inflight(cur)
    if not cur then return 0 end
    local h, jobs = decode_batch(cur)
    local hold = hold_of(h)
    local n = 0
    for _, job in ipairs(jobs) do
      if job.cx then
        cancel_dispose(job)
      else
        requeue_job(job, job.rc, job.at, job.err, hold, nil)
        n = n + 1
      end
    end
    redis.call("DEL", K.inflight)
    return n
  end

  COLD = {
    enc = enc,
    skey = skey,
    skey_num = skey_num,
    skey_str = skey_str,
    rec_decode = rec_decode,
    rec_encode = rec_encode,
    new_rec = new_rec,
    plt = plt,
    insert_sorted = insert_sorted,
    inline_bytes = inline_bytes,
    ovpfx = ovpfx,
    ov_add = ov_add,
    ov_del = ov_del,
    ov_first = ov_first,
    ov_remove = ov_remove,
    refill = refill,
    add_payload = add_payload,
    add_payloads = add_payloads,
    take_payloads = take_payloads,
    drop_overflow = drop_overflow,
    load = load,
    due_of = due_of,
    zset_of = zset_of,
    store = store,
    unlink = unlink,
    later_hold = later_hold,
    requeue = requeue,
    put_job = put_job,
    decode_batch = decode_batch,
    hold_of = hold_of,
    restore_inflight = restore_inflight,
    requeue_job = requeue_job,
    hold_queued = hold_queued,
    morgue_put = morgue_put,
    cancel_mark = cancel_mark,
    cancel_dispose = cancel_dispose,
  }
  return COLD
end


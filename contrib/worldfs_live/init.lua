-- worldfs_live: lets a worldfs mount change this world while the server
-- runs (docs/layout.md, "Live mounts"). Installed by
-- `worldfs live install WORLD` into WORLD/worldmods/; needs no insecure
-- environment: it only reads and writes files in the world directory.
--
-- In <world>/worldfs-live/:
--   server.json     the heartbeat, rewritten every 0.5 s while the server
--                   runs ({"protocol":1,"version":...,"time":...,
--                   "save_interval":...,"run":...}; "stopped":true at
--                   shutdown). "run" is new at every server start: a
--                   change applied in an earlier run and not saved is gone.
--                   Written first while the mods load ("starting":true),
--                   before the server reads any block. "saved": the
--                   number of the last request the map saves wrote (see
--                   saves.lua); "max_request_bytes", "max_inventory_slots":
--                   the limits below; "timed_replies": a request may ask
--                   for its timing (its "timed" line).
--   runs/RUN.json   the last server.json of an earlier run (the 16 newest).
--   requests/ID.req a change, written by the mount (temporary file, then
--                   renamed). Taken by removing it: a request the mount
--                   withdrew (it removed it first) is never applied. ID
--                   starts with the time it was made (nanoseconds since
--                   1970, 20 digits); a request over EXPIRE seconds old is
--                   a dead daemon's (a live one withdraws it after 5 s):
--                   removed, not applied, not answered.
--   replies/ID      the answer: "ok N" (the request's number in this run;
--                   "ok" for one that changes no map), "offline" (a player request, see
--                   below), "stale REASON" (what the change
--                   replaces is no longer what the mount showed),
--                   "invalid REASON" or "failed REASON". One over EXPIRE
--                   seconds old has nobody to read it: removed. The
--                   answer to a "timed" request has a second line, "took
--                   QUEUED_US HANDLED_US": how long the step had been
--                   taking requests when it took this one, and how long
--                   reading, checking and applying it took (docs/
--                   performance.md, "the breakdown of a live close()").
--   steps.txt       the server's step times over the last two minutes,
--                   a line per heartbeat: "TIME WORST_DTIME_MS
--                   WORST_WORK_MS REQUESTS STEPS OVER" (the longest step,
--                   the most time this mod spent in one step, requests
--                   applied, the steps in the window and those of them
--                   over 100 ms).
--
-- A request is applied inside one server step, all or nothing: every
-- precondition is checked before anything changes. Requests are taken
-- until BUDGET seconds of a step are used, at a pace of changed blocks
-- the server's map saves can write (see pace.lua), so a big
-- change sent in many small requests leaves the server responsive.
-- Settings (minetest.conf, settingtypes.txt): worldfs_live.step_budget_ms
-- (20), worldfs_live.blocks_per_save (128: the pace it starts at),
-- worldfs_live.blocks_per_save_min (16), worldfs_live.blocks_per_save_max
-- (1024), worldfs_live.log_ms (200), worldfs_live.map_save_interval (0:
-- off; see below). The pace itself is pace.lua.
-- Its lines (strings in hex, "-" when empty; positions are node positions):
--   worldfs-live 1
--   node X Y Z OLDNAME OLDP1 OLDP2 NEWNAME NEWP1 NEWP2
--   meta X Y Z              then "old ..." and "new ..." lines, "endmeta"
--     old field KEY VALUE | old list NAME SIZE WIDTH | old item LIST INDEX ITEM
--     new field KEY VALUE PRIVATE | new list NAME SIZE WIDTH | new item LIST INDEX ITEM
--   timer X Y Z TIMEOUT ELAPSED | notimer X Y Z
--   delete BX BY BZ         then "dname ID NAME" lines and one "dids" line
--                           (4096 ids, z*256 + y*16 + x): what the block holds
--   block BX BY BZ          a block's names whole (a rename): "bname old|new
--                           ID NAME" lines, then "bold" and "bnew" lines of
--                           4096 ids each, a run of N equal ids as "ID*N";
--                           param1 and param2 are kept
--   player NAME             a player's data (alone in its request): "pold"
--                           and "pnew" lines of what differs, "endplayer"
--     hp N | breath N | pos X Y Z (nodes) | look PITCH YAW (degrees)
--     | list NAME SIZE WIDTH | nolist NAME | item LIST INDEX ITEM
--     | attr KEY VALUE | noattr KEY | gone (no record: made or removed)
--                           Applied through the player API when the player
--                           is in the game; else answered "offline", and the
--                           player's joins are held (refused with a "try
--                           again" message) for HOLD seconds or until
--                           "release NAME", while the mount writes the
--                           database (the server reads it at the join).
--   release NAME            the hold above ends
--   timed                   the answer says how long the request took
--   held BX BY BZ           which of these blocks the server holds in memory
--                           (alone in its request, one line a block, in a
--                           file requests/ID.held: answered in every step,
--                           whatever the pace, as it changes nothing): the
--                           answer is "held" and the held ones, "BX,BY,BZ"
--                           words on the same line. The mount wrote those
--                           blocks to the database itself first (a big
--                           change, while the server held none of them):
--                           the server loads a block, and saves one, only
--                           inside a step, so a block not held when this
--                           step asks is read from the database with the
--                           mount's change when the server next needs it.
--   written                 the request's blocks may already hold what it
--                           sets (the mount wrote them to the database, and
--                           the server loaded them since): a node or whole
--                           block that already holds the new names passes
--                           the check
--   privs NAME GRANTED REVOKED  an account's privileges were changed in the
--                           database (comma-separated, in hex): the grant
--                           and revoke callbacks run and a player in the
--                           game is told (core.notify_authentication_modified)
--   end

local world = core.get_worldpath()
local dir = world .. "/worldfs-live"
local requests = dir .. "/requests"
local replies = dir .. "/replies"
local HEARTBEAT = 0.5
local LIMIT = 31007
local EXPIRE = 10
-- Pacing (docs/performance.md, "Live mounts"). The mod takes requests
-- in a step until BUDGET seconds are used, and none in a step after a late
-- one (dtime over 1.5 server steps) in which it took requests. And the
-- blocks it changed in the last map save interval stay under the pace
-- (pace.lua): the server writes every changed block in one step at its
-- next map save, which took 0.1 to 2 ms a block depending on the load (a
-- world-wide rename changed 400 blocks a save: steps of 0.1 to 1.3 s).
local pace = dofile(core.get_modpath(core.get_current_modname()) .. "/pace.lua")
local saves = dofile(core.get_modpath(core.get_current_modname()) .. "/saves.lua")
local BUDGET = (tonumber(core.settings:get("worldfs_live.step_budget_ms")) or 20) / 1000
-- A shorter server step, when worldfs_live.server_step asks for one: the
-- mod takes requests once a step, so a writer that waits for its change
-- to be applied makes one a step at most (8 writers: 8 / 0.09 s = 89
-- changes a second). The 5.6.1 dedicated server reads
-- dedicated_server_step once, when its loop starts (dedicated_server_loop:
-- `static thread_local const float steplen`), after Server::start loaded
-- the mods: set here, it holds for the whole run (docs/design.md, "Live
-- mounts: a shorter server step"). Only ever shortened, and never below
-- STEP_MIN: the server thread waits up to 30 ms for packets between steps,
-- so a shorter step would come late and in pairs (a dtime of two steps,
-- which the mod takes for a late step and serves nothing in). The admin's
-- value is put back at shutdown, as for map_save_interval below.
local STEP_MIN = 0.04
local ADMIN_STEP = core.settings:to_table().dedicated_server_step
local WANTED_STEP = tonumber(core.settings:get("worldfs_live.server_step")) or 0
if WANTED_STEP > 0 and WANTED_STEP < STEP_MIN then
  core.log("warning", string.format("[worldfs_live] worldfs_live.server_step = %g is below %g s, the shortest step "
    .. "the server keeps: %g s is used", WANTED_STEP, STEP_MIN, STEP_MIN))
  WANTED_STEP = STEP_MIN
end
if WANTED_STEP > 0 and WANTED_STEP < (tonumber(ADMIN_STEP) or 0.09) then
  core.settings:set("dedicated_server_step", tostring(WANTED_STEP))
  core.log("action", string.format("[worldfs_live] the server steps every %g s in this run "
    .. "(worldfs_live.server_step; dedicated_server_step is %s)", WANTED_STEP, ADMIN_STEP or "0.09"))
end
local STEP = tonumber(core.settings:get("dedicated_server_step")) or 0.09
local PACE_LIMITS = pace.limits(tonumber(core.settings:get("worldfs_live.blocks_per_save")) or 128,
  tonumber(core.settings:get("worldfs_live.blocks_per_save_min")) or 16,
  tonumber(core.settings:get("worldfs_live.blocks_per_save_max")) or 1024, STEP * 1000)
-- More saves, not bigger ones: the server writes every changed block at
-- its map save, so a big change goes at (blocks a save step can write in
-- well under 100 ms) / server_map_save_interval. The 5.6.1 server reads
-- that setting once, at its first step (Server::AsyncRunStep: `static
-- thread_local const float save_interval`), after the mods are loaded:
-- set here, it holds for the whole run; no later change takes (docs/
-- design.md, "Live mounts: more saves"). Only ever shortened. The server
-- writes its settings back to minetest.conf at a clean shutdown, so the
-- admin's value is put back then (on_shutdown, below); a crash writes
-- nothing, so the file keeps it either way.
-- (to_table holds only what minetest.conf or the command line set, not
-- the engine's defaults: a value that was not set is removed again.)
local ADMIN_SAVE_INTERVAL = core.settings:to_table().server_map_save_interval
local WANTED_SAVE_INTERVAL = tonumber(core.settings:get("worldfs_live.map_save_interval")) or 0
if WANTED_SAVE_INTERVAL > 0 and WANTED_SAVE_INTERVAL < (tonumber(ADMIN_SAVE_INTERVAL) or 5.3) then
  core.settings:set("server_map_save_interval", tostring(WANTED_SAVE_INTERVAL))
  core.log("action", string.format("[worldfs_live] the map is saved every %g s in this run "
    .. "(worldfs_live.map_save_interval; server_map_save_interval is %s)", WANTED_SAVE_INTERVAL,
    ADMIN_SAVE_INTERVAL or "5.3"))
end
-- The server saves when its timer, counting each step's dtime, reaches
-- this; the mod counts the same dtimes to know which step saved.
local SAVE_INTERVAL = tonumber(core.settings:get("server_map_save_interval")) or 5.3
-- The interval the pace counts blocks in: the map save interval, or 5.3 s
-- when that is longer (blocks no player keeps are then written as they
-- unload, 29 s after their last use, a batch every 2.92 s, before the
-- save comes).
local PACE_INTERVAL = math.min(SAVE_INTERVAL, 5.3)
-- Requests applied in this run, numbered from 1 (each "ok" reply says its
-- number), and which of them the map saves have written (saves.lua):
-- server.json says so ("saved"), so a mount counts a change as kept only
-- once it is in the database.
local applied_seq = 0
local followed = saves.new(SAVE_INTERVAL)
local STEP_LINES = 240
local HOLD = 10
-- Requests that take longer than this (ms) are logged with their parse,
-- check and apply times ("worldfs_live.log_ms" in minetest.conf; 0 logs
-- every request, for profiling a big change).
local LOG_MS = tonumber(core.settings:get("worldfs_live.log_ms")) or 200
-- The most a request may hold: its bytes (a request file over it is not
-- read), and the inventory slots its new lists have in all. What a
-- request within them costs fits in a step (docs/layout.md, "Live
-- mounts"); the mount reads them from server.json and refuses a bigger
-- change itself, with the reason.
local MAX_BYTES = tonumber(core.settings:get("worldfs_live.max_request_bytes")) or 1048576
local MAX_SLOTS = tonumber(core.settings:get("worldfs_live.max_inventory_slots")) or 4096
-- The blocks one request may change (the mount sends four at most): each
-- is loaded, from the database when the server does not hold it.
local MAX_BLOCKS = 16
-- The blocks one "held" request may ask of (the mount asks of 4096 at most).
local MAX_HELD = 8192
-- Who this server run is (see server.json above).
local RUN = string.format("%d-%d", os.time(), core.get_us_time())

core.mkdir(dir)
core.mkdir(requests)
core.mkdir(replies)

local function fail(kind, msg)
  error({kind = kind, msg = msg}, 0)
end

-- Decoded strings, by their hex: a big change repeats a few node names
-- thousands of times. Emptied when it grows past 4096 entries.
local unhexed, unhexed_count = {}, 0

-- Bytes by their two hex digits and back: gsub with a table runs in C
-- (a Lua function per byte took seconds on a text of megabytes).
local byte_of, hex_of = {}, {}
for b = 0, 255 do
  local c, h = string.char(b), string.format("%02x", b)
  hex_of[c] = h
  for _, hh in ipairs({h, h:upper(), h:sub(1, 1):upper() .. h:sub(2), h:sub(1, 1) .. h:sub(2):upper()}) do
    byte_of[hh] = c
  end
end

local function unhex(s)
  if s == nil then fail("invalid", "a line is missing a word") end
  local known = unhexed[s]
  if known then return known end
  if s == "-" then return "" end
  if #s % 2 == 1 or not s:match("^%x*$") then fail("invalid", "bad hex string " .. s:sub(1, 20)) end
  local out = s:gsub("%x%x", byte_of)
  if unhexed_count >= 4096 then unhexed, unhexed_count = {}, 0 end
  unhexed[s], unhexed_count = out, unhexed_count + 1
  return out
end

local function hex(s)
  if s == "" then return "-" end
  return (s:gsub(".", hex_of))
end

local function int(s, lo, hi, what)
  local n = tonumber(s)
  if not n or n ~= math.floor(n) or n < lo or n > hi then
    fail("invalid", what .. " " .. tostring(s) .. " is not a whole number in " .. lo .. ".." .. hi)
  end
  return n
end

local function num(s, what)
  local n = tonumber(s)
  if not n or n ~= n or n < 0 or n > 1e9 then fail("invalid", what .. " " .. tostring(s) .. " is not a time") end
  return n
end

local function coord(w, i)
  return {x = int(w[i], -LIMIT, LIMIT, "x"), y = int(w[i + 1], -LIMIT, LIMIT, "y"), z = int(w[i + 2], -LIMIT, LIMIT, "z")}
end

local function pos_text(p)
  return p.x .. "," .. p.y .. "," .. p.z
end

local function words(line)
  local w = {}
  for word in line:gmatch("%S+") do w[#w + 1] = word end
  return w
end

local function node_of(w, i)
  return {name = unhex(w[i]), param1 = int(w[i + 1], 0, 255, "param1"), param2 = int(w[i + 2], 0, 255, "param2")}
end

-- One "old ..." or "new ..." line of a metadata change.
local function meta_line(meta, w)
  local side, what = w[1], w[2]
  if side == "old" then
    -- Compared as text, with items as the engine writes them.
    if what == "item" then
      local item = ItemStack(unhex(w[5])):to_string()
      meta.old[#meta.old + 1] = "item " .. w[3] .. " " .. int(w[4], 1, 65535, "slot") .. " " .. hex(item)
    elseif what == "field" or what == "list" then
      meta.old[#meta.old + 1] = table.concat(w, " ", 2)
    else
      fail("invalid", "unknown line old " .. tostring(what))
    end
    return
  end
  local new = meta.new
  if what == "field" then
    local key = unhex(w[3])
    new.fields[key] = unhex(w[4])
    if w[5] == "1" then new.private[#new.private + 1] = key end
  elseif what == "list" then
    local l = {name = unhex(w[3]), size = int(w[4], 0, 65535, "list size"), width = int(w[5], 0, 65535, "width"), items = {}}
    new.lists[#new.lists + 1] = l
    new.by_name[l.name] = l
  elseif what == "item" then
    local l = new.by_name[unhex(w[3])]
    if not l then fail("invalid", "an item of an undeclared list") end
    l.items[int(w[4], 1, l.size, "slot")] = unhex(w[5])
  else
    fail("invalid", "unknown line new " .. tostring(what))
  end
end

-- One "pold ..." or "pnew ..." line of a player request into `side`.
local function player_line(side, w)
  local what = w[2]
  if what == "hp" or what == "breath" then
    side[what] = int(w[3], 0, 65535, what)
  elseif what == "pos" then
    local p = {}
    for i, c in ipairs({"x", "y", "z"}) do
      p[c] = tonumber(w[2 + i])
      if not p[c] or p[c] ~= p[c] or math.abs(p[c]) > LIMIT then fail("invalid", "a position outside the map") end
    end
    side.pos = p
  elseif what == "look" then
    local pitch, yaw = tonumber(w[3]), tonumber(w[4])
    if not pitch or not yaw or math.abs(pitch) > 90 or math.abs(yaw) > 360 then fail("invalid", "a bad look") end
    side.look = {pitch = pitch, yaw = yaw}
  elseif what == "list" then
    side.lists[unhex(w[3])] = {size = int(w[4], 0, 65535, "list size"), width = int(w[5], 0, 65535, "width"),
      items = {}}
  elseif what == "nolist" then
    side.lists[unhex(w[3])] = false
  elseif what == "item" then
    local l = side.lists[unhex(w[3])]
    if not l then fail("invalid", "an item of an undeclared list") end
    l.items[int(w[4], 1, l.size, "slot")] = ItemStack(unhex(w[5])):to_string()
  elseif what == "attr" then
    side.attrs[unhex(w[3])] = unhex(w[4])
  elseif what == "noattr" then
    side.attrs[unhex(w[3])] = false
  elseif what == "gone" then
    side.gone = true
  else
    fail("invalid", "unknown player line " .. tostring(what))
  end
end

-- A "bold"/"bnew" line's 4096 ids (strings, node i at i + 1), from
-- words "ID" and "ID*N" (a run of N).
local function run_ids(w, what)
  local ids, n = {}, 0
  for i = 2, #w do
    local id, count = w[i]:match("^(%d+)%*(%d+)$")
    if not id then id, count = w[i], 1 else count = tonumber(count) end
    if not id:match("^%d+$") or count < 1 or n + count > 4096 then fail("invalid", what .. " needs 4096 ids") end
    for j = n + 1, n + count do ids[j] = id end
    n = n + count
  end
  if n ~= 4096 then fail("invalid", what .. " needs 4096 ids") end
  return ids
end

-- The lines of a request, in time linear in its length (a pattern that
-- looks for a newline from every position froze the server for minutes
-- on 60 KB without one), and whether text follows the last newline.
local function split_lines(text)
  local lines, at = {}, 1
  while true do
    local nl = text:find("\n", at, true)
    if not nl then break end
    lines[#lines + 1] = text:sub(at, nl - 1)
    at = nl + 1
  end
  return lines, at <= #text
end

-- What a request asks too much of (nil: nothing): more blocks than
-- MAX_BLOCKS, or new inventory lists of more than MAX_SLOTS slots.
local function over_limits(req)
  local blocks, n = {}, 0
  local function add(key)
    if not blocks[key] then blocks[key], n = true, n + 1 end
  end
  for _, list in ipairs({req.nodes, req.metas, req.timers}) do
    for _, e in ipairs(list) do
      add(math.floor(e.pos.x / 16) .. "," .. math.floor(e.pos.y / 16) .. "," .. math.floor(e.pos.z / 16))
    end
  end
  for _, list in ipairs({req.blocks, req.deletes}) do
    for _, b in ipairs(list) do add(b.block.x .. "," .. b.block.y .. "," .. b.block.z) end
  end
  if n > MAX_BLOCKS then return "it changes " .. n .. " blocks, over the " .. MAX_BLOCKS .. " a request may" end
  if #req.held > MAX_HELD then return "it asks of " .. #req.held .. " blocks, over the " .. MAX_HELD .. " it may" end
  local slots = 0
  for _, meta in ipairs(req.metas) do
    for _, l in ipairs(meta.new.lists) do slots = slots + l.size end
  end
  for _, pl in ipairs(req.players) do
    for _, l in pairs(pl.pnew.lists) do slots = slots + (l and l.size or 0) end
  end
  if slots > MAX_SLOTS then
    return "its inventory lists have " .. slots .. " slots in all, over the limit of " .. MAX_SLOTS
      .. " (worldfs_live.max_inventory_slots)"
  end
end

local function parse(text)
  if text:sub(1, 15) ~= "worldfs-live 1\n" then fail("invalid", "not a worldfs-live 1 request") end
  local lines, trailing = split_lines(text)
  if trailing or lines[#lines] ~= "end" then fail("invalid", "the request is cut short (no end line)") end
  local req = {nodes = {}, metas = {}, timers = {}, deletes = {}, blocks = {}, players = {}, releases = {},
    privs = {}, held = {}}
  local meta, del, blk, player
  for i = 2, #lines - 1 do
    local w = words(lines[i])
    local k = w[1]
    if meta and k ~= "old" and k ~= "new" and k ~= "endmeta" then fail("invalid", "meta without endmeta") end
    if k == "node" then
      req.nodes[#req.nodes + 1] = {pos = coord(w, 2), old = node_of(w, 5), new = node_of(w, 8)}
    elseif k == "meta" then
      meta = {pos = coord(w, 2), old = {}, new = {fields = {}, private = {}, lists = {}, by_name = {}}}
    elseif k == "old" or k == "new" then
      if not meta then fail("invalid", k .. " outside meta") end
      meta_line(meta, w)
    elseif k == "endmeta" then
      req.metas[#req.metas + 1] = meta
      meta = nil
    elseif k == "timer" then
      req.timers[#req.timers + 1] = {pos = coord(w, 2), timeout = num(w[5], "timeout"), elapsed = num(w[6], "elapsed")}
    elseif k == "notimer" then
      req.timers[#req.timers + 1] = {pos = coord(w, 2)}
    elseif k == "delete" then
      local b = {x = int(w[2], -2048, 2047, "bx"), y = int(w[3], -2048, 2047, "by"), z = int(w[4], -2048, 2047, "bz")}
      del = {block = b, names = {}}
      req.deletes[#req.deletes + 1] = del
    elseif k == "block" then
      local b = {x = int(w[2], -2048, 2047, "bx"), y = int(w[3], -2048, 2047, "by"), z = int(w[4], -2048, 2047, "bz")}
      blk = {block = b, old = {}, new = {}}
      req.blocks[#req.blocks + 1] = blk
    elseif k == "bname" and blk and (w[2] == "old" or w[2] == "new") then
      blk[w[2]][int(w[3], 0, 65535, "id")] = unhex(w[4])
    elseif (k == "bold" or k == "bnew") and blk then
      blk[k] = run_ids(w, k)
    elseif k == "player" then
      player = {name = unhex(w[2]), pold = {lists = {}, attrs = {}}, pnew = {lists = {}, attrs = {}}}
    elseif (k == "pold" or k == "pnew") and player then
      player_line(player[k], w)
    elseif k == "endplayer" and player then
      req.players[#req.players + 1] = player
      player = nil
    elseif k == "release" then
      req.releases[#req.releases + 1] = unhex(w[2])
    elseif k == "privs" then
      req.privs[#req.privs + 1] = {name = unhex(w[2]), granted = unhex(w[3]), revoked = unhex(w[4])}
    elseif k == "dname" and del then
      del.names[int(w[2], 0, 65535, "id")] = unhex(w[3])
    elseif k == "timed" then
      req.timed = true
    elseif k == "held" then
      req.held[#req.held + 1] = {x = int(w[2], -2048, 2047, "bx"), y = int(w[3], -2048, 2047, "by"),
        z = int(w[4], -2048, 2047, "bz")}
    elseif k == "written" then
      req.written = true
    elseif k == "dids" and del then
      if #w ~= 4097 then fail("invalid", "dids needs 4096 ids") end
      del.ids = w
    else
      fail("invalid", "unknown line " .. tostring(k))
    end
  end
  if meta then fail("invalid", "meta without endmeta") end
  if player then fail("invalid", "player without endplayer") end
  local others = #req.nodes + #req.metas + #req.timers + #req.deletes + #req.blocks
  if #req.players > 1 or (#req.players == 1 and others > 0) then
    fail("invalid", "a player request changes one player and nothing else")
  end
  -- They act at once (callbacks run, a hold ends), before any check: alone,
  -- as the mount sends them, a refused request cannot have acted.
  if #req.releases + #req.privs > 0 and (#req.releases + #req.privs > 1 or others + #req.players > 0) then
    fail("invalid", "a release or privs line comes alone in its request")
  end
  if #req.held > 0 and others + #req.players + #req.releases + #req.privs > 0 then
    fail("invalid", "held lines come alone in their request")
  end
  local too_much = over_limits(req)
  if too_much then fail("invalid", "the request is too big for one server step: " .. too_much) end
  return req
end

-- Whether param1 of a node is light, which the server recomputes (so the
-- value the mount showed may be older): paramtype "light", or a light
-- source (the lighting code writes those too).
local function light_param1(name)
  local def = core.registered_nodes[name]
  return def ~= nil and (def.paramtype == "light" or (def.light_source or 0) > 0)
end

-- Node names a request may place: registered nodes only (the server would
-- show anything else as an unknown node).
local function check_name(n, pos)
  if n.new.name ~= n.old.name and not core.registered_nodes[n.new.name] then
    fail("invalid", "node " .. pos_text(pos) .. ": '" .. n.new.name .. "' is not a registered node on this server")
  end
end

-- The changed nodes grouped by block, each group with the box around them.
local function by_block(nodes)
  local blocks, order = {}, {}
  for _, n in ipairs(nodes) do
    local p = n.pos
    local k = math.floor(p.x / 16) .. "," .. math.floor(p.y / 16) .. "," .. math.floor(p.z / 16)
    local b = blocks[k]
    if not b then
      b = {min = {x = p.x, y = p.y, z = p.z}, max = {x = p.x, y = p.y, z = p.z}, list = {}}
      blocks[k] = b
      order[#order + 1] = b
    end
    local lo, hi = b.min, b.max
    lo.x, lo.y, lo.z = math.min(lo.x, p.x), math.min(lo.y, p.y), math.min(lo.z, p.z)
    hi.x, hi.y, hi.z = math.max(hi.x, p.x), math.max(hi.y, p.y), math.max(hi.z, p.z)
    b.list[#b.list + 1] = n
  end
  return order
end

-- A block's changed nodes as the game has them now, through one
-- VoxelManip (nil where the map has no block: "ignore").
local function read_block(b)
  local vm = core.get_voxel_manip()
  local emin, emax = vm:read_from_map(b.min, b.max)
  return vm, VoxelArea:new({MinEdge = emin, MaxEdge = emax})
end

-- The manip of a group of node lines (by_block) with its three layers.
local function read_layers(b)
  local vm, area = read_block(b)
  return {vm = vm, area = area, data = vm:get_data(), p1 = vm:get_light_data(), p2 = vm:get_param2_data()}
end

-- Checks the nodes against the game, block by block; gives the groups,
-- and keeps each one's manip and layers in `read` (the request's, see
-- handle) for apply_nodes, which changes them in place: a block is read
-- once, not once to check and again to apply (the tables of 4096 entries
-- are most of a small change's cost).
local function check_nodes(req, read)
  for _, n in ipairs(req.nodes) do check_name(n, n.pos) end
  local groups = by_block(req.nodes)
  for _, b in ipairs(groups) do
    local r = read_layers(b)
    read[b] = r
    local area, data, p1, p2 = r.area, r.data, r.p1, r.p2
    for _, n in ipairs(b.list) do
      local i = area:indexp(n.pos)
      local name = core.get_name_from_content_id(data[i])
      local same = name == n.old.name and p2[i] == n.old.param2 and (p1[i] == n.old.param1 or light_param1(name))
      local done = req.written and name == n.new.name and p2[i] == n.new.param2
        and (p1[i] == n.new.param1 or light_param1(name))
      if not same and not done then
        local why = name == "ignore" and "could not be loaded" or ("is now " .. name .. " " .. p1[i] .. " " .. p2[i]
          .. " in the game, not " .. n.old.name .. " " .. n.old.param1 .. " " .. n.old.param2 .. " as the mount showed")
        fail("stale", "node " .. pos_text(n.pos) .. " " .. why)
      end
    end
  end
  return groups
end

-- A node's metadata as sorted text lines, in the request's "old" form.
local function meta_lines(pos)
  local m = core.get_meta(pos)
  local lines = {}
  for k, v in pairs(m:to_table().fields) do lines[#lines + 1] = "field " .. hex(k) .. " " .. hex(v) end
  local inv = m:get_inventory()
  for name, _ in pairs(inv:get_lists()) do
    local size = inv:get_size(name)
    lines[#lines + 1] = "list " .. hex(name) .. " " .. size .. " " .. inv:get_width(name)
    for i = 1, size do
      local s = inv:get_stack(name, i)
      if not s:is_empty() then lines[#lines + 1] = "item " .. hex(name) .. " " .. i .. " " .. hex(s:to_string()) end
    end
  end
  table.sort(lines)
  return lines
end

local function check_metas(req)
  for _, meta in ipairs(req.metas) do
    core.load_area(meta.pos)
    local want = {}
    for i, l in ipairs(meta.old) do want[i] = l end
    table.sort(want)
    local now = meta_lines(meta.pos)
    if table.concat(now, "\n") ~= table.concat(want, "\n") then
      fail("stale", "the metadata of node " .. pos_text(meta.pos) .. " was changed in the game since the mount read it")
    end
  end
end

local function block_area(b)
  return {x = b.x * 16, y = b.y * 16, z = b.z * 16}, {x = b.x * 16 + 15, y = b.y * 16 + 15, z = b.z * 16 + 15}
end

local function check_deletes(req)
  for _, d in ipairs(req.deletes) do
    if not d.ids then fail("invalid", "delete without dids") end
    local minp, maxp = block_area(d.block)
    local vm = core.get_voxel_manip()
    local emin, emax = vm:read_from_map(minp, maxp)
    local area = VoxelArea:new({MinEdge = emin, MaxEdge = emax})
    local data = vm:get_data()
    for i = 0, 4095 do
      local x, y, z = i % 16, math.floor(i / 16) % 16, math.floor(i / 256)
      local want = d.names[tonumber(d.ids[i + 2])]
      local now = core.get_name_from_content_id(data[area:index(minp.x + x, minp.y + y, minp.z + z)])
      if now ~= want then
        fail("stale", "block " .. pos_text(d.block) .. " was changed in the game since the mount read it (node "
          .. pos_text({x = minp.x + x, y = minp.y + y, z = minp.z + z}) .. " is " .. now .. ")")
      end
    end
  end
end

-- Nodes through one VoxelManip per block over the changed nodes only.
-- Whether light passes or shines differently through nodes a and b: only
-- then must the server compute the light again (the costly part).
local function light_differs(a, b)
  local da, db = core.registered_nodes[a] or {}, core.registered_nodes[b] or {}
  return da.paramtype ~= db.paramtype or (da.sunlight_propagates or false) ~= (db.sunlight_propagates or false)
    or (da.light_source or 0) ~= (db.light_source or 0)
end

-- Nodes set to their `side` ("new", or "old" to undo), in `groups` with
-- the manips and layers check_nodes kept in `read` (still the game's), or
-- read again (putting a failed request back). The light is computed
-- again only where a changed name's light properties differ (a rename
-- between two solid nodes needs none, and computing it loads and changes
-- the neighbouring blocks too), or where the change sets the light in
-- param1. Only the layers that change are handed back to the manip.
local function apply_nodes(nodes, side, groups, read)
  for _, b in ipairs(groups or by_block(nodes)) do
    local r = read and read[b] or read_layers(b)
    local area, data, p1, p2 = r.area, r.data, r.p1, r.p2
    local relight, set_names, set_p1, set_p2 = false, false, false, false
    for _, n in ipairs(b.list) do
      local i = area:indexp(n.pos)
      local to, from = n[side], n[side == "new" and "old" or "new"]
      if to.name ~= from.name then
        data[i] = core.get_content_id(to.name)
        set_names = true
        relight = relight or light_differs(to.name, from.name)
      end
      -- A new name gets the param1 the mount wrote, unless the engine
      -- lights it: the game's param1 of an old lit node was taken as it
      -- was (`check_nodes`), and the mount shows what it wrote.
      if to.param1 ~= from.param1 or (to.name ~= from.name and p1[i] ~= to.param1 and not light_param1(to.name)) then
        p1[i] = to.param1
        set_p1 = true
        relight = relight or light_param1(to.name)
      end
      if p2[i] ~= to.param2 then
        p2[i] = to.param2
        set_p2 = true
      end
    end
    if set_names then r.vm:set_data(data) end
    if set_p1 then r.vm:set_light_data(p1) end
    if set_p2 then r.vm:set_param2_data(p2) end
    r.vm:write_to_map(relight)
  end
end

-- The names a "block" entry gives node i (0-based) on `side`.
local function block_name(blk, side, i)
  local name = blk[side][tonumber(blk[side == "old" and "bold" or "bnew"][i + 1])]
  if not name then fail("invalid", "block " .. pos_text(blk.block) .. ": an id with no name") end
  return name
end

-- A "block" entry's nodes on `side` as the game's content ids, 4096 of
-- them (node i at i + 1); false for a name the game has no id for (no
-- node of the map can hold it). Names are looked up once per id: the
-- loops over 4096 nodes are what makes a rename's step long.
local function block_cids(blk, side)
  local names, ids = blk[side], blk[side == "old" and "bold" or "bnew"]
  local by_id, out = {}, {}
  for i = 1, 4096 do
    local id = ids[i]
    local cid = by_id[id]
    if cid == nil then
      local name = names[tonumber(id)]
      if not name then fail("invalid", "block " .. pos_text(blk.block) .. ": an id with no name") end
      local ok, c = pcall(core.get_content_id, name)
      cid = ok and c or false
      by_id[id] = cid
    end
    out[i] = cid
  end
  return out
end

-- The VoxelManip data index of node i (0-based) of the block at `minp`:
-- i + 1 when the manip holds just that block, as read_from_map gives.
local function block_indexer(area, minp)
  local lo, hi = area.MinEdge, area.MaxEdge
  if lo.x == minp.x and lo.y == minp.y and lo.z == minp.z and hi.x == minp.x + 15 and hi.y == minp.y + 15
    and hi.z == minp.z + 15 then
    return function(i) return i + 1 end
  end
  return function(i)
    return area:index(minp.x + i % 16, minp.y + math.floor(i / 16) % 16, minp.z + math.floor(i / 256))
  end
end

-- A whole block's manip with its names layer and the layer's indexer.
local function read_whole(blk)
  local minp, maxp = block_area(blk.block)
  local vm, area = read_block({min = minp, max = maxp})
  return {vm = vm, data = vm:get_data(), index = block_indexer(area, minp)}
end

-- Checks whole blocks against the game; keeps each one's manip in `read`
-- for apply_blocks (one read of the block, see check_nodes).
local function check_blocks(req, read)
  for _, blk in ipairs(req.blocks) do
    if not blk.bold or not blk.bnew then fail("invalid", "block without bold and bnew") end
    local was = {}
    for _, name in pairs(blk.old) do was[name] = true end
    for _, name in pairs(blk.new) do
      if not was[name] and not core.registered_nodes[name] then
        fail("invalid", "block " .. pos_text(blk.block) .. ": '" .. name .. "' is not a registered node on this server")
      end
    end
    local minp = block_area(blk.block)
    local r = read_whole(blk)
    read[blk] = r
    local data, index = r.data, r.index
    local old, new = block_cids(blk, "old"), block_cids(blk, "new")
    blk.old_cids, blk.new_cids = old, new
    for i = 0, 4095 do
      local now = data[index(i)]
      if now ~= old[i + 1] and not (req.written and now == new[i + 1]) then
        local p = {x = minp.x + i % 16, y = minp.y + math.floor(i / 16) % 16, z = minp.z + math.floor(i / 256)}
        fail("stale", "node " .. pos_text(p) .. " is now " .. core.get_name_from_content_id(now) .. " in the game, not "
          .. block_name(blk, "old", i) .. " as the mount showed")
      end
    end
  end
end

-- Whole blocks' names set to their `side` ("new", or "old" to undo), by
-- the content ids check_blocks found, through the manip `kept(blk)` gives
-- (check_blocks' read, when nothing in the request changed the block
-- since), else read again.
local function apply_blocks(blocks, side, kept)
  for _, blk in ipairs(blocks) do
    local r = kept and kept(blk) or read_whole(blk)
    local vm, data, index = r.vm, r.data, r.index
    local to = side == "new" and blk.new_cids or blk.old_cids
    local from = side == "new" and blk.old_cids or blk.new_cids
    local relight, pairs_seen = false, {}
    for i = 1, 4096 do
      local t, f = to[i], from[i]
      if t ~= f then
        if not t then fail("invalid", "block " .. pos_text(blk.block) .. ": a node name with no content id") end
        local key = t * 65536 + (f or 65535)
        if pairs_seen[key] == nil then
          pairs_seen[key] = light_differs(block_name(blk, side, i - 1), block_name(blk, side == "new" and "old" or "new", i - 1))
          relight = relight or pairs_seen[key]
        end
        data[index(i - 1)] = t
      end
    end
    vm:set_data(data)
    vm:write_to_map(relight)
  end
end

local function apply_meta(meta)
  local m = core.get_meta(meta.pos)
  local new = meta.new
  if next(new.fields) == nil and #new.lists == 0 then
    m:from_table(nil)
    return
  end
  local inv = {}
  for _, l in ipairs(new.lists) do
    local t = {}
    for s = 1, l.size do t[s] = l.items[s] or "" end
    inv[l.name] = t
  end
  m:from_table({fields = new.fields, inventory = inv})
  local ref = m:get_inventory()
  for _, l in ipairs(new.lists) do ref:set_width(l.name, l.width) end
  if #new.private > 0 then m:mark_as_private(new.private) end
end

-- A whole block's manip from check_blocks while it is still current: not
-- when the request's node lines changed the same block first.
local function kept_unless_nodes_changed(req, read)
  local touched = {}
  for _, n in ipairs(req.nodes) do
    touched[math.floor(n.pos.x / 16) .. "," .. math.floor(n.pos.y / 16) .. "," .. math.floor(n.pos.z / 16)] = true
  end
  return function(blk) return not touched[pos_text(blk.block)] and read[blk] or nil end
end

-- `groups` and `read`: what check_nodes and check_blocks read.
local function apply(req, groups, read)
  apply_nodes(req.nodes, "new", groups, read)
  apply_blocks(req.blocks, "new", kept_unless_nodes_changed(req, read))
  for _, meta in ipairs(req.metas) do apply_meta(meta) end
  for _, t in ipairs(req.timers) do
    local timer = core.get_node_timer(t.pos)
    if t.timeout then timer:set(t.timeout, t.elapsed) else timer:stop() end
  end
  for _, d in ipairs(req.deletes) do
    local minp, maxp = block_area(d.block)
    if not core.delete_area(minp, maxp) then error("core.delete_area failed for block " .. pos_text(d.block)) end
  end
end

-- Players whose joins are held (name -> until, in µs) while a mount
-- writes their saved data, and players between prejoin and join.
local holds, joining = {}, {}

core.register_on_prejoinplayer(function(name)
  local held = holds[name]
  if held and core.get_us_time() < held then
    return "The server is changing your saved data (worldfs); join again in a few seconds."
  end
  holds[name] = nil
  joining[name] = core.get_us_time()
end)

core.register_on_joinplayer(function(player)
  joining[player:get_player_name()] = nil
end)

-- A player's list as item strings, or false when it has none.
local function list_now(inv, name)
  local size = inv:get_size(name)
  if size == 0 and not inv:get_list(name) then return false end
  local items = {}
  for i = 1, size do
    local s = inv:get_stack(name, i)
    items[i] = s:is_empty() and "" or s:to_string()
  end
  return {size = size, width = inv:get_width(name), items = items}
end

local function same_list(a, b)
  if not a or not b then return a == b end
  if a.size ~= b.size or a.width ~= b.width then return false end
  for i = 1, a.size do
    if (a.items[i] or "") ~= (b.items[i] or "") then return false end
  end
  return true
end

-- What differs between the game's player and what the mount showed
-- (nil: nothing). Position and look are floats the game moves a little.
local function player_differs(p, old)
  if old.hp and p:get_hp() ~= old.hp then return "hp is now " .. p:get_hp() end
  if old.breath and p:get_breath() ~= old.breath then return "breath is now " .. p:get_breath() end
  if old.pos then
    local now = p:get_pos()
    if math.abs(now.x - old.pos.x) + math.abs(now.y - old.pos.y) + math.abs(now.z - old.pos.z) > 0.05 then
      return "position is now " .. pos_text(vector.round(now))
    end
  end
  if old.look then
    local pitch, yaw = math.deg(p:get_look_vertical()), math.deg(p:get_look_horizontal())
    if math.abs(pitch - old.look.pitch) > 0.01 or math.abs((yaw - old.look.yaw + 180) % 360 - 180) > 0.01 then
      return "look is now " .. string.format("%.2f %.2f", pitch, yaw)
    end
  end
  local inv = p:get_inventory()
  for name, l in pairs(old.lists) do
    if not same_list(list_now(inv, name), l) then return "inventory list " .. name .. " is now different" end
  end
  local meta = p:get_meta()
  for key, v in pairs(old.attrs) do
    if meta:get_string(key) ~= (v or "") then return "meta " .. key .. " is now different" end
  end
end

local function apply_player(p, new)
  if new.hp then p:set_hp(new.hp) end
  if new.breath then p:set_breath(new.breath) end
  if new.pos then p:set_pos(new.pos) end
  if new.look then
    p:set_look_vertical(math.rad(new.look.pitch))
    p:set_look_horizontal(math.rad(new.look.yaw))
  end
  local inv = p:get_inventory()
  for name, l in pairs(new.lists) do
    if l then
      inv:set_size(name, l.size)
      inv:set_width(name, l.width)
      local items = {}
      for i = 1, l.size do items[i] = l.items[i] or "" end
      inv:set_list(name, items)
    else
      inv:set_size(name, 0)
    end
  end
  local meta = p:get_meta()
  for key, v in pairs(new.attrs) do meta:set_string(key, v or "") end
end

-- A player request: through the player API when the player is in the
-- game; else "offline", holding the player's joins meanwhile.
local function handle_player(pl)
  local p = core.get_player_by_name(pl.name)
  if not p then
    local since = joining[pl.name]
    if since and core.get_us_time() - since < 30e6 then
      fail("stale", "player " .. pl.name .. " is joining the game right now; try again in a moment")
    end
    holds[pl.name] = core.get_us_time() + HOLD * 1e6
    return "offline"
  end
  if pl.pold.gone or pl.pnew.gone then
    fail("invalid", "player " .. pl.name .. " is in the game: its saved data cannot be made or removed while "
      .. "it plays (the server saves it again when the player leaves)")
  end
  local why = player_differs(p, pl.pold)
  if why then
    fail("stale", "player " .. pl.name .. " is in the game and its " .. why .. ", not what the mount showed "
      .. "(the server saves players every map save interval: read again)")
  end
  apply_player(p, pl.pnew)
end

local function split_commas(s)
  local out = {}
  for word in s:gmatch("[^,]+") do out[#out + 1] = word end
  return out
end

-- An account's privileges changed in the database: what set_player_privs
-- does besides writing it.
local function privs_changed(c)
  for _, priv in ipairs(split_commas(c.granted)) do core.run_priv_callbacks(c.name, priv, nil, "grant") end
  for _, priv in ipairs(split_commas(c.revoked)) do core.run_priv_callbacks(c.name, priv, nil, "revoke") end
  core.notify_authentication_modified(c.name)
end

-- Check everything, then change everything; an error while changing puts
-- the nodes back (the checks make that a bug, not a case).
-- Blocks this mod changed in the last save interval: key -> when (µs).
local changed = {}

local function block_key(p)
  return math.floor(p.x / 16) .. "," .. math.floor(p.y / 16) .. "," .. math.floor(p.z / 16)
end

-- Blocks the mod may change before it waits: refilled at the pace's
-- blocks a save interval, at most an eighth of that ahead, so the blocks
-- are spread over the interval and a queued request never waits long (the
-- mount withdraws one not taken in 5 s). A block changed again within the
-- interval costs nothing: the save writes it once.
local allowance = 0
local paced = pace.new(PACE_LIMITS)
-- What the mod saw since the last map save, for pace.after_save.
local seen = {changed = 0, held = false, late = false}

-- The metadata bytes a request writes, by block (fields and items).
local function meta_bytes(req)
  local bytes = {}
  for _, m in ipairs(req.metas) do
    local n = 0
    for k, v in pairs(m.new.fields) do n = n + #k + #v end
    for _, l in ipairs(m.new.lists) do
      for _, item in pairs(l.items) do n = n + #item end
    end
    local key = block_key(m.pos)
    bytes[key] = (bytes[key] or 0) + n
  end
  return bytes
end

-- The work the request gives the next save (pace.block_work).
local function note_changed(req)
  local now = core.get_us_time()
  local bytes = meta_bytes(req)
  local function note(key)
    local work = pace.block_work(not changed[key], bytes[key])
    bytes[key] = nil
    allowance = allowance - work
    seen.changed = seen.changed + work
    changed[key] = now
  end
  for _, n in ipairs(req.nodes) do note(block_key(n.pos)) end
  for _, list in ipairs({req.metas, req.timers}) do
    for _, m in ipairs(list) do note(block_key(m.pos)) end
  end
  for _, list in ipairs({req.blocks, req.deletes}) do
    for _, b in ipairs(list) do note(pos_text(b.block)) end
  end
end

-- Forgets blocks changed more than a save interval ago (saved since).
local function forget_saved()
  local before = core.get_us_time() - PACE_INTERVAL * 1e6
  for key, t in pairs(changed) do
    if t < before then changed[key] = nil end
  end
end

-- The answer to "held" lines: "held" and those of the blocks the server
-- holds in memory (core.get_node_or_nil gives nil for a block it does not).
local function held_blocks(blocks)
  local out = {"held"}
  for _, b in ipairs(blocks) do
    if core.get_node_or_nil({x = b.x * 16, y = b.y * 16, z = b.z * 16}) then
      out[#out + 1] = b.x .. "," .. b.y .. "," .. b.z
    end
  end
  return table.concat(out, " ")
end

local function handle(text, timing)
  local t0 = core.get_us_time()
  local req = parse(text)
  timing.timed = req.timed
  for _, name in ipairs(req.releases) do holds[name] = nil end
  for _, c in ipairs(req.privs) do privs_changed(c) end
  if req.players[1] then return handle_player(req.players[1]) end
  if req.held[1] then return held_blocks(req.held) end
  -- Neither changes the map: no number (see applied_seq).
  if #req.releases + #req.privs > 0 then return end
  local t1 = core.get_us_time()
  -- The manips the checks read, by the request's entries, for its apply:
  -- they go with this call.
  local read = {}
  local groups = check_nodes(req, read)
  check_blocks(req, read)
  check_metas(req)
  check_deletes(req)
  local t2 = core.get_us_time()
  local ok, err = pcall(apply, req, groups, read)
  if not ok then
    pcall(apply_nodes, req.nodes, "old")
    pcall(apply_blocks, req.blocks, "old")
    fail("failed", tostring(type(err) == "table" and err.msg or err))
  end
  note_changed(req)
  applied_seq = applied_seq + 1
  local t3 = core.get_us_time()
  if t3 - t0 >= LOG_MS * 1000 then
    core.log("action", string.format("[worldfs_live] a request of %d bytes, %d nodes, %d whole blocks took %.1f ms "
      .. "(parse %.1f, check %.1f, apply %.1f)", #text, #req.nodes, #req.blocks, (t3 - t0) / 1000, (t1 - t0) / 1000,
      (t2 - t1) / 1000, (t3 - t2) / 1000))
  end
  return "ok " .. applied_seq
end

local function answer(text, timing)
  local ok, err = pcall(handle, text, timing)
  if ok then return (err or "ok") .. "\n" end
  if type(err) == "table" then return err.kind .. " " .. err.msg:gsub("\n", " ") .. "\n" end
  return "failed " .. tostring(err):gsub("\n", " ") .. "\n"
end

local last_beat = 0

local function heartbeat(stopped, starting)
  last_beat = core.get_us_time()
  local save = tonumber(core.settings:get("server_map_save_interval")) or 5.3
  core.safe_file_write(dir .. "/server.json", core.write_json({
    protocol = 1,
    version = core.get_version().string,
    time = os.time(),
    save_interval = save,
    run = RUN,
    stopped = stopped,
    starting = starting,
    saved = followed.saved,
    max_request_bytes = MAX_BYTES,
    max_inventory_slots = MAX_SLOTS,
    timed_replies = true,
    held_query = true,
  }))
end

-- The time (seconds since 1970) a request or reply ID was made: a mount's
-- IDs start with it in nanoseconds, 20 digits.
local function id_time(id)
  if not id:match("^%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d") then return nil end
  return tonumber(id:sub(1, 11))
end

-- Whether an ID belongs to nobody alive: made over EXPIRE seconds ago, or
-- more than that ahead of this clock, or not a mount's ID at all (such a
-- file would otherwise stay forever).
local function expired(id)
  local born = id_time(id)
  return born == nil or math.abs(os.time() - born) > EXPIRE
end

-- A request file's text, read no further than MAX_BYTES + 1 bytes (its
-- size is looked at first), or nil and why not.
local function read_request(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local size = f:seek("end")
  local text = size and size <= MAX_BYTES and f:seek("set") and (f:read(MAX_BYTES + 1) or "")
  f:close()
  if not size then return nil end
  if text and #text <= MAX_BYTES then return text end
  return nil, "invalid the request is " .. math.max(size, #(text or "")) .. " bytes, over the limit of "
    .. MAX_BYTES .. " (worldfs_live.max_request_bytes)"
end

-- `step_start`: when this step began taking requests (see "timed").
local function serve_one(name, step_start)
  local id = name:match("^([%w_%-]+)%.req$") or name:match("^([%w_%-]+)%.held$")
  if not id then return end
  local path = requests .. "/" .. name
  if expired(id) then
    if os.remove(path) then
      core.log("warning", "[worldfs_live] request " .. id .. " expired (its mount is gone, or it is not a "
        .. "mount's): removed, not applied")
    end
    return
  end
  local taken = core.get_us_time()
  local text, too_big = read_request(path)
  -- Taken by removing it; a request the mount withdrew is gone.
  if (text or too_big) and os.remove(path) then
    local timing = {}
    local reply = text and answer(text, timing) or too_big .. "\n"
    if not reply:match("^ok[ \n]") and reply ~= "offline\n" then
      core.log("warning", "[worldfs_live] request " .. id .. ": " .. reply)
    end
    if timing.timed then
      local now = core.get_us_time()
      reply = reply .. string.format("took %d %d\n", taken - step_start, now - taken)
    end
    core.safe_file_write(replies .. "/" .. id, reply)
    return true
  end
end

-- Requests in the order they were made, until BUDGET is used; gives how
-- many were applied or refused.
-- Requests taken in the last step.
local served_before = 0

-- Whether this step may take a request: the blocks changed are within
-- pace, and the last step was not late with requests in it (then this
-- one is left to the server; a late step without requests is the
-- machine's, and waiting would only delay single edits).
local function room(dtime)
  if dtime > STEP * 1.5 and served_before > 0 then
    seen.late = true
    return false
  end
  return allowance > 0
end

-- Whether a request waits in the spool.
local function waiting()
  for _, name in ipairs(core.get_dir_list(requests, false) or {}) do
    if name:match("%.req$") then return true end
  end
  return false
end

-- "held" questions (ID.held files) change nothing: answered in every
-- step, whatever the pace, within the step budget (a mount that wrote
-- blocks waits for the answer).
local function serve_questions()
  local start = core.get_us_time()
  for _, name in ipairs(core.get_dir_list(requests, false) or {}) do
    if name:match("%.held$") then
      serve_one(name, start)
      if core.get_us_time() - start >= BUDGET * 1e6 then break end
    end
  end
end

local function serve_requests(dtime)
  allowance = math.min(math.max(8, paced.blocks / 8), allowance + dtime * paced.blocks / PACE_INTERVAL)
  forget_saved()
  if not room(dtime) then
    if allowance <= 0 and not seen.held and waiting() then seen.held = true end
    served_before = 0
    serve_questions()
    return 0
  end
  local names = core.get_dir_list(requests, false) or {}
  table.sort(names)
  local start, served = core.get_us_time(), 0
  for _, name in ipairs(names) do
    if served > 0 and allowance <= 0 then
      seen.held = true
      break
    end
    if served > 0 and core.get_us_time() - start >= BUDGET * 1e6 then break end
    if serve_one(name, start) then served = served + 1 end
    -- A long step is not a hung server: the mount keeps waiting.
    if core.get_us_time() - last_beat >= HEARTBEAT * 1e6 then heartbeat(false) end
  end
  served_before = served
  return served
end

-- Replies nobody read and temporary request files of a mount that died
-- while writing one; directories, which no mount makes there.
local function clean_spool()
  for _, name in ipairs(core.get_dir_list(replies, false) or {}) do
    if expired(name) then os.remove(replies .. "/" .. name) end
  end
  for _, name in ipairs(core.get_dir_list(requests, false) or {}) do
    local id = name:match("^%.([%w_%-]+)%.tmp$")
    if id and expired(id) then os.remove(requests .. "/" .. name) end
  end
  for _, d in ipairs({requests, replies}) do
    for _, name in ipairs(core.get_dir_list(d, true) or {}) do
      if core.rmdir(d .. "/" .. name, true) then
        core.log("warning", "[worldfs_live] removed the directory " .. name .. " from " .. d .. " (not a request)")
      end
    end
  end
end

-- The worst step of each heartbeat window, for steps.txt.
local steps = {}
local window = {dtime = 0, work = 0, served = 0, steps = 0, over = 0}

local function log_steps()
  steps[#steps + 1] = string.format("%.3f %.1f %.1f %d %d %d", core.get_us_time() / 1e6, window.dtime * 1000,
    window.work / 1000, window.served, window.steps, window.over)
  if #steps > STEP_LINES then table.remove(steps, 1) end
  core.safe_file_write(dir .. "/steps.txt", table.concat(steps, "\n") .. "\n")
  window = {dtime = 0, work = 0, served = 0, steps = 0, over = 0}
end

clean_spool()
-- The last heartbeat of the run before this one, kept as runs/RUN.json
-- (the 16 newest runs): what its saves wrote ("saved"), for a mount that
-- learns only now that it ended.
local function keep_last_run()
  local f = io.open(dir .. "/server.json", "rb")
  local text = f and f:read(65536)
  if f then f:close() end
  local ok, last = pcall(core.parse_json, text or "")
  if not ok or type(last) ~= "table" or type(last.run) ~= "string" or not last.run:match("^[%w%-]+$") then return end
  core.mkdir(dir .. "/runs")
  core.safe_file_write(dir .. "/runs/" .. last.run .. ".json", text)
  local runs = core.get_dir_list(dir .. "/runs", false) or {}
  table.sort(runs)
  for i = 1, #runs - 16 do os.remove(dir .. "/runs/" .. runs[i]) end
end
keep_last_run()
-- The server loads mods before it reads any block: from here on, a mount
-- writing the map itself refuses its writes (the server would save its
-- copy of a block over them), and a new mount goes through the server.
heartbeat(false, true)

-- The map saves, as the server times them (its save timer adds each
-- step's dtime after the mods' globalsteps and saves when it reaches
-- SAVE_INTERVAL), and the start of the last step, for the length of the
-- step that saved: the pace follows it (pace.lua).
local step_start = nil
-- The lengths (ms) of the last steps without a save: their median is the
-- typical step, which the pace takes off a save step (pace.lua).
local plain_steps, PLAIN_STEPS = {}, 33

-- Whether the step before saved.
local function follow_saves(dtime, now)
  local saved = saves.step(followed, dtime)
  if not saved and step_start then
    plain_steps[#plain_steps + 1] = (now - step_start) / 1000
    if #plain_steps > PLAIN_STEPS then table.remove(plain_steps, 1) end
  end
  if saved and step_start then
    local before = paced.blocks
    seen.save_ms = (now - step_start) / 1000
    seen.typical_ms = pace.typical(plain_steps)
    local what
    paced, what = pace.after_save(paced, PACE_LIMITS, seen)
    if paced.blocks ~= before then
      core.log("action", string.format("[worldfs_live] pace: %d blocks per save interval (%s: the save step "
        .. "took %.0f ms, a typical step %.0f ms, %d blocks' work changed%s)", paced.blocks, what, seen.save_ms,
        seen.typical_ms or STEP * 1000, seen.changed, seen.late and ", a late step" or ""))
    end
    seen = {changed = 0, held = false, late = false}
  end
  step_start = now
  return saved
end

local since = HEARTBEAT
core.register_globalstep(function(dtime)
  local saved = follow_saves(dtime, core.get_us_time())
  since = since + dtime
  if saved and since < HEARTBEAT then heartbeat(false) end
  if since >= HEARTBEAT then
    since = 0
    heartbeat(false)
    clean_spool()
    log_steps()
  end
  local start = core.get_us_time()
  window.served = window.served + serve_requests(dtime)
  window.work = math.max(window.work, core.get_us_time() - start)
  window.dtime = math.max(window.dtime, dtime)
  window.steps = window.steps + 1
  -- dtime sums steps in single precision: two steps of 0.05 s make
  -- 0.100000001, a step at 100 ms and not over it.
  if dtime > 0.1 + 1e-6 then window.over = window.over + 1 end
  saves.applied(followed, applied_seq)
end)

-- A setting the mod changed for the run gets the admin's value (or none)
-- back: the server writes its settings to minetest.conf at a clean
-- shutdown.
local function put_back(key, admin)
  if core.settings:get(key) ~= admin then
    if admin then
      core.settings:set(key, admin)
    else
      core.settings:remove(key)
    end
  end
end

core.register_on_shutdown(function()
  heartbeat(true)
  put_back("dedicated_server_step", ADMIN_STEP)
  put_back("server_map_save_interval", ADMIN_SAVE_INTERVAL)
end)

-- worldfs_live's pace: how much work the mod may give the server's next
-- map save, per map save interval (docs/layout.md, "Live mounts";
-- docs/performance.md; docs/design.md, "Live mounts: more saves"). Pure
-- Lua, no engine calls: init.lua feeds it what it saw at each map save,
-- and tests/live_pace.rs feeds it sequences under lua5.1.
--
-- The work is counted in blocks to save (`pace.block_work`): a changed
-- block is one, and its metadata adds one for every META_BYTES of it (the
-- save writes the whole block, so a block with a big inventory or text
-- costs what several plain ones do); nodes changed again in a block
-- already changed in the interval cost nothing (the save writes it once).
--
-- The server writes every block changed since its last save in one step,
-- so the work changed per interval sets that step's length; what a block
-- takes to write depends on the world, the machine and its load. The mod
-- sees a save only through the length of the step that saved (from its
-- start to the next step's): a save that fits in the server's step leaves
-- it at one step, so its cost shows only once it overflows. A loaded
-- machine makes every step longer: the typical step without a save
-- (`seen.typical_ms`, the median of the recent ones, `pace.typical`) over
-- one server step is the load's, not the save's, and is taken off the
-- save step before it is judged ("eff" below). The length wobbles by a few
-- tens of ms from step to step (the server thread also waits for the
-- network between steps), so the pace starts at `start` and doubles after
-- each interval whose save step took at most 1.2 steps while the pace held
-- the mod back (more work was waiting). A save step over 1.5 steps has
-- clearly overflowed: it gives the cost of the work (its length over the
-- work changed, an overestimate), and the pace drops to what fits in 0.8
-- of a step at that cost (the bound); each later long save sets the bound
-- again, from its own cost (a lighter load raises it). Up to the bound the
-- pace grows by a quarter after each short save (one overflow teaches the
-- pace its world's cost instead of one at every doubling); at the bound,
-- a save step that took no more than one server step (the save fitted in
-- the step: the cost is below what the fit assumed, the load may have
-- gone) raises bound and pace by an eighth, so the pace grows back as far
-- as the saves stay within a step, and a step the ladder overshoots is
-- at most an eighth over one. A late step of the mod's
-- halves the pace (it says nothing of the save's cost). Never under
-- `floor` or over `cap`. An interval in which the mod changed nothing puts
-- it back to `start` and forgets the cost (the next big change may come at
-- another load).

local pace = {}

-- Metadata bytes that cost a save about what one block does (a block
-- with its metadata is serialized and compressed whole; a plain one is a
-- few KB).
pace.META_BYTES = 16384

-- The work a block changed in a request adds: `first`, whether it is the
-- first change to it in this interval; `meta_bytes`, the metadata the
-- request writes in it.
function pace.block_work(first, meta_bytes)
  return (first and 1 or 0) + math.floor((meta_bytes or 0) / pace.META_BYTES)
end

-- The typical step without a save: the median of `lengths` (ms), or nil.
function pace.typical(lengths)
  if #lengths == 0 then return nil end
  local sorted = {}
  for i, v in ipairs(lengths) do sorted[i] = v end
  table.sort(sorted)
  return sorted[math.floor((#sorted + 1) / 2)]
end

-- Limits: start, floor and cap in work per interval; step_ms the
-- server's step (dedicated_server_step).
function pace.limits(start, floor, cap, step_ms)
  floor = math.max(1, math.floor(floor))
  cap = math.max(floor, math.floor(cap))
  start = math.min(cap, math.max(floor, math.floor(start)))
  return {start = start, floor = floor, cap = cap, step_ms = step_ms, short_ms = step_ms * 1.2,
    over_ms = step_ms * 1.5, fit_ms = step_ms * 0.8}
end

function pace.new(limits)
  return {blocks = limits.start, grow_to = limits.cap, bound = limits.cap}
end

-- The state after an interval ending in a map save. `seen`: save_ms, the
-- save step's length (from its start to the next step's, in ms);
-- typical_ms, the typical step without a save (nil: one server step);
-- late, whether a step after one in which the mod took requests was late;
-- changed, the work the mod changed in the interval; held, whether the
-- pace held it back. Gives the new state and what happened ("grow",
-- "fit" (to the cost a long save showed), "halve", "keep" or "reset").
function pace.after_save(state, limits, seen)
  if seen.changed == 0 then
    return pace.new(limits), "reset"
  end
  local load = math.max(0, (seen.typical_ms or limits.step_ms) - limits.step_ms)
  local eff = math.max(0, seen.save_ms - load)
  if eff > limits.over_ms then
    local bound = math.min(limits.cap, math.max(limits.floor, math.floor(limits.fit_ms * seen.changed / eff)))
    local blocks = math.min(state.blocks, bound)
    return {blocks = blocks, grow_to = blocks, bound = bound}, "fit"
  end
  if seen.late then
    local half = math.max(limits.floor, math.floor(state.blocks / 2))
    return {blocks = half, grow_to = half, bound = state.bound}, "halve"
  end
  if not (seen.held and eff <= limits.short_ms and state.blocks < limits.cap) then
    return state, "keep"
  end
  if state.blocks < state.grow_to then
    return {blocks = math.min(state.grow_to, state.blocks * 2), grow_to = state.grow_to, bound = state.bound}, "grow"
  end
  local quarter = math.min(limits.cap, math.ceil(state.blocks * 1.25))
  if state.blocks < state.bound then
    return {blocks = math.min(state.bound, quarter), grow_to = state.grow_to, bound = state.bound}, "grow"
  end
  if eff <= limits.step_ms then
    local eighth = math.min(limits.cap, math.ceil(state.blocks * 1.125))
    return {blocks = eighth, grow_to = state.grow_to, bound = eighth}, "grow"
  end
  return state, "keep"
end

return pace

-- worldfs_live's pace: how many blocks the mod may change per map save
-- interval (docs/layout.md, "Live mounts"; docs/performance.md). Pure Lua,
-- no engine calls: init.lua feeds it what it saw at each map save, and
-- tests/live_pace.rs feeds it sequences under lua5.1.
--
-- The server writes every block changed since its last save in one step,
-- so the blocks changed per interval set that step's length; how long a
-- block takes to write depends on the world, the machine and its load.
-- The mod sees a save only through the length of the step that saved
-- (from its start to the next step's): a save that fits in the server's
-- step leaves it at one step, so its cost shows only once it overflows.
-- The length wobbles by a few tens of ms from step to step (the server
-- thread also waits for the network between steps), so the pace starts at
-- `start` and doubles after each interval whose save step took at most 1.2
-- steps while the pace held the mod back (more work was waiting). A save
-- step over 1.5 steps has clearly overflowed: it gives the cost of a
-- block (its length over the blocks changed, an overestimate), and the
-- pace drops to what fits in 0.8 of a step at that cost, and never grows
-- past it again until the next reset: one overflow teaches the pace its
-- world's cost instead of an overflow at every growth. A late step of the
-- mod's halves the pace (it says nothing of the save's cost). After a drop
-- the pace grows by a quarter instead of doubling. Never under `floor` or
-- over `cap`. An interval in which the mod changed nothing puts it back to
-- `start` and forgets the cost (the next big change may come at another
-- load).

local pace = {}

-- Limits: start, floor and cap in blocks per interval; step_ms the
-- server's step (dedicated_server_step).
function pace.limits(start, floor, cap, step_ms)
  floor = math.max(1, math.floor(floor))
  cap = math.max(floor, math.floor(cap))
  start = math.min(cap, math.max(floor, math.floor(start)))
  return {start = start, floor = floor, cap = cap, short_ms = step_ms * 1.2, over_ms = step_ms * 1.5,
    fit_ms = step_ms * 0.8}
end

function pace.new(limits)
  return {blocks = limits.start, grow_to = limits.cap, bound = limits.cap}
end

-- The state after an interval ending in a map save. `seen`: save_ms, the
-- save step's length (from its start to the next step's, in ms); late,
-- whether a step after one in which the mod took requests was late;
-- changed, the blocks the mod changed in the interval; held, whether the
-- pace held it back. Gives the new state and what happened ("grow",
-- "fit" (to the cost a long save showed), "halve", "keep" or "reset").
function pace.after_save(state, limits, seen)
  if seen.changed == 0 then
    return pace.new(limits), "reset"
  end
  if seen.save_ms > limits.over_ms then
    local fits = math.floor(limits.fit_ms * seen.changed / seen.save_ms)
    local bound = math.max(limits.floor, math.min(state.bound, fits))
    local blocks = math.min(state.blocks, bound)
    return {blocks = blocks, grow_to = blocks, bound = bound}, "fit"
  end
  if seen.late then
    local half = math.max(limits.floor, math.floor(state.blocks / 2))
    return {blocks = half, grow_to = half, bound = state.bound}, "halve"
  end
  local top = math.min(limits.cap, state.bound)
  if seen.held and seen.save_ms <= limits.short_ms and state.blocks < top then
    local more = state.blocks < state.grow_to and state.blocks * 2 or math.ceil(state.blocks * 1.25)
    if state.blocks < state.grow_to then more = math.min(more, state.grow_to) end
    return {blocks = math.min(top, more), grow_to = state.grow_to, bound = state.bound}, "grow"
  end
  return state, "keep"
end

return pace

-- worldfs_live's pace: how many blocks the mod may change per map save
-- interval (docs/layout.md, "Live mounts"; docs/performance.md). Pure Lua,
-- no engine calls: init.lua feeds it what it saw at each map save, and
-- tests/live_pace.rs feeds it sequences under lua5.1.
--
-- The server writes every block changed since its last save in one step,
-- so the blocks changed per interval set that step's length; how long a
-- block takes to write depends on the machine and its load. So the pace
-- starts at `start`, doubles after each interval whose save step was short
-- while the pace held the mod back (more work was waiting), and halves
-- (down to `floor`) after a late save step or a late step of the mod's.
-- From the pace it halved to last, it grows by a quarter instead of
-- doubling, so it does not overshoot again at once. It never goes over
-- `cap`. An interval in which the mod changed nothing puts it back to
-- `start` (the next big change may come at another load).

local pace = {}

-- Limits: start, floor and cap in blocks per interval; step_ms the
-- server's step (dedicated_server_step). The save step is short when no
-- longer than 1.2 steps and late when over 1.5 (what the mod calls a late
-- step); in between the pace is kept.
function pace.limits(start, floor, cap, step_ms)
  floor = math.max(1, math.floor(floor))
  cap = math.max(floor, math.floor(cap))
  start = math.min(cap, math.max(floor, math.floor(start)))
  return {start = start, floor = floor, cap = cap, short_ms = step_ms * 1.2, late_ms = step_ms * 1.5}
end

function pace.new(limits)
  return {blocks = limits.start, grow_to = limits.cap}
end

-- The state after an interval ending in a map save. `seen`: save_ms, the
-- save step's length (from its start to the next step's, in ms); late,
-- whether a step after one in which the mod took requests was late;
-- changed, the blocks the mod changed in the interval; held, whether the
-- pace held it back. Gives the new state and what happened ("grow",
-- "halve", "keep" or "reset").
function pace.after_save(state, limits, seen)
  if seen.changed == 0 then
    return {blocks = limits.start, grow_to = limits.cap}, "reset"
  end
  if seen.late or seen.save_ms > limits.late_ms then
    local half = math.max(limits.floor, math.floor(state.blocks / 2))
    return {blocks = half, grow_to = half}, "halve"
  end
  if seen.held and seen.save_ms <= limits.short_ms and state.blocks < limits.cap then
    local more = state.blocks < state.grow_to and state.blocks * 2 or math.ceil(state.blocks * 1.25)
    if state.blocks < state.grow_to then more = math.min(more, state.grow_to) end
    return {blocks = math.min(limits.cap, more), grow_to = state.grow_to}, "grow"
  end
  return state, "keep"
end

return pace

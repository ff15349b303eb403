-- worldfs_live: which requests the server's map saves have written, so a
-- mount tells (and journals) as kept only what is in the database. Pure
-- functions (no engine calls), tested under lua5.1 by tests/live_pace.rs.
--
-- The server (5.6.1, Server::AsyncRunStep) adds each step's dtime to a
-- float (single precision) timer after the mods' globalsteps, and when it
-- reaches server_map_save_interval (read as a float) it sets the timer to
-- 0 and writes every changed block in one transaction. The mod's
-- globalstep gets the same dtime, so counting it the same way, in single
-- precision, it knows in its globalstep whether this step ends with a
-- save: the requests applied up to then are in it.
local saves = {}

-- x rounded to the nearest single-precision float (ties to even), as the
-- server's float arithmetic rounds.
function saves.f32(x)
  if x == 0 or x ~= x or x == math.huge or x == -math.huge then return x end
  local sign = x < 0 and -1 or 1
  local m, e = math.frexp(x * sign)
  local s = m * 2 ^ 24
  local r = math.floor(s)
  local frac = s - r
  if frac > 0.5 or (frac == 0.5 and r % 2 == 1) then r = r + 1 end
  return sign * math.ldexp(r, e - 24)
end

-- A follower of the saves of a server whose map save interval is
-- `interval` seconds: `saved` is the number of the last request the
-- saves have written (requests are numbered from 1 in the order they are
-- applied).
function saves.new(interval)
  return {interval = saves.f32(interval), timer = 0, saving = false, saving_through = 0, saved = 0}
end

-- At the start of a globalstep with the step's `dtime`: whether the step
-- before ended with a save (then `saved` has moved on to what it wrote).
function saves.step(s, dtime)
  local saved_last = s.saving
  if saved_last then s.saved = s.saving_through end
  s.timer = saves.f32(s.timer + dtime)
  s.saving = s.timer >= s.interval
  if s.saving then s.timer = 0 end
  return saved_last
end

-- At the end of a globalstep in which requests up to number `seq` were
-- applied: if this step ends with a save, they are in it.
function saves.applied(s, seq)
  if s.saving then s.saving_through = seq end
end

return saves

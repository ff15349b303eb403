-- Writes <world>/worldfs_nodedefs.txt once the game's nodes are registered:
-- one "<node name> <paramtype2>" line per node. `worldfs import --rotate N
-- --nodedefs FILE` reads it to turn param2 (stairs, chests, torches...) the
-- way core.place_schematic does. Enable the mod, start the world once,
-- stop it, then import.
core.register_on_mods_loaded(function()
  local names = {}
  for name in pairs(core.registered_nodes) do names[#names + 1] = name end
  table.sort(names)
  local lines = {}
  for _, name in ipairs(names) do
    lines[#lines + 1] = name .. " " .. (core.registered_nodes[name].paramtype2 or "none") .. "\n"
  end
  -- Written whole or not at all (a temporary file, then renamed), and a
  -- failure is said in the server's log, not hidden: a missing or half
  -- written file would make `worldfs import --nodedefs` turn param2 wrong.
  local path = core.get_worldpath() .. "/worldfs_nodedefs.txt"
  if core.safe_file_write(path, table.concat(lines)) then
    core.log("action", "[worldfs_nodedefs] wrote " .. #names .. " node definitions to " .. path)
  else
    core.log("error", "[worldfs_nodedefs] cannot write " .. path)
  end
end)

-- Writes <world>/worldfs_nodedefs.txt once the game's nodes are registered:
-- one "<node name> <paramtype2>" line per node. `worldfs import --rotate N
-- --nodedefs FILE` reads it to turn param2 (stairs, chests, torches...) the
-- way minetest.place_schematic does. Enable the mod, start the world once,
-- stop it, then import.
minetest.register_on_mods_loaded(function()
  local names = {}
  for name in pairs(minetest.registered_nodes) do names[#names + 1] = name end
  table.sort(names)
  local f = io.open(minetest.get_worldpath() .. "/worldfs_nodedefs.txt", "w")
  for _, name in ipairs(names) do
    f:write(name, " ", minetest.registered_nodes[name].paramtype2 or "none", "\n")
  end
  f:close()
end)

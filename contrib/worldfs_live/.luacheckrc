-- luacheck settings of the worldfs_live mod (`luacheck contrib/worldfs_live`).
std = "lua51+luajit"
-- The engine's API, read only: the mod defines no globals.
read_globals = { "core", "vector", "ItemStack", "VoxelManip", "VoxelArea" }
-- The request parsers build each record in one table constructor, a field
-- per value, which reads better whole than split; three such lines run to
-- 129 characters.
max_line_length = 130
files["init.lua"] = {
  -- answer(id, text) is given the request's id, which it does not use
  -- (yet): a signature to tidy with the mod's next change, not here.
  ignore = { "212/id" },
}

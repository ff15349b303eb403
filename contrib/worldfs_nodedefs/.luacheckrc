-- luacheck settings of the worldfs_nodedefs mod.
std = "lua51+luajit"
read_globals = { "core" }

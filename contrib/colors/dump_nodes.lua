-- Run by contrib/make-colors.sh inside the real server: every registered
-- node's name, draw type and top texture (tiles[1]), one per line.
minetest.register_on_mods_loaded(function()
	local out = {}
	for name, def in pairs(minetest.registered_nodes) do
		local t = def.tiles and def.tiles[1]
		if type(t) == "table" then
			t = t.name or t.image
		end
		if type(t) == "string" and def.drawtype ~= "airlike" then
			out[#out + 1] = name .. " " .. (def.drawtype or "normal") .. " " .. t
		end
	end
	table.sort(out)
	local f = assert(io.open(minetest.get_worldpath() .. "/nodes.txt", "w"))
	f:write(table.concat(out, "\n") .. "\n")
	f:close()
	minetest.request_shutdown()
end)

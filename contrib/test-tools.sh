# What the tests run besides cargo: sourced by contrib/test.sh (which
# installs what is missing, as root) and contrib/test-summary.sh (which
# names what is still missing). tests/tools_installed.rs checks that every
# program a test runs is in these lists.
#
# find_missing fills three arrays with what this machine lacks:
#   apt_need  Debian packages
#   pip_need  Python packages (pip)
#   npm_need  npm packages (into target/npm-oracle, never linked or shipped)
# Each line: a check, then the package that makes it pass, and why.

# shellcheck shell=bash

find_missing() {
    apt_need=()
    pip_need=()
    npm_need=()
    have() { command -v "$1" >/dev/null 2>&1; }
    # Mounts (fusermount3), and the package's Depends.
    have fusermount3 || apt_need+=(fuse3)
    # The real Luanti server and its game: the oracle that loads what
    # worldfs writes (tests/server_*.rs, tests/live_*.rs).
    [ -x /usr/games/minetestserver ] || apt_need+=(minetest-server)
    [ -d /usr/share/games/minetest/games/minetest_game ] || apt_need+=(minetest-data)
    [ -d /usr/share/games/minetest/mods/worldedit ] || apt_need+=(minetest-mod-worldedit)
    # The game's client under a virtual X server with Mesa's software GL: a
    # real player in the game (tests/live_players.rs).
    [ -x /usr/games/minetest ] || apt_need+=(minetest)
    have xvfb-run || apt_need+=(xvfb xauth)
    ls /usr/lib/*/dri/swrast_dri.so >/dev/null 2>&1 || apt_need+=(libgl1-mesa-dri)
    # The tools users edit worlds with, driven by the mount tests.
    have vim || apt_need+=(vim)
    have nano || apt_need+=(nano)
    have tmux || apt_need+=(tmux)
    have sqlite3 || apt_need+=(sqlite3)
    have python3 || apt_need+=(python3)
    # Permissions (setpriv, runuser), the systemd unit, the man pages.
    have setpriv || apt_need+=(util-linux)
    have systemd-analyze || apt_need+=(systemd)
    have man || apt_need+=(man-db)
    # PostgreSQL and Redis map backends, on loopback.
    ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || apt_need+=(postgresql)
    have redis-server || apt_need+=(redis-server)
    # Pictures: headless Chromium opens MNT/map/index.html; minetestmapper
    # is the other drawer of a world.
    have chromium || apt_need+=(chromium)
    [ -x /usr/games/minetestmapper ] || apt_need+=(minetestmapper)
    # Lua runs the mod's pace and reads prefab sets; luacheck checks both mods.
    have lua5.1 || apt_need+=(lua5.1)
    have luacheck || apt_need+=(lua-check)
    # lz4-java (Apache-2.0) and a JDK: the game's own LZ4 stream classes
    # read back the LZ4 chunks worldfs writes (tests/minecraft_more.rs).
    have java || apt_need+=(default-jdk-headless)
    [ -f /usr/share/java/lz4-java.jar ] || apt_need+=(liblz4-java)
    # Node.js runs prismarine-chunk, the oracle of tests/mcchunk.rs.
    have node || apt_need+=(nodejs)
    have npm || apt_need+=(npm)
    have pip3 || python3 -m pip --version >/dev/null 2>&1 || apt_need+=(python3-pip)
    # The daemon's thread stacks when a concurrency test hangs.
    have gdb || apt_need+=(gdb)
    # The Debian package (contrib/build-deb.sh, contrib/test-deb.sh):
    # dpkg-shlibdeps for its Depends, lintian to check it.
    have dpkg-shlibdeps || apt_need+=(dpkg-dev)
    have lintian || apt_need+=(lintian)
    # What npm builds leveldb-zlib with (below).
    have cmake || apt_need+=(cmake)
    have g++ || apt_need+=(g++)
    have make || apt_need+=(make)
    [ -f /usr/include/zlib.h ] || apt_need+=(zlib1g-dev)

    # Python oracles, run and never linked: twmap (bindings of the twmap
    # crate, AGPL) reads DDNet maps (tests/twmap_oracle.rs); anvil-parser2
    # and amulet-nbt (MIT) read Minecraft Java worlds (tests/minecraft*.rs).
    have python3 && python3 -c 'import twmap, numpy' >/dev/null 2>&1 || pip_need+=(twmap numpy)
    have python3 && python3 -c 'import anvil, amulet_nbt' >/dev/null 2>&1 || pip_need+=(anvil-parser2 amulet-nbt)

    # npm oracles (PrismarineJS, MIT): prismarine-chunk reads the chunk
    # sections worldfs writes; minecraft-data gives the light opacity of
    # 1.12 blocks to tests/scripts/mc_legacy_oracle.py.
    local modules=target/npm-oracle/node_modules
    [ -d $modules/prismarine-chunk ] || npm_need+=(prismarine-chunk@1)
    [ -d $modules/vec3 ] || npm_need+=(vec3)
    [ -d $modules/minecraft-data ] || npm_need+=(minecraft-data)
    # bedrock-provider (MIT) and leveldb-zlib (ISC; Mojang's LevelDB with
    # its zlib compressors, built from source by cmake-js with a C++
    # compiler): the reader of Bedrock worlds (tests/bedrock.rs,
    # tests/scripts/bedrock_oracle.js, which loads prismarine-nbt,
    # -registry and -block, dependencies of bedrock-provider).
    [ -d $modules/bedrock-provider ] || npm_need+=(bedrock-provider@3)
    [ -d $modules/leveldb-zlib ] || npm_need+=(leveldb-zlib@1)
    [ -d $modules/prismarine-nbt ] || npm_need+=(prismarine-nbt)
    [ -d $modules/prismarine-registry ] || npm_need+=(prismarine-registry)
    [ -d $modules/prismarine-block ] || npm_need+=(prismarine-block)
    return 0
}

# What every test requires as root (tests/common/mod.rs `skip`): each name
# is a tool find_missing installs.
REQUIRE_AS_ROOT=fuse,server,worldedit,client,root,python3,vim,nano,tmux,sqlite3,setpriv,systemd,man,pg,redis,chromium,minetestmapper,lua,luacheck,java,prismarine,minecraft-data,bedrock,twmap

// The independent reader of Bedrock worlds for tests/bedrock.rs: Mojang's
// LevelDB through leveldb-zlib (C++, the fork's zlib compressors), each
// subchunk decoded by prismarine-chunk's Bedrock SubChunk (the code
// bedrock-provider reads worlds with), NBT by prismarine-nbt.
//
//   node bedrock_oracle.js NPM_DIR keys DB    every key and value, in hex, a line each
//   node bedrock_oracle.js NPM_DIR world DB   one JSON object: chunks, subchunks, block entities, players
//
// DB must be a copy: opening a LevelDB database can write to it.
const path = require('path')
const npm = process.argv[2]
const need = (m) => require(path.join(npm, 'node_modules', m))
const { LevelDB } = need('leveldb-zlib')
const nbt = need('prismarine-nbt')

// A palette entry's label as worldfs shows it: name[key=value,...], a
// string quoted, an int as it is, a byte 0/1 as false/true.
function value (t) {
  switch (t.type) {
    case 'string': return '"' + t.value.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"'
    case 'int': return String(t.value)
    case 'byte': return t.value === 0 ? 'false' : t.value === 1 ? 'true' : t.value + 'b'
    case 'short': return t.value + 's'
    default: return JSON.stringify(t)
  }
}

function label (entry) {
  const name = entry.value.name.value
  const states = entry.value.states ? entry.value.states.value : {}
  const keys = Object.keys(states)
  return keys.length ? name + '[' + keys.map(k => k + '=' + value(states[k])).join(',') + ']' : name
}

// A subchunk's layers: each its palette's labels and the 4096 indices in
// x, z, y order (as prismarine-chunk's PalettedStorage reads them).
function subchunk (SubChunk, registry, Block, buf) {
  const version = buf[0]
  if (![1, 8, 9].includes(version)) return { version }
  const s = new SubChunk(registry, Block, {})
  s.decode(0 /* StorageType.LocalPersistence */, buf)
  // Re-read each palette's raw NBT for the labels (the decoder keeps
  // states, not the entry).
  const layers = s.blocks.map((storage, l) => {
    const indices = []
    for (let x = 0; x < 16; x++) {
      for (let z = 0; z < 16; z++) {
        for (let y = 0; y < 16; y++) indices.push(storage.get(x, y, z))
      }
    }
    const palette = s.palette[l].map(p => label({ value: { name: { value: p.name }, states: { value: p.states } } }))
    return { bits: storage.bitsPerBlock, palette, indices: indices.join(',') }
  })
  return { version, layers }
}

function chunkKey (k) {
  const n = k.length
  if (![9, 10, 13, 14].includes(n)) return null
  const x = k.readInt32LE(0)
  const z = k.readInt32LE(4)
  let dim = 0
  if (n >= 13) {
    dim = k.readInt32LE(8)
    if (dim !== 1 && dim !== 2) return null
  }
  const tag = k[n >= 13 ? 12 : 8]
  const sub = (n === 10 || n === 14) ? k.readInt8(n - 1) : null
  if ((sub === null) === (tag === 47)) return null
  if (!((tag >= 43 && tag <= 65) || tag === 118 || tag === 119)) return null
  return { dim, x, z, tag, sub }
}

async function main () {
  const [mode, dbPath] = process.argv.slice(3)
  const db = new LevelDB(dbPath, { createIfMissing: false })
  await db.open()
  const entries = []
  for await (const [key, val] of db.getIterator({ keyAsBuffer: true, valueAsBuffer: true })) {
    entries.push([Buffer.from(key), Buffer.from(val)])
  }
  await db.close()
  if (mode === 'keys') {
    process.stdout.write(entries.map(([k, v]) => k.toString('hex') + ' ' + v.toString('hex') + '\n').join(''))
    return
  }
  const registry = need('prismarine-registry')('bedrock_1.21.70')
  const Block = need('prismarine-block')(registry)
  // The decoder looks each palette entry up in minecraft-data's block
  // states, which do not know every version's: the labels come from the
  // entries themselves, so a state it does not know is no error here.
  const fromProperties = Block.fromProperties.bind(Block)
  Block.fromProperties = (...a) => { try { return fromProperties(...a) } catch (e) { return null } }
  const SubChunk = need('prismarine-chunk/src/bedrock/1.18/SubChunk')
  const out = { chunks: [], subchunks: {}, block_entities: {}, players: {} }
  for (const [k, v] of entries) {
    const text = k.toString('latin1')
    if (text === '~local_player' || text.startsWith('player_')) {
      out.players[text] = nbt.protos.little.parsePacketBuffer('nbt', v, 0).data
    }
    const c = chunkKey(k)
    if (!c) continue
    const name = `${c.dim}:${c.x},${c.z}`
    if (c.tag === 44 || c.tag === 118) out.chunks.push(name)
    if (c.tag === 47) out.subchunks[`${name}:${c.sub}`] = subchunk(SubChunk, registry, Block, v)
    if (c.tag === 49) {
      const list = []
      let at = 0
      while (at < v.length) {
        const { data, metadata } = nbt.protos.little.parsePacketBuffer('nbt', v, at)
        list.push(data)
        at += metadata.size
      }
      out.block_entities[name] = list
    }
  }
  process.stdout.write(JSON.stringify(out))
}

main().catch(e => { console.error(e); process.exit(1) })

//! The command line: `worldfs mount|check|undo|journal|demo|...`, and
//! `mount.fuse.worldfs` (the helper mount(8) runs for fstab lines of type
//! `fuse.worldfs`). Everything the binary does starts here.

mod conflicts;
mod helper;
mod live;
mod mount;
mod reports;
mod snapshot;

use reports::Undo;

use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// The version with the commit it was built from (see build.rs).
pub(crate) const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("WORLDFS_COMMIT"), ")");

#[derive(Parser)]
#[command(
    name = "worldfs",
    version = VERSION,
    about = "Mount game worlds as files: a Luanti (Minetest) world, every mapblock a directory; \
             schematics, DDNet maps and more"
)]
pub(crate) struct Cli {
    /// More log output (-v info, -vv debug, -vvv trace); RUST_LOG overrides.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    /// Less log output (errors only).
    #[arg(short, long, global = true, conflicts_with = "verbose")]
    quiet: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Mount WORLD on MOUNTPOINT: a Luanti (Minetest) world directory, a
    /// Minecraft Java world directory (level.dat and region/), a Minecraft
    /// Bedrock world directory (level.dat and db/; a .mcworld file mounts
    /// read-only), or a file: a Luanti schematic (.mts), a WorldEdit file
    /// (.we), a Teeworlds/DDNet map (.map), a Cuberite prefab set
    /// (.cubeset), Minecraft chunk data.
    ///
    /// What WORLD is, is found from its content (or named with -t KIND:
    /// luanti, minecraft, bedrock, mts, we, twmap, cubeset, mcchunk). Unmount with
    /// `fusermount3 -u MOUNTPOINT` or `umount MOUNTPOINT`, or stop a
    /// foreground mount with Ctrl-C.
    Mount {
        world: PathBuf,
        mountpoint: PathBuf,
        /// What WORLD is (luanti, minecraft, mts, we, twmap, cubeset,
        /// mcchunk); found from WORLD itself when not given.
        #[arg(short = 't', long = "type", value_name = "KIND")]
        kind: Option<String>,
        /// Comma-separated options: ro, rw, allow_other, allow_root,
        /// auto_unmount, ttl=SECONDS, entry_ttl=SECONDS, cache_mb=MIB, threads=N,
        /// nocpu_follow, nospin, nojournal (no
        /// undo journal), group_ms=N (write changes in groups, at most N ms
        /// after their close; fsync still waits for the write), guard_ms=N
        /// (look for a server holding the map at most N ms before a write;
        /// default 500), index_dir=DIR (where the name index is kept;
        /// default ~/.cache/worldfs), snapshot_store=DIR (the snapshot
        /// store `snapshots/` shows, as `snapshot --store DIR`; default
        /// WORLD/worldfs-snapshots), index_ttl=SECONDS (how long the index
        /// of a map without a change counter is trusted; default 600),
        /// plus_max=N (worlds of at most N blocks are listed with
        /// attributes on every page; default 100000, 0 never),
        /// write_mb=MIB (what all files being written and scratch files
        /// may hold in memory together; default 512),
        /// max_objects_per_block=N (the server's setting; default: its
        /// minetest.conf beside the worlds directory, else 256),
        /// through_server (on a live mount, every block of a big change
        /// goes through the server; by default the mount writes those the
        /// server does not hold to the database itself).
        #[arg(short = 'o', value_name = "OPTIONS")]
        options: Vec<String>,
        /// Stay in the foreground (do not daemonize).
        #[arg(short = 'f', long)]
        foreground: bool,
        /// Write the log to FILE (a daemon otherwise has no log).
        #[arg(long, value_name = "FILE")]
        log: Option<PathBuf>,
        /// Mount writable even while another process (a running server) has
        /// the map database open, and keep writing if one opens it later.
        #[arg(long)]
        force: bool,
    },
    /// Decode every block of WORLD and print a summary; exit status 1 if any
    /// block is corrupt, or if changes an unmount could not write are kept
    /// for the next writable mount (they are listed). A Minecraft Java
    /// world: every chunk of its region files, problems named by region
    /// file, chunk and section.
    Check {
        world: PathBuf,
        /// Print the report as JSON (for scripts).
        #[arg(long)]
        json: bool,
        /// First roll back transactions a crash left unfinished (a hot
        /// `map.sqlite-journal`, or of players, auth or mod storage, which
        /// read-only opens cannot), as SQLite does when it opens a database
        /// for writing.
        #[arg(long)]
        repair: bool,
    },
    /// Write a small demo world (a house with a chest, a sign and a furnace)
    /// into DIR.
    Demo { dir: PathBuf },
    /// Unpack a Minecraft Bedrock .mcworld (a zip the game exports) into
    /// DIR, a new folder, which then mounts writable (a .mcworld itself
    /// mounts read-only).
    Unpack { file: PathBuf, dir: PathBuf },
    /// List the changes in WORLD's undo journal, or revert some of them.
    ///
    /// Without --last, --since or --id: list the newest changes. A revert is
    /// itself a change in the journal, so it can be reverted with --id.
    /// TIME is 2026-11-22, '2026-11-22 10:30' (UTC), @UNIXSECONDS, or an
    /// age: 90s, 15m, 2h, 3d.
    Undo {
        world: PathBuf,
        /// Revert the newest N changes that are not reverted yet.
        #[arg(long, value_name = "N", conflicts_with_all = ["since", "id"])]
        last: Option<usize>,
        /// Put every block changed since TIME back as it was then.
        #[arg(long, value_name = "TIME", conflicts_with = "id")]
        since: Option<String>,
        /// Revert the change numbered K (as listed).
        #[arg(long, value_name = "K")]
        id: Option<i64>,
        /// Only show what would be reverted.
        #[arg(long)]
        dry_run: bool,
        /// Revert even blocks changed since outside the journal, or while
        /// another process has the map open.
        #[arg(long)]
        force: bool,
        /// List every change, not only the newest 20.
        #[arg(long)]
        all: bool,
        /// Print the listing as JSON (for scripts).
        #[arg(long, conflicts_with_all = ["last", "since", "id"])]
        json: bool,
    },
    /// Write the box of nodes between two corners of WORLD to OUT: a
    /// schematic (.mts, as minetest.create_schematic makes) or a WorldEdit
    /// file (.we, with node metadata). Corners are X,Y,Z node positions.
    Export {
        world: PathBuf,
        #[arg(allow_hyphen_values = true)]
        from: String,
        #[arg(allow_hyphen_values = true)]
        to: String,
        out: PathBuf,
        /// .mts: store air as "never placed" (probability 0), as decorations are made.
        #[arg(long)]
        sparse: bool,
    },
    /// Draw WORLD seen from above as one PNG (a pixel a node, north up): the
    /// highest visible node of every column, in colours from the game's
    /// textures (or --colors FILE, minetestmapper's colors.txt format).
    Map {
        world: PathBuf,
        out: PathBuf,
        /// Only the nodes between two corners X1,Z1 and X2,Z2 (default: the
        /// whole world).
        #[arg(long, num_args = 2, value_names = ["X1,Z1", "X2,Z2"], allow_hyphen_values = true)]
        area: Option<Vec<String>>,
        /// Colours from this file (name r g b per line).
        #[arg(long)]
        colors: Option<PathBuf>,
        /// No height shading (flat colours).
        #[arg(long)]
        flat: bool,
        /// N x N pixels a node (1 to 16).
        #[arg(long, default_value_t = 1)]
        scale: usize,
    },
    /// Place FILE (.mts or .we) into WORLD with its low corner at X,Y,Z, in
    /// one transaction that `worldfs undo` can take back. Refused while a
    /// server has the map open.
    Import {
        world: PathBuf,
        file: PathBuf,
        #[arg(allow_hyphen_values = true)]
        at: String,
        /// Turn a schematic 0, 90, 180 or 270 degrees (as place_schematic).
        #[arg(long, default_value_t = 0, allow_hyphen_values = true)]
        rotate: i64,
        /// Replace what is in the world (otherwise a schematic node that is
        /// not force-placed only replaces air).
        #[arg(long)]
        force: bool,
        /// `<node name> <paramtype2>` lines (see docs/layout.md) to turn
        /// param2 with --rotate.
        #[arg(long, value_name = "FILE")]
        nodedefs: Option<PathBuf>,
    },
    /// Record every block, player, account and mod storage record of WORLD
    /// as one instant, while the server runs, into its snapshot store
    /// (WORLD/worldfs-snapshots or --store DIR): blobs stored once across
    /// snapshots, each snapshot only what changed since the one before.
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Snapshot {
        #[command(subcommand)]
        action: Option<snapshot::SnapshotAction>,
        #[command(flatten)]
        take: snapshot::TakeArgs,
    },
    /// What changed in WORLD from snapshot A to snapshot B (default: the
    /// world now): the changed blocks grouped into areas (blocks that
    /// touch), each with the box of its changed nodes, the change in count
    /// of each node name and every changed inventory. Computed from the
    /// snapshots' indexes; only changed blocks are decoded.
    Diff {
        world: PathBuf,
        a: String,
        b: Option<String>,
        /// Only what changed between these corners (X,Y,Z node positions).
        #[arg(long, num_args = 2, value_names = ["X1,Y1,Z1", "X2,Y2,Z2"], allow_hyphen_values = true)]
        area: Option<Vec<String>>,
        #[command(flatten)]
        store: snapshot::StoreArg,
        /// Print the areas as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Put an area (and/or a player) of WORLD back as snapshot SNAPSHOT
    /// holds it, in one change that `worldfs undo` takes back: blocks the
    /// area covers whole byte for byte, node by node (with metadata,
    /// inventories, timers) at its edges; on a running server with the
    /// worldfs_live mod through the server (nobody is kicked).
    Restore {
        world: PathBuf,
        snapshot: String,
        /// The box of nodes to put back (corners X,Y,Z).
        #[arg(long, num_args = 2, value_names = ["X1,Y1,Z1", "X2,Y2,Z2"], allow_hyphen_values = true)]
        area: Option<Vec<String>>,
        /// A player to put back (position, hp, inventory...).
        #[arg(long, value_name = "NAME")]
        player: Option<String>,
        #[command(flatten)]
        store: snapshot::StoreArg,
    },
    /// Let a running server apply the changes of a writable mount.
    Live {
        #[command(subcommand)]
        action: LiveAction,
    },
    /// Maintain WORLD's undo journal.
    Journal {
        #[command(subcommand)]
        action: JournalAction,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish,
    /// powershell) to standard output.
    Completions { shell: clap_complete::Shell },
    /// Write the man pages (worldfs.1 and one per command) into DIR, or print
    /// worldfs.1 when no DIR is given.
    Man { dir: Option<PathBuf> },
}

#[derive(Subcommand)]
pub(crate) enum LiveAction {
    /// Copy the worldfs_live mod into WORLD/worldmods/ (loaded at the
    /// server's next start, without enabling). While the server runs it, a
    /// writable mount of WORLD hands every change to the server, which
    /// applies it in one step (docs/layout.md, "Live mounts").
    Install { world: PathBuf },
}

#[derive(Subcommand)]
pub(crate) enum JournalAction {
    /// Drop the oldest changes (they can no longer be undone) and compact.
    Prune {
        world: PathBuf,
        /// Drop changes older than TIME (see `undo --help`).
        #[arg(long, value_name = "TIME")]
        before: Option<String>,
        /// Keep only the newest changes that fit in MIB mebibytes.
        #[arg(long, value_name = "MIB")]
        max_mb: Option<u64>,
    },
}

/// Log to standard error at the level the flags ask for; every line names
/// what it concerns (the daemon's lines the world it serves).
fn init_log(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (_, 0) => "warn",
        (_, 1) => "info",
        (_, 2) => "debug",
        _ => "trace",
    };
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or(level))
        .format(|buf, record| {
            use std::io::Write;
            let world = mount::WORLD.get().map(|w| format!(" [{w}]")).unwrap_or_default();
            writeln!(
                buf,
                "{} {:<5} worldfs{world}: {}",
                crate::sys::time::format_utc(crate::sys::time::now_secs()),
                record.level(),
                record.args()
            )
        })
        .init();
}

/// `worldfs ...` (or `mount.fuse.worldfs ...`, called by mount(8)).
pub fn main() -> ExitCode {
    if helper::called_as_helper() {
        return helper::main();
    }
    let cli = Cli::parse();
    init_log(cli.verbose, cli.quiet);
    let r = match cli.command {
        Command::Mount { world, mountpoint, kind, options, foreground, log, force } => {
            mount::mount(world, kind, mountpoint, options, foreground, log, force).map(|_| true)
        }
        Command::Check { world, json, repair } => reports::check(world, json, repair),
        Command::Undo { world, last, since, id, dry_run, force, all, json } => {
            reports::undo(&world, Undo { last, since, id, dry_run, force, all, json }).map(|_| true)
        }
        Command::Journal { action: JournalAction::Prune { world, before, max_mb } } => {
            reports::prune(&world, before, max_mb).map(|_| true)
        }
        Command::Export { world, from, to, out, sparse } => (|| {
            let (a, b) = (
                crate::worlds::luanti::import_export::parse_pos(&from)?,
                crate::worlds::luanti::import_export::parse_pos(&to)?,
            );
            crate::worlds::luanti::import_export::export(&world, a, b, &out, sparse)
        })()
        .map(|lines| lines.iter().for_each(|l| println!("{l}")))
        .map(|_| true),
        Command::Import { world, file, at, rotate, force, nodedefs } => (|| {
            let defs = match nodedefs {
                Some(p) => Some(crate::transfer::rotate::NodeDefs::parse(
                    &std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?,
                )?),
                None => None,
            };
            let opts = crate::worlds::luanti::import_export::ImportOptions { rotate, force, nodedefs: defs };
            crate::worlds::luanti::import_export::import(
                &world,
                &file,
                crate::worlds::luanti::import_export::parse_pos(&at)?,
                &opts,
            )
        })()
        .map(|lines| lines.iter().for_each(|l| println!("{l}")))
        .map(|_| true),
        Command::Snapshot { action, take } => snapshot::run(action, take),
        Command::Restore { world, snapshot, area, player, store } => {
            snapshot::restore(&world, &snapshot, area.as_deref(), player.as_deref(), &store)
        }
        Command::Diff { world, a, b, area, store, json } => {
            snapshot::diff(&world, &a, b.as_deref(), area.as_deref(), &store, json)
        }
        Command::Live { action: LiveAction::Install { world } } => {
            live::install(&world).map(|lines| lines.iter().for_each(|l| println!("{l}"))).map(|_| true)
        }
        Command::Map { world, out, area, colors, flat, scale } => {
            reports::map(&world, &out, area.as_deref(), colors.as_deref(), flat, scale).map(|_| true)
        }
        Command::Unpack { file, dir } => crate::worlds::bedrock::mcworld::unpack(&file, &dir).map(|world| {
            println!(
                "{}: the Bedrock world of {}; mount it with `worldfs mount {0} MNT`",
                world.display(),
                file.display()
            );
            true
        }),
        Command::Demo { dir } => demo(&dir).map(|_| true),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "worldfs", &mut std::io::stdout());
            Ok(true)
        }
        Command::Man { dir } => man(dir).map(|_| true),
    };
    exit(r)
}

fn exit(r: Result<bool, String>) -> ExitCode {
    match r {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("worldfs: {e}");
            ExitCode::from(2)
        }
    }
}

/// `worldfs demo DIR`: write the demo world, which stays for the user, and
/// say what to try on it next.
fn demo(dir: &std::path::Path) -> Result<(), String> {
    crate::worlds::luanti::demo::write_demo(dir)?;
    let dir = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let world = shell_word(&dir.to_string_lossy());
    println!("demo world written to {world}: a house with a chest, a sign and a lit furnace");
    println!("(a Luanti world for minetest_game: `minetestserver --world {world}` serves it). Try next:");
    println!("  mkdir -p demo-mnt && worldfs mount {world} demo-mnt && ls demo-mnt   # every block a directory");
    println!("  cat demo-mnt/blocks/0,0,0/meta/3,1,3/inventory && fusermount3 -u demo-mnt   # the chest");
    println!("  worldfs map {world} demo.png --scale 8   # the world from above, as a picture");
    Ok(())
}

/// `word` quoted for a POSIX shell when it needs quoting.
fn shell_word(word: &str) -> String {
    if !word.is_empty() && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+,:=@%".contains(&b)) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The man pages, made from the same definitions as `--help`.
fn man(dir: Option<PathBuf>) -> Result<(), String> {
    let cmd = Cli::command();
    match dir {
        None => match clap_mangen::Man::new(cmd).render(&mut std::io::stdout()) {
            // `worldfs man | head` is not an error.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
            r => r.map_err(|e| e.to_string()),
        },
        Some(dir) => {
            std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
            clap_mangen::generate_to(cmd, &dir).map_err(|e| format!("{}: {e}", dir.display()))
        }
    }
}

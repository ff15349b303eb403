//! `worldfs snapshot` (take, list, verify, prune): the command line of
//! `worldfs_store::snapshots`.

use crate::worlds::luanti::snapshots::diff::NodeBox;
use clap::{Args, Subcommand};
use std::path::{Path, PathBuf};
use worldfs_store::snapshots::{Policy, Snapshots, TakeOptions};

#[derive(Args)]
pub(crate) struct StoreArg {
    /// The snapshot store's directory (default: WORLD/worldfs-snapshots).
    #[arg(long, value_name = "DIR")]
    pub(crate) store: Option<PathBuf>,
}

impl StoreArg {
    pub(crate) fn dir(&self, world: &Path) -> PathBuf {
        self.store.clone().unwrap_or_else(|| world.join(worldfs_store::snapshots::DIR_NAME))
    }
}

#[derive(Args)]
pub(crate) struct TakeArgs {
    /// The world to snapshot (a Luanti world directory).
    pub(crate) world: Option<PathBuf>,
    /// The snapshot's name (default: the time, UTC, as 2026-11-28_10-00-00).
    #[arg(long, value_name = "N")]
    pub(crate) name: Option<String>,
    #[command(flatten)]
    pub(crate) store: StoreArg,
    /// A LevelDB map a running server holds (refused without this): read
    /// map.db's files as they are now. Not one instant: the saves before
    /// it whole, a save in progress then perhaps in part.
    #[arg(long)]
    pub(crate) allow_partial_save: bool,
    /// Print what was stored as JSON.
    #[arg(long)]
    pub(crate) json: bool,
}

#[derive(Subcommand)]
pub(crate) enum SnapshotAction {
    /// List the snapshots of WORLD, oldest first.
    List {
        world: PathBuf,
        #[command(flatten)]
        store: StoreArg,
        #[arg(long)]
        json: bool,
    },
    /// Check every blob of the store against its SHA-256, and that every
    /// snapshot's index names only blobs the store holds; exit status 1 on
    /// any problem.
    Verify {
        world: PathBuf,
        #[command(flatten)]
        store: StoreArg,
    },
    /// Remove the snapshots no --keep-* rule keeps (restic's rules, UTC;
    /// the newest snapshot of each of the N newest hours, days, weeks that
    /// have one) and the blobs only they needed.
    Prune {
        world: PathBuf,
        #[command(flatten)]
        store: StoreArg,
        /// Keep the N newest snapshots.
        #[arg(long, value_name = "N", default_value_t = 0)]
        keep_last: usize,
        #[arg(long, value_name = "N", default_value_t = 0)]
        keep_hourly: usize,
        #[arg(long, value_name = "N", default_value_t = 0)]
        keep_daily: usize,
        #[arg(long, value_name = "N", default_value_t = 0)]
        keep_weekly: usize,
        /// Only say what would be removed.
        #[arg(long)]
        dry_run: bool,
        #[arg(long)]
        json: bool,
    },
}

/// `worldfs snapshot ...`.
pub(crate) fn run(action: Option<SnapshotAction>, take: TakeArgs) -> Result<bool, String> {
    match action {
        None => {
            let world = take.world.clone().ok_or("which world? worldfs snapshot WORLD (see --help)")?;
            take_snapshot(&world, &take)
        }
        Some(SnapshotAction::List { world, store, json }) => list(&store.dir(&world), json),
        Some(SnapshotAction::Verify { world, store }) => verify(&store.dir(&world)),
        Some(SnapshotAction::Prune {
            world,
            store,
            keep_last,
            keep_hourly,
            keep_daily,
            keep_weekly,
            dry_run,
            json,
        }) => {
            let policy = Policy { last: keep_last, hourly: keep_hourly, daily: keep_daily, weekly: keep_weekly };
            prune(&store.dir(&world), &policy, dry_run, json)
        }
    }
}

/// Bytes for people: "12.3 MB".
pub(crate) fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{:.1} GB", b as f64 / 1e9),
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1 << 10 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} bytes"),
    }
}

fn take_snapshot(world: &Path, args: &TakeArgs) -> Result<bool, String> {
    let w = worldfs_store::world::World::open(world)?;
    let dir = args.store.dir(world);
    let mut store = Snapshots::open(&dir, true)?;
    let started = std::time::Instant::now();
    let taken = crate::sys::time::now_secs();
    let opts = TakeOptions { partial_ok: args.allow_partial_save };
    let t = store.take(&w, args.name.as_deref(), taken, &crate::sys::time::format_utc(taken), opts)?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&t).map_err(|e| e.to_string())?);
        return Ok(true);
    }
    let i = &t.info;
    println!(
        "snapshot {} of {}: {} blocks, {} records, in {:.1} s",
        i.name,
        world.display(),
        i.blocks,
        i.records,
        started.elapsed().as_secs_f64()
    );
    println!("  map ({}): {}{}", i.map, i.consistency, if i.one_instant { "" } else { " -- not one instant" });
    for r in &t.record_reads {
        println!("  {}: {}", r.collection, r.how);
    }
    println!(
        "  added {} new blob(s) ({}) and {} index row(s); the store {} holds {}",
        i.new_blobs,
        human(i.new_bytes),
        i.index_rows,
        dir.display(),
        human(t.store_bytes)
    );
    println!("  it holds what the server had saved (at most server_map_save_interval behind the game)");
    Ok(true)
}

fn list(dir: &Path, json: bool) -> Result<bool, String> {
    let all = Snapshots::open(dir, false)?.list()?;
    if json {
        println!("{}", serde_json::to_string_pretty(&all).map_err(|e| e.to_string())?);
        return Ok(true);
    }
    println!("{:<24} {:<21} {:>10} {:>8} {:>10} one instant", "name", "taken (UTC)", "blocks", "records", "added");
    for s in &all {
        println!(
            "{:<24} {:<21} {:>10} {:>8} {:>10} {}",
            s.name,
            crate::sys::time::format_utc(s.taken),
            s.blocks,
            s.records,
            human(s.new_bytes),
            if s.one_instant { "yes" } else { "no" }
        );
    }
    Ok(true)
}

fn verify(dir: &Path) -> Result<bool, String> {
    let store = Snapshots::open(dir, false)?;
    let snapshots = store.list()?.len();
    let (problems, blobs) = store.verify(|_| {})?;
    for p in &problems {
        println!("problem: {p}");
    }
    if problems.is_empty() {
        println!(
            "{}: {blobs} blob(s) of {snapshots} snapshot(s) checked: every one matches its SHA-256, every index \
             row names a blob held",
            dir.display()
        );
    }
    Ok(problems.is_empty())
}

fn prune(dir: &Path, policy: &Policy, dry_run: bool, json: bool) -> Result<bool, String> {
    let mut store = Snapshots::open(dir, false)?;
    let before = store.disk_bytes();
    let p = store.prune(policy, dry_run)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&p).map_err(|e| e.to_string())?);
        return Ok(true);
    }
    for (name, rules) in &p.kept {
        println!("keep   {name} ({})", rules.join(", "));
    }
    for name in &p.removed {
        println!("{} {name}", if dry_run { "would remove" } else { "remove" });
    }
    if !dry_run {
        println!(
            "{} snapshot(s) removed, {} kept; {} blob(s) ({}) no snapshot needed removed; the store's file keeps \
             its size ({}) and reuses the space",
            p.removed.len(),
            p.kept.len(),
            p.blobs_removed,
            human(p.bytes_removed),
            human(before)
        );
    }
    Ok(true)
}

/// `--area X1,Y1,Z1 X2,Y2,Z2`, parsed.
pub(crate) fn parse_area(area: Option<&[String]>) -> Result<Option<NodeBox>, String> {
    match area {
        None => Ok(None),
        Some([a, b]) => {
            let p = crate::worlds::luanti::import_export::parse_pos;
            Ok(Some(NodeBox::new(p(a)?, p(b)?)))
        }
        Some(_) => Err("--area takes two corners: X1,Y1,Z1 X2,Y2,Z2".into()),
    }
}

/// `worldfs diff WORLD A [B]`.
pub(crate) fn diff(
    world: &Path,
    a: &str,
    b: Option<&str>,
    area: Option<&[String]>,
    store: &StoreArg,
    json: bool,
) -> Result<bool, String> {
    let area = parse_area(area)?;
    let dir = store.dir(world);
    let snaps = Snapshots::open(&dir, false)?;
    let from = snaps.find(a)?;
    let changes = match b {
        Some(b) => {
            let to = snaps.find(b)?;
            crate::worlds::luanti::snapshots::diff::between(&snaps, &from, &to)?
        }
        None => {
            let map = worldfs_store::world::World::open(world)?.open_store(true, false)?;
            crate::worlds::luanti::snapshots::diff::since(&snaps, &from, map.as_ref(), &dir)?
        }
    };
    let d = crate::worlds::luanti::snapshots::diff::analyze(&changes, area, a, b.unwrap_or("now"));
    let text = if json { serde_json::to_string_pretty(&d).map_err(|e| e.to_string())? + "\n" } else { d.text() };
    out(&text)?;
    Ok(true)
}

/// Write to standard output; a reader that stopped (`| head`) is no error.
fn out(text: &str) -> Result<(), String> {
    use std::io::Write;
    match std::io::stdout().write_all(text.as_bytes()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(format!("standard output: {e}")),
        _ => Ok(()),
    }
}

/// `worldfs restore WORLD SNAPSHOT --area A B --player NAME`.
pub(crate) fn restore(
    world: &Path,
    snapshot: &str,
    area: Option<&[String]>,
    player: Option<&str>,
    store: &StoreArg,
) -> Result<bool, String> {
    use crate::worlds::luanti::snapshots::restore;
    let dir = store.dir(world);
    let area = parse_area(area)?;
    if area.is_none() && player.is_none() {
        return Err("what to restore? --area X1,Y1,Z1 X2,Y2,Z2 and/or --player NAME".into());
    }
    let mut said = Vec::new();
    if let Some(a) = area {
        said.extend(restore::restore_area(world, &dir, snapshot, a)?);
    }
    if let Some(p) = player {
        said.extend(restore::restore_player(world, &dir, snapshot, p)?);
    }
    out(&said.iter().map(|l| format!("{l}\n")).collect::<String>())?;
    Ok(true)
}

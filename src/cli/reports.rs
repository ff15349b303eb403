//! Reports and maintenance: `worldfs check`, `undo`, `journal prune`; with
//! progress on a terminal and JSON for scripts.

use super::conflicts::{FORCE_HINT, go_ahead};
use crate::open::WorldKind;
use std::path::{Path, PathBuf};

/// A progress bar on standard error, drawn only when it is a terminal.
pub(crate) fn progress(total: u64, what: &'static str) -> indicatif::ProgressBar {
    let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} blocks, {per_sec}, {eta} left")
    {
        bar.set_style(style);
    }
    bar.set_message(what);
    bar
}

pub(crate) fn check(world: PathBuf, json: bool, repair: bool) -> Result<bool, String> {
    match WorldKind::of(&world) {
        WorldKind::MinecraftJava => return check_minecraft(&world, json, repair),
        WorldKind::MinecraftBedrock => return check_bedrock(&world, json, repair),
        WorldKind::Luanti => {}
    }
    if world.is_dir()
        && let Some(why) = crate::open::unknown_directory(&world)
    {
        return Err(why);
    }
    let w = worldfs_store::world::World::open(&world)?;
    if repair {
        roll_back_hot_journal(&w)?;
    }
    let store = w.open_store(true, false)?;
    let bar = progress(0, "checking");
    let report = crate::worlds::luanti::check::check(store.as_ref(), &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    let unwritten = crate::worlds::luanti::unwritten::find(&w.dir)?;
    if json {
        let mut value = report.json(store.as_ref());
        value["unwritten"] = unwritten
            .iter()
            .map(|(file, kept)| {
                let blocks: Vec<String> = kept.iter().map(|k| k.pos.to_string()).collect();
                serde_json::json!({"file": file.display().to_string(), "blocks": blocks})
            })
            .collect();
        let text = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
        println!("{text}");
    } else {
        report.print(store.as_ref(), &mut std::io::stdout()).map_err(|e| e.to_string())?;
        for (file, kept) in &unwritten {
            let blocks: Vec<String> = kept.iter().take(10).map(|k| k.pos.to_string()).collect();
            println!(
                "not written: {} block change(s) that an unmount could not write are kept in {} (blocks {}{}); \
                 the next writable mount writes them",
                kept.len(),
                file.display(),
                blocks.join(" "),
                if kept.len() > 10 { " …" } else { "" }
            );
        }
    }
    Ok(report.corrupt.is_empty() && unwritten.is_empty())
}

/// `check` of a Minecraft Java world (`worlds::minecraft::check`).
fn check_minecraft(world: &Path, json: bool, repair: bool) -> Result<bool, String> {
    let report = minecraft_check(repair, "a Minecraft world", "region files", |progress| {
        crate::worlds::minecraft::check::check(world, progress)
    })?;
    print_report(json.then(|| report.json(world)), |out| report.print(world, out))?;
    Ok(report.corrupt.is_empty())
}

/// `check` of a Minecraft Bedrock world (`worlds::bedrock::check`).
fn check_bedrock(world: &Path, json: bool, repair: bool) -> Result<bool, String> {
    let report = minecraft_check(repair, "a Bedrock world", "chunks", |progress| {
        crate::worlds::bedrock::check::check(world, progress)
    })?;
    print_report(json.then(|| report.json(world)), |out| report.print(world, out))?;
    Ok(report.corrupt.is_empty())
}

/// Refuses `--repair` (`kind` has no SQLite database), then runs `check`
/// under a progress bar that counts `counted`.
fn minecraft_check<R>(
    repair: bool,
    kind: &str,
    counted: &str,
    check: impl FnOnce(&(dyn Fn(u64, u64) + Sync)) -> Result<R, String>,
) -> Result<R, String> {
    if repair {
        return Err(format!("--repair is for Luanti worlds' SQLite databases; {kind} has none"));
    }
    let bar = progress(0, "checking");
    bar.set_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{msg}} {{wide_bar}} {{pos}}/{{len}} {counted}, {{eta}} left"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    let report = check(&|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })?;
    bar.finish_and_clear();
    Ok(report)
}

/// Prints a report: as JSON when given, else as `text` writes it.
fn print_report(
    json: Option<serde_json::Value>,
    text: impl FnOnce(&mut dyn std::io::Write) -> std::io::Result<()>,
) -> Result<(), String> {
    match json {
        Some(v) => println!("{}", serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?),
        None => text(&mut std::io::stdout()).map_err(|e| e.to_string())?,
    }
    Ok(())
}

/// `check --repair`: open each of the world's SQLite databases with a hot
/// journal (the map, players, accounts, mod storage) for writing once, so
/// that SQLite rolls back the transaction a crash left there (nothing else
/// is written), and say what was done.
fn roll_back_hot_journal(w: &worldfs_store::world::World) -> Result<(), String> {
    use worldfs_store::sqlite::{has_hot_journal, rollback_journal_path};
    let files = ["map.sqlite", "players.sqlite", "auth.sqlite", "mod_storage.sqlite"];
    let hot: Vec<std::path::PathBuf> = files.iter().map(|f| w.dir.join(f)).filter(|p| has_hot_journal(p)).collect();
    if hot.is_empty() {
        eprintln!("no interrupted transaction to roll back");
    }
    for db in hot {
        let c = rusqlite::Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_WRITE)
            .map_err(|e| format!("{}: {e}", db.display()))?;
        c.busy_timeout(std::time::Duration::from_secs(2)).map_err(|e| e.to_string())?;
        // The first read takes the lock that makes SQLite roll back.
        c.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get::<_, i64>(0))
            .map_err(|e| format!("{}: cannot roll back its journal: {e}", db.display()))?;
        drop(c);
        // If it is still there, the read-only open that follows says why.
        if !has_hot_journal(&db) {
            eprintln!("rolled back the interrupted transaction in {}", rollback_journal_path(&db).display());
        }
    }
    Ok(())
}

fn open_journal(w: &worldfs_store::world::World) -> Result<worldfs_store::journal::Journal, String> {
    let path = w.journal_path();
    worldfs_store::journal::Journal::open(&path)
        .map_err(|e| format!("{}: {e}", path.display()))?
        .ok_or_else(|| format!("{}: no undo journal (nothing was changed through worldfs)", path.display()))
}

/// What `worldfs undo` was asked.
pub(crate) struct Undo {
    pub(crate) last: Option<usize>,
    pub(crate) since: Option<String>,
    pub(crate) id: Option<i64>,
    pub(crate) dry_run: bool,
    pub(crate) force: bool,
    pub(crate) all: bool,
    pub(crate) json: bool,
}

pub(crate) fn undo(world: &Path, u: Undo) -> Result<(), String> {
    let Undo { last, since, id, dry_run, force, all, json } = u;
    use crate::worlds::undo::{Selection, execute_all, plan_all};
    if WorldKind::of(world) == WorldKind::MinecraftBedrock {
        return undo_bedrock(world, last, since, id, dry_run, force, json, all);
    }
    let minecraft = WorldKind::of(world) == WorldKind::MinecraftJava;
    let mc_records = crate::worlds::minecraft::undo::Records::new(world);
    let w = if minecraft { None } else { Some(worldfs_store::world::World::open(world)?) };
    if let Some(w) = &w {
        super::live::settle_journal(w);
    }
    let journal = match &w {
        Some(w) => open_journal(w)?,
        None => mc_records
            .journal()?
            .ok_or_else(|| format!("{}: no undo journal (nothing was changed through worldfs)", world.display()))?,
    };
    let sel = match (last, since, id) {
        (Some(n), _, _) => Selection::Last(n),
        (_, Some(t), _) => Selection::Since(crate::sys::time::parse_time(&t, crate::sys::time::now_secs())? * 1000),
        (_, _, Some(k)) => Selection::Id(k),
        _ if json => {
            let list = crate::worlds::undo::listing_json(&journal, if all { None } else { Some(20) })
                .map_err(|e| e.to_string())?;
            println!("{}", serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?);
            return Ok(());
        }
        _ => {
            print!(
                "{}",
                crate::worlds::undo::listing(&journal, if all { None } else { Some(20) }).map_err(|e| e.to_string())?
            );
            return Ok(());
        }
    };
    let Some(w) = w else { return undo_minecraft(world, &mc_records, &journal, sel, dry_run, force) };
    if !force && super::live::server_runs_mod(&w.dir) {
        return super::live::undo(&w, &journal, sel, dry_run);
    }
    let who = worldfs_store::holders::openers_after_daemons_exit(&w.map_path());
    if !who.is_empty() && !force && !dry_run {
        return Err(format!(
            "{} is open in {}; stop it (or unmount) first, or use --force",
            w.map_path().display(),
            who.join(", ")
        ));
    }
    let store = w.open_store(dry_run, !dry_run)?;
    if !force && !dry_run && w.backend() != "sqlite3" {
        worldfs_store::guard::refuse_other_users(&*store)?;
    }
    let record_stores = crate::worlds::luanti::records::open_stores(&w, dry_run, !dry_run);
    fn find<'a>(
        stores: &'a [(&'static str, Box<dyn worldfs_store::records::RecordStore>)],
        c: &str,
    ) -> Option<&'a dyn worldfs_store::records::RecordStore> {
        stores.iter().find(|(n, _)| *n == c).map(|(_, s)| s.as_ref())
    }
    let read = |c: &str, name: &str| match find(&record_stores, c) {
        Some(s) => s.get(name).map_err(|e| format!("{c}/{name}: {e}")),
        None => Err(format!("{c}: its backend cannot be opened here")),
    };
    // Blocks a running server changed for the journal and saved since.
    let planned = worldfs_store::live::journal::AsJournaled::new(store.as_ref(), journal.path(), false)
        .map_err(|e| e.to_string())?;
    let p = plan_all(&journal, &planned, Some(&read), sel)?;
    if p.records.is_empty() {
        println!("{}: {} block(s) to restore", p.note().what, p.changes.len());
    } else {
        println!("{}: {} block(s) and {} record(s) to restore", p.note().what, p.changes.len(), p.records.len());
    }
    if !go_ahead(&p.conflicts, "block(s)", FORCE_HINT, dry_run, force)? {
        return Ok(());
    }
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message(format!("restoring {} block(s)", p.changes.len()));
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let r = execute_all(store.as_ref(), &record_stores, &p);
    spinner.finish_and_clear();
    r?;
    println!("done; `worldfs undo {}` lists it, and it can be reverted with --id", world.display());
    Ok(())
}

/// `worldfs undo` of a Minecraft Java world (its chunks and files).
fn undo_minecraft(
    world: &Path,
    records: &crate::worlds::minecraft::undo::Records,
    journal: &worldfs_store::journal::Journal,
    sel: crate::worlds::undo::Selection,
    dry_run: bool,
    force: bool,
) -> Result<(), String> {
    let p = records.plan(journal, sel)?;
    println!("{}: {} chunk(s) or file(s) to restore", p.note().what, p.records.len());
    if !go_ahead(&p.conflicts, "chunk(s) or file(s)", FORCE_HINT, dry_run, force)? {
        return Ok(());
    }
    records.execute(&p, force)?;
    println!("done; `worldfs undo {}` lists it, and it can be reverted with --id", world.display());
    Ok(())
}

/// `worldfs undo` of a Minecraft Bedrock world (its database's keys and
/// level.dat).
#[allow(clippy::too_many_arguments)]
fn undo_bedrock(
    world: &Path,
    last: Option<usize>,
    since: Option<String>,
    id: Option<i64>,
    dry_run: bool,
    force: bool,
    json: bool,
    all: bool,
) -> Result<(), String> {
    use crate::worlds::bedrock::undo::Records;
    use crate::worlds::undo::Selection;
    let journal = Records::journal(world)?
        .ok_or_else(|| format!("{}: no undo journal (nothing was changed through worldfs)", world.display()))?;
    let sel = match (last, since, id) {
        (Some(n), _, _) => Selection::Last(n),
        (_, Some(t), _) => Selection::Since(crate::sys::time::parse_time(&t, crate::sys::time::now_secs())? * 1000),
        (_, _, Some(k)) => Selection::Id(k),
        _ if json => {
            let list = crate::worlds::undo::listing_json(&journal, if all { None } else { Some(20) })
                .map_err(|e| e.to_string())?;
            println!("{}", serde_json::to_string_pretty(&list).map_err(|e| e.to_string())?);
            return Ok(());
        }
        _ => {
            let text = crate::worlds::undo::listing(&journal, if all { None } else { Some(20) });
            print!("{}", text.map_err(|e| e.to_string())?);
            return Ok(());
        }
    };
    let records = Records::open(world, !dry_run)?;
    let p = records.plan(&journal, sel)?;
    println!("{}: {} key(s) or file(s) to restore", p.note().what, p.records.len());
    if !go_ahead(&p.conflicts, "key(s) or file(s)", FORCE_HINT, dry_run, force)? {
        return Ok(());
    }
    records.execute(&p)?;
    println!("done; `worldfs undo {}` lists it, and it can be reverted with --id", world.display());
    Ok(())
}

pub(crate) fn prune(world: &Path, before: Option<String>, max_mb: Option<u64>) -> Result<(), String> {
    if before.is_none() && max_mb.is_none() {
        return Err("say what to drop: --before TIME and/or --max-mb MIB".into());
    }
    let journal = if WorldKind::of(world) == WorldKind::MinecraftJava {
        crate::worlds::minecraft::undo::Records::new(world)
            .journal()?
            .ok_or_else(|| format!("{}: no undo journal (nothing was changed through worldfs)", world.display()))?
    } else if WorldKind::of(world) == WorldKind::MinecraftBedrock {
        crate::worlds::bedrock::undo::Records::journal(world)?
            .ok_or_else(|| format!("{}: no undo journal (nothing was changed through worldfs)", world.display()))?
    } else {
        open_journal(&worldfs_store::world::World::open(world)?)?
    };
    let before = match before {
        Some(t) => Some(crate::sys::time::parse_time(&t, crate::sys::time::now_secs())? * 1000),
        None => None,
    };
    let r = journal.prune(before, max_mb.map(|m| m << 20)).map_err(|e| e.to_string())?;
    println!(
        "dropped {} change(s); {} is now {} KiB (was {} KiB)",
        r.changes,
        journal.path().display(),
        r.bytes_after / 1024,
        r.bytes_before / 1024
    );
    Ok(())
}

/// `worldfs map` of a Bedrock world: its overworld from above, each block
/// in the colour of the Java block it maps to.
fn map_bedrock(world: &Path, out: &Path, area: Option<&[String]>, scale: usize) -> Result<(), String> {
    let corner = |s: &str| -> Result<(i64, i64), String> {
        let (x, z) = s.split_once(',').ok_or_else(|| format!("'{s}' is not X,Z"))?;
        let n = |v: &str| v.trim().parse::<i64>().map_err(|_| format!("'{s}' is not X,Z (whole numbers)"));
        Ok((n(x)?, n(z)?))
    };
    let area = match area {
        Some([a, b]) => {
            let ((ax, az), (bx, bz)) = (corner(a)?, corner(b)?);
            Some((ax.min(bx), az.min(bz), ax.max(bx), az.max(bz)))
        }
        Some(_) => return Err("--area takes two corners X1,Z1 X2,Z2".into()),
        None => None,
    };
    let (px, (x1, z1, x2, z2)) = crate::worlds::bedrock::map::draw(world, area, scale)?;
    let (width, height) = ((x2 - x1 + 1) as usize, (z2 - z1 + 1) as usize);
    let (px, pw, ph) = (crate::view::picture::scale(&px, width, scale), width * scale, height * scale);
    let png = crate::view::picture::encode_png(pw as u32, ph as u32, &px);
    std::fs::write(out, png).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("{}: {pw} x {ph} pixels, x {x1}..{x2}, z {z1}..{z2} (north up)", out.display());
    Ok(())
}

/// `worldfs map`: the world (or an area) drawn from above into one PNG.
pub(crate) fn map(
    world: &Path,
    out: &Path,
    area: Option<&[String]>,
    colors: Option<&Path>,
    flat: bool,
    scale: usize,
) -> Result<(), String> {
    use crate::worlds::luanti::draw::{self, Area, Columns};
    if !(1..=16).contains(&scale) {
        return Err(format!("--scale {scale}: a node is 1 to 16 pixels wide"));
    }
    if WorldKind::of(world) == WorldKind::MinecraftBedrock {
        if colors.is_some() || flat {
            return Err(format!(
                "{}: --colors and --flat are for Luanti worlds; a Bedrock world is drawn in its blocks' Java colours",
                world.display()
            ));
        }
        return map_bedrock(world, out, area, scale);
    }
    let (colors, from) = crate::view::picture::choose(world, colors)?;
    log::info!("colours from {from}");
    let w = worldfs_store::world::World::open(world)?;
    let store = w.open_store(true, false)?;
    let spinner = indicatif::ProgressBar::new_spinner();
    spinner.set_message("listing the blocks");
    spinner.enable_steady_tick(std::time::Duration::from_millis(120));
    let cols = Columns::read(store.as_ref()).map_err(|e| e.to_string())?;
    spinner.finish_and_clear();
    let corner = |s: &str| -> Result<(i64, i64), String> {
        let (x, z) = s.split_once(',').ok_or_else(|| format!("'{s}' is not X,Z"))?;
        let n = |v: &str| v.trim().parse::<i64>().map_err(|_| format!("'{s}' is not X,Z (whole numbers)"));
        Ok((n(x)?, n(z)?))
    };
    let (x1, z1, x2, z2) = match area {
        Some([a, b]) => {
            let ((ax, az), (bx, bz)) = (corner(a)?, corner(b)?);
            (ax.min(bx), az.min(bz), ax.max(bx), az.max(bz))
        }
        Some(_) => return Err("--area takes two corners X1,Z1 X2,Z2".into()),
        None => {
            let b = cols.bounds.ok_or_else(|| format!("{}: the map has no blocks", world.display()))?;
            (b.min_x, b.min_z, b.max_x, b.max_z)
        }
    };
    let (width, height) = ((x2 - x1 + 1) as usize, (z2 - z1 + 1) as usize);
    if (width * scale) * (height * scale) > 1 << 28 {
        return Err(format!(
            "{} x {} pixels is too large a picture; choose a smaller --area or --scale",
            width * scale,
            height * scale
        ));
    }
    let bar = progress(0, "drawing");
    if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} block columns, {eta} left")
    {
        bar.set_style(style);
    }
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let area = Area { west: x1, north: z2, width, height };
    let px = draw::draw(store.as_ref(), &cols, &colors, area, !flat, threads, &|n, total| {
        bar.set_length(total as u64);
        bar.set_position(n as u64);
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let (px, pw, ph) = (crate::view::picture::scale(&px, width, scale), width * scale, height * scale);
    let png = crate::view::picture::encode_png(pw as u32, ph as u32, &px);
    std::fs::write(out, png).map_err(|e| format!("{}: {e}", out.display()))?;
    println!("{}: {pw} x {ph} pixels, x {x1}..{x2}, z {z1}..{z2} (north up)", out.display());
    Ok(())
}

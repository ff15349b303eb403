//! The files a live mount and the worldfs_live mod share in
//! `WORLD/worldfs-live/` (contrib/worldfs_live/init.lua): the server's
//! heartbeat, and requests handed over as atomically renamed files, each
//! answered by a reply file. Only the mount's process writes requests; the
//! mod takes one by removing it, so a request the mount withdrew first (on
//! a timeout) is never applied.

use super::reply_watch::{ReplyWatch, Ticket};
use super::timing::{self, Part};
use crate::{BlockPos, Result, StoreError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// The directory in the world the mod and the mount share.
pub const DIR: &str = "worldfs-live";

/// A heartbeat older than this means the server is stopped or hung (the
/// mod rewrites it every 0.5 s; a loaded machine may delay a step).
pub const FRESH: Duration = Duration::from_secs(3);

/// A heartbeat written while the server starts (its mods load, before it
/// steps or reads a block) counts as running for this long: a start can
/// take a while before the first step refreshes it.
pub const STARTING: Duration = Duration::from_secs(60);

/// How long a change waits for the server to take it; then it is withdrawn
/// and nothing is changed.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a change the server took (removed from the spool) waits for
/// its answer: the mod answers in the step that took it, so only a server
/// stopped or hung in that very step gets here.
const TAKEN_TIMEOUT: Duration = Duration::from_secs(5);

/// What the mod last said about the server.
#[derive(Clone, Debug, PartialEq)]
pub enum ServerState {
    /// No heartbeat: the mod is not installed, or the server never ran it.
    Absent,
    /// The server shut down cleanly.
    Stopped,
    /// The heartbeat is this old: the server is stopped (killed) or hung.
    Silent(Duration),
    /// Running the mod: its engine version, map save interval, which run
    /// of the server this is (new at every start), and how big a request
    /// it takes.
    Running {
        /// The engine's version string, e.g. "5.6.1".
        version: String,
        /// `server_map_save_interval`, in seconds: how often the server
        /// writes changed blocks to the database.
        save_interval: f64,
        /// Which run of the server this is (new at every start).
        run: String,
        /// How big a request the mod takes.
        limits: Limits,
        /// Whether the mod says how long a request took when asked
        /// (`timing`; older mods do not).
        timed: bool,
        /// Whether the mod answers which blocks the server holds (`held`;
        /// older mods do not).
        held_query: bool,
    },
}

/// How big a request the mod takes (its settings, published in
/// server.json): a request within them is applied well inside a server
/// step. The defaults are the mod's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    /// `worldfs_live.max_request_bytes`.
    pub request_bytes: usize,
    /// `worldfs_live.max_inventory_slots`: the slots of the new inventory
    /// lists of one request in all.
    pub inventory_slots: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { request_bytes: 1 << 20, inventory_slots: 4096 }
    }
}

impl Limits {
    /// Why `text` is too big a request for the server (None: it is not);
    /// `what` names the change ("block 1,2,3").
    pub fn refusal(&self, what: &str, text: &str) -> Option<String> {
        let (bytes, slots) = (text.len(), super::request::inventory_slots(text));
        let (size, limit, setting) = if bytes > self.request_bytes {
            (format!("{bytes} bytes as a request to the server"), self.request_bytes, "max_request_bytes")
        } else if slots > self.inventory_slots {
            (format!("inventory lists of {slots} slots"), self.inventory_slots, "max_inventory_slots")
        } else {
            return None;
        };
        Some(format!(
            "{what}: the change is {size}, over the running server's limit of {limit} (worldfs_live.{setting} \
             in its minetest.conf): the server applies a change in one step, and this one would stall it; \
             nothing written. Make the change in smaller parts, raise the limit, or stop the server to make it"
        ))
    }
}

impl ServerState {
    /// For messages: why changes cannot go through the server now.
    pub fn why_not(&self) -> String {
        match self {
            ServerState::Absent => "the server does not run the worldfs_live mod".into(),
            ServerState::Stopped => "the server has shut down".into(),
            ServerState::Silent(age) => {
                format!(
                    "the server's worldfs_live heartbeat is {:.1} s old (the server is stopped or hung)",
                    age.as_secs_f64()
                )
            }
            ServerState::Running { .. } => "the server runs the worldfs_live mod".into(),
        }
    }
}

/// The mod's server.json (or a run's last one, kept in `runs/`).
#[derive(serde::Deserialize)]
pub(super) struct Heartbeat {
    /// A number (Lua's JSON writer writes 1 as 1.0).
    protocol: f64,
    version: String,
    save_interval: f64,
    #[serde(default)]
    pub(super) stopped: bool,
    /// New at every server start (older mods wrote none).
    #[serde(default)]
    pub(super) run: String,
    /// Written while the server starts, before its first step.
    #[serde(default)]
    pub(super) starting: bool,
    /// The number of the last request the run's map saves wrote (older
    /// mods wrote none).
    #[serde(default)]
    pub(super) saved: Option<f64>,
    /// The mod's limits (older mods wrote none: the defaults).
    #[serde(default)]
    max_request_bytes: Option<f64>,
    #[serde(default)]
    max_inventory_slots: Option<f64>,
    /// Whether a request may ask for its timing (older mods: no).
    #[serde(default)]
    timed_replies: bool,
    /// Whether the mod answers "held" requests (older mods: no).
    #[serde(default)]
    held_query: bool,
}

/// A heartbeat file and how old it is.
pub(super) fn read_heartbeat(path: &Path) -> Option<(std::result::Result<Heartbeat, ()>, Duration)> {
    let (Ok(text), Ok(meta)) = (std::fs::read(path), std::fs::metadata(path)) else {
        return None;
    };
    let age = meta.modified().ok().and_then(|m| SystemTime::now().duration_since(m).ok()).unwrap_or_default();
    Some((serde_json::from_slice::<Heartbeat>(&text).map_err(|_| ()), age))
}

/// Whether a heartbeat this old says its server runs (see `STARTING`).
pub(super) fn fresh(h: &Heartbeat, age: Duration) -> bool {
    age <= FRESH || (h.starting && age < STARTING)
}

/// What the heartbeat file of the world at `world` says now.
pub fn server_state(world: &Path) -> ServerState {
    let Some((heartbeat, age)) = read_heartbeat(&world.join(DIR).join("server.json")) else {
        return ServerState::Absent;
    };
    match heartbeat {
        Ok(h) if h.stopped => ServerState::Stopped,
        Ok(h) if !fresh(&h, age) => ServerState::Silent(age),
        Ok(h) if h.protocol == 1.0 => {
            let d = Limits::default();
            let limits = Limits {
                request_bytes: h.max_request_bytes.map_or(d.request_bytes, |n| n as usize),
                inventory_slots: h.max_inventory_slots.map_or(d.inventory_slots, |n| n as usize),
            };
            ServerState::Running {
                version: h.version,
                save_interval: h.save_interval,
                run: h.run,
                limits,
                timed: h.timed_replies,
                held_query: h.held_query,
            }
        }
        // Another protocol, or a file cut short: not a server we can talk to.
        _ => ServerState::Absent,
    }
}

/// Whether this process may hand requests to the server of `world`, and
/// nobody else may: the requests directory must be writable here and not
/// writable by every user (the mod checks every request, but a request
/// from anyone is still a change by anyone).
pub fn check_spool(world: &Path) -> std::result::Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let dir = world.join(DIR).join("requests");
    let meta = std::fs::metadata(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    if meta.permissions().mode() & 0o002 != 0 {
        return Err(format!(
            "{} is writable by every user, so anyone could change the world through the server; \
             `chmod o-w` it (the server's user and the mount's owner need to write there)",
            dir.display()
        ));
    }
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: a NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        return Err(format!(
            "{}: not writable by this user ({}); give the mount's owner write access (a group shared \
             with the server's user)",
            dir.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// A request the server applied: the run that applied it, and its number
/// in that run (None from a mod that numbers none), which `settle` matches
/// with the run's map saves.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    /// The server run that applied it.
    pub run: String,
    /// Its number in that run.
    pub seq: Option<u64>,
}

/// A request handed to the server, its answer not read yet.
pub struct Sent {
    request: PathBuf,
    reply: PathBuf,
    run: String,
    /// When it was renamed into the spool, if the mod times its answer.
    timed: Option<SystemTime>,
}

impl Sent {
    /// The run of the server it was handed to.
    pub fn run(&self) -> String {
        self.run.clone()
    }
}

/// How many blocks one "held" request asks of (the mod takes 8192).
const HELD_AT_ONCE: usize = 4096;

/// "BX,BY,BZ" as the mod names a block.
fn parse_block(w: &str) -> Option<BlockPos> {
    let mut it = w.split(',').map(|n| n.parse::<i16>().ok());
    let pos = BlockPos::new(it.next()??, it.next()??, it.next()??);
    it.next().is_none().then_some(pos)
}

/// The request side of the spool of one world.
pub struct Spool {
    world: PathBuf,
    counter: AtomicU64,
    /// Wakes `wait_reply` when an answer is written.
    replies: ReplyWatch,
}

/// An answer file as read: its first line (the answer), the mod's times
/// ("took QUEUED_US HANDLED_US", when asked), and when it was written
/// (its file's time) and read.
struct Reply {
    text: String,
    took: Option<(u64, u64)>,
    written: Option<SystemTime>,
    read: SystemTime,
}

impl Reply {
    fn new(text: &str, written: Option<SystemTime>, read: SystemTime) -> Reply {
        let mut lines = text.lines();
        let answer = lines.next().unwrap_or_default();
        let took = lines.find_map(|l| {
            let mut w = l.strip_prefix("took ")?.split(' ');
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        });
        Reply { text: format!("{answer}\n"), took, written, read }
    }
}

/// The answer to `sent`, counted in `timing` when the mod timed it.
fn answer(sent: &Sent, r: Reply) -> Result<String> {
    if let (Some(renamed), Some(written), Some((queued, handled))) = (sent.timed, r.written, r.took) {
        timing::answered(renamed, written, r.read, queued, handled);
    }
    reply_error(&r.text)?;
    Ok(r.text)
}

/// The mod's answer to one request.
fn reply_error(reply: &str) -> Result<()> {
    let (kind, why) = reply.trim_end().split_once(' ').unwrap_or((reply.trim_end(), ""));
    match kind {
        // "offline": a player request for a player not in the game (see
        // `LiveRecords`); the server then holds the player's joins.
        "ok" | "offline" | "held" => Ok(()),
        "stale" => Err(StoreError::Conflict(format!(
            "the running server refused the change: {why}; nothing written: read it again and redo the change"
        ))),
        "invalid" => Err(StoreError::Refused(format!("the running server refused the change: {why}; nothing written"))),
        _ => Err(StoreError::Backend(format!(
            "the running server could not apply the change ({reply:?}); nothing written"
        ))),
    }
}

impl Spool {
    /// The spool of the world at `world`: requests and answers go through
    /// its [`DIR`] directory, where the mod reads and writes them.
    pub fn new(world: &Path) -> Spool {
        let replies = ReplyWatch::new(&world.join(DIR).join("replies"));
        Spool { world: world.to_path_buf(), counter: AtomicU64::new(0), replies }
    }

    fn requests(&self) -> PathBuf {
        self.world.join(DIR).join("requests")
    }

    /// Hand `text` to the server and wait for its answer: Ok (with the run
    /// of the server and the request's number) when it applied the change;
    /// an error when it refused it, or when it did not take it in time
    /// (then it is withdrawn: nothing changed).
    pub fn send(&self, text: &str) -> Result<Applied> {
        let sent = self.submit(text)?;
        self.wait(&sent)
    }

    /// Hand `text` to the server without waiting (`wait` gives the answer):
    /// several requests may be in the spool at once, and the mod applies
    /// as many as fit in a step.
    pub fn submit(&self, text: &str) -> Result<Sent> {
        self.submit_as(text, "req")
    }

    /// `submit`, the request file's name ending in `.SUFFIX`: "held" for a
    /// question the mod answers in every step, whatever its pace.
    fn submit_as(&self, text: &str, suffix: &str) -> Result<Sent> {
        let state = server_state(&self.world);
        let ServerState::Running { run, limits, timed, .. } = state else {
            return Err(StoreError::Unreachable(format!("{}; nothing written", state.why_not())));
        };
        if let Some(why) = limits.refusal("the change", text) {
            return Err(StoreError::Refused(why));
        }
        let start = Instant::now();
        let id = self.next_id();
        let request = self.requests().join(format!("{id}.{suffix}"));
        let tmp = self.requests().join(format!(".{id}.tmp"));
        let io = |e: std::io::Error, p: &Path| StoreError::Backend(format!("{}: {e}", p.display()));
        let text = match text.strip_prefix(super::request::HEADER) {
            Some(rest) if timed => format!("{}timed\n{rest}", super::request::HEADER),
            _ => text.to_string(),
        };
        std::fs::write(&tmp, text).map_err(|e| io(e, &tmp))?;
        std::fs::rename(&tmp, &request).map_err(|e| io(e, &request))?;
        timing::add(Part::Spool, start.elapsed());
        let reply = self.world.join(DIR).join("replies").join(&id);
        Ok(Sent { request, reply, run, timed: timed.then(SystemTime::now) })
    }

    /// The answer to a submitted request: Ok (with the server's run and
    /// the request's number, "ok N") when it was applied; withdrawn
    /// (nothing changed) when it was not taken in time.
    pub fn wait(&self, sent: &Sent) -> Result<Applied> {
        let reply = self.wait_answer(sent)?;
        let seq = reply.strip_prefix("ok ").and_then(|n| n.trim().parse().ok());
        Ok(Applied { run: sent.run.clone(), seq })
    }

    /// The server's answer to a submitted request when it is not a
    /// refusal: "ok", or "offline" (see `ask`).
    fn wait_answer(&self, sent: &Sent) -> Result<String> {
        let reply = match self.wait_reply(&sent.reply, REPLY_TIMEOUT)? {
            Some(r) => answer(sent, r)?,
            None => self.withdraw(&sent.request, &sent.reply)?,
        };
        Ok(reply.trim_end().to_string())
    }

    /// Hand `text` to the server and give its answer: "ok" (applied) or
    /// "offline" (a player request whose player is not in the game); a
    /// refusal, or no answer, is an error as with `send`.
    pub fn ask(&self, text: &str) -> Result<String> {
        let sent = self.submit(text)?;
        self.wait_answer(&sent)
    }

    /// Which of `blocks` the server holds in memory now (the mod's answer
    /// to "held" lines, given in one of its steps: see
    /// contrib/worldfs_live/init.lua). Asked of `HELD_AT_ONCE` blocks a
    /// request, all submitted before the first answer is read.
    pub fn held(&self, blocks: &[BlockPos]) -> Result<Vec<BlockPos>> {
        let mut sent = Vec::new();
        for part in blocks.chunks(HELD_AT_ONCE) {
            sent.push(self.submit_as(&super::request::held_request(part), "held")?);
        }
        let mut held = Vec::new();
        for s in &sent {
            let reply = self.wait_answer(s)?;
            let words = reply.strip_prefix("held").ok_or_else(|| {
                StoreError::Backend(format!("the server answered {reply:?} when asked which blocks it holds"))
            })?;
            for w in words.split_whitespace() {
                held.push(parse_block(w).ok_or_else(|| {
                    StoreError::Backend(format!("the server named a block it holds as {w:?}, not BX,BY,BZ"))
                })?);
            }
        }
        Ok(held)
    }

    /// Take back a submitted request nobody will wait for: None when it
    /// was withdrawn before the server took it; else the server's answer.
    pub fn cancel(&self, sent: &Sent) -> Result<Option<Applied>> {
        match std::fs::remove_file(&sent.request) {
            Ok(()) => Ok(None),
            Err(_) => self.wait(sent).map(Some),
        }
    }

    /// A unique, ordered request name: time, process, counter.
    fn next_id(&self) -> String {
        let nanos = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default().as_nanos();
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{nanos:020}-{}-{n}", std::process::id())
    }

    /// The reply, once written (and then removed); None after `timeout`,
    /// or at once when the server stops or goes silent.
    fn wait_reply(&self, reply: &Path, timeout: Duration) -> Result<Option<Reply>> {
        let start = Instant::now();
        let mut checked = Instant::now();
        let mut waited: Option<Ticket> = None;
        loop {
            let ticket = self.replies.ticket();
            if let Ok(text) = std::fs::read_to_string(reply) {
                let read = SystemTime::now();
                let stamped = std::fs::metadata(reply).and_then(|m| m.modified()).ok();
                let seen = waited.as_ref().and_then(|t| self.replies.woken_at(t));
                let written = stamped.max(seen);
                let _ = std::fs::remove_file(reply);
                return Ok(Some(Reply::new(&text, written, read)));
            }
            if start.elapsed() >= timeout {
                return Ok(None);
            }
            if checked.elapsed() >= Duration::from_millis(250) {
                checked = Instant::now();
                if !matches!(server_state(&self.world), ServerState::Running { .. }) {
                    return Ok(None);
                }
            }
            self.replies.wait(&ticket, timeout.saturating_sub(start.elapsed()));
            waited = Some(ticket);
        }
    }

    /// No answer in time: take the request back. If the server took it
    /// meanwhile, wait a little more for its answer.
    fn withdraw(&self, request: &Path, reply: &Path) -> Result<String> {
        let state = server_state(&self.world);
        match std::fs::remove_file(request) {
            Ok(()) => Err(StoreError::Unreachable(format!(
                "the server did not take the change within {} s ({}); it was withdrawn, nothing written",
                REPLY_TIMEOUT.as_secs(),
                state.why_not()
            ))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match self.wait_reply(reply, TAKEN_TIMEOUT)? {
                Some(r) => reply_error(&r.text).map(|_| r.text),
                None => Err(StoreError::Backend(format!(
                    "the server took the change but gave no answer ({}): a server that was killed lost it \
                     with everything it had not saved, one that is hung may still apply it; read the file \
                     again once the server runs",
                    server_state(&self.world).why_not()
                ))),
            },
            Err(e) => Err(StoreError::Backend(format!("{}: {e}", request.display()))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn beat(dir: &Path, json: &str) {
        std::fs::create_dir_all(dir.join(DIR).join("requests")).unwrap();
        std::fs::create_dir_all(dir.join(DIR).join("replies")).unwrap();
        std::fs::write(dir.join(DIR).join("server.json"), json).unwrap();
    }

    /// As the mod writes it (Lua's JSON writer).
    const RUNNING: &str = r#"{"protocol":1.0,"run":"1795732290-42","save_interval":5.2999999999999998,"stopped":false,"time":1795732290.0,"version":"5.6.1"}"#;

    #[test]
    fn heartbeat_states() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(server_state(d.path()), ServerState::Absent);
        beat(d.path(), RUNNING);
        assert_eq!(
            server_state(d.path()),
            ServerState::Running {
                version: "5.6.1".into(),
                save_interval: 5.3,
                run: "1795732290-42".into(),
                limits: Limits::default(),
                timed: false,
                held_query: false,
            }
        );
        beat(d.path(), r#"{"protocol":2.0,"save_interval":5.3,"stopped":false,"time":1.0,"version":"9"}"#);
        assert_eq!(server_state(d.path()), ServerState::Absent, "another protocol");
        beat(d.path(), r#"{"protocol":1,"version":"5.6.1","time":1,"save_interval":5.3,"stopped":true}"#);
        assert_eq!(server_state(d.path()), ServerState::Stopped);
        beat(d.path(), RUNNING);
        let old = std::fs::File::options().write(true).open(d.path().join(DIR).join("server.json")).unwrap();
        old.set_modified(SystemTime::now() - Duration::from_secs(10)).unwrap();
        assert!(matches!(server_state(d.path()), ServerState::Silent(a) if a >= Duration::from_secs(9)));
    }

    /// A server that never takes the request: withdrawn, nothing left in the
    /// spool, and the error says so.
    #[test]
    fn an_untaken_request_is_withdrawn() {
        let d = tempfile::tempdir().unwrap();
        beat(d.path(), RUNNING);
        // Keep the heartbeat fresh, as a hung server's would not be: the
        // wait is then the full timeout.
        let e = Spool::new(d.path()).send("worldfs-live 1\nend\n").unwrap_err();
        assert!(matches!(&e, StoreError::Unreachable(m) if m.contains("withdrawn")), "{e}");
        let left: Vec<_> = std::fs::read_dir(d.path().join(DIR).join("requests")).unwrap().collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_spool_everyone_may_write_is_refused() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        assert!(check_spool(d.path()).is_err(), "no spool");
        beat(d.path(), RUNNING);
        check_spool(d.path()).unwrap();
        let dir = d.path().join(DIR).join("requests");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        assert!(check_spool(d.path()).unwrap_err().contains("writable by every user"));
    }

    #[test]
    fn replies_become_errors() {
        assert!(reply_error("ok\n").is_ok());
        assert!(reply_error("offline\n").is_ok());
        assert!(
            matches!(reply_error("stale node 1,2,3 is now x\n"), Err(StoreError::Conflict(m)) if m.contains("node 1,2,3"))
        );
        assert!(matches!(reply_error("invalid 'x:y' is not registered\n"), Err(StoreError::Refused(_))));
        assert!(matches!(reply_error("failed boom\n"), Err(StoreError::Backend(_))));
    }

    #[test]
    fn a_stopped_server_is_not_asked() {
        let d = tempfile::tempdir().unwrap();
        let e = Spool::new(d.path()).send("worldfs-live 1\nend\n").unwrap_err();
        assert!(matches!(&e, StoreError::Unreachable(m) if m.contains("does not run the worldfs_live mod")), "{e}");
    }

    /// Blocks as the mod names them in a "held" answer.
    #[test]
    fn held_blocks_are_read_as_the_mod_names_them() {
        assert_eq!(parse_block("1,-2,2047"), Some(BlockPos::new(1, -2, 2047)));
        for bad in ["1,2", "1,2,3,4", "a,2,3", "", "1,,3", "99999,0,0"] {
            assert_eq!(parse_block(bad), None, "{bad:?}");
        }
        assert!(reply_error("held 1,2,3 4,5,6\n").is_ok());
    }
}

"""The mechanical switch from std::sync locks to parking_lot in src/."""
import os, re, sys

root = sys.argv[1]
LOCKS = ["Condvar", "Mutex", "MutexGuard", "RwLock", "RwLockReadGuard", "RwLockWriteGuard"]

def fix_use(s):
    def one(m):
        items = [x.strip() for x in m.group(1).split(",") if x.strip()]
        keep = [x for x in items if x not in LOCKS]
        moved = [x for x in items if x in LOCKS]
        if not moved:
            return m.group(0)
        out = []
        if keep:
            out.append("use std::sync::" + (keep[0] if len(keep) == 1 else "{" + ", ".join(keep) + "}") + ";")
        out.append("use parking_lot::" + (moved[0] if len(moved) == 1 else "{" + ", ".join(moved) + "}") + ";")
        return "\n".join(out)
    s = re.sub(r"use std::sync::\{([^}]*)\};", one, s)
    s = re.sub(r"use std::sync::(\w+);", lambda m: one(re.match(r"(.*)", m.group(1))) if m.group(1) in LOCKS else m.group(0), s)
    return s

for dirpath, _, files in os.walk(root):
    for f in files:
        if not f.endswith(".rs"):
            continue
        p = os.path.join(dirpath, f)
        s0 = s = open(p).read()
        s = fix_use(s)
        for t in LOCKS:
            s = s.replace(f"std::sync::{t}", f"parking_lot::{t}")
        s = re.sub(r"\.lock\(\)(\s*)\.unwrap\(\)", r".lock()", s)
        s = s.replace(".lock().unwrap_or_else(|e| e.into_inner())", ".lock()")
        s = s.replace(".read().unwrap_or_else(|e| e.into_inner())", ".read()")
        s = s.replace(".write().unwrap_or_else(|e| e.into_inner())", ".write()")
        if s != s0:
            open(p, "w").write(s)
            print("changed", p)

def edit(path, pairs):
    p = os.path.join(root, path)
    s = open(p).read()
    for old, new in pairs:
        assert s.count(old) == 1, (path, old)
        s = s.replace(old, new)
    open(p, "w").write(s)

edit("luanti/queue.rs", [
    ("""        let inner = self.inner.lock();
        let due = |i: &Inner| {""", """        let mut inner = self.inner.lock();
        let due = |i: &Inner| {"""),
    ("        let (inner, _) = self.wake.wait_timeout(inner, max_wait).unwrap();\n",
     "        self.wake.wait_for(&mut inner, max_wait);\n"),
])
edit("luanti/guard.rs", [
    ("        let (scan, timeout) = done.wait_timeout_while(scan, WAIT, |s| s.running).unwrap();\n",
     "        let timeout = done.wait_while_for(&mut scan, |s| s.running, WAIT);\n"),
])
edit("store/sqlite_pool.rs", [
    ("""        idle = match next {
            Some(due) => shared.wake.wait_timeout(idle, due.saturating_duration_since(now)).unwrap().0,
            None => {
                idle.janitor_asleep = true;
                shared.wake.wait(idle).unwrap()
            }
        };""", """        match next {
            Some(due) => {
                shared.wake.wait_for(&mut idle, due.saturating_duration_since(now));
            }
            None => {
                idle.janitor_asleep = true;
                shared.wake.wait(&mut idle);
            }
        }"""),
])

//! Who counts as holding the map when worldfs decides whether it may
//! write: a read-only opener does not (it overwrites nothing), and a
//! daemon whose mount was just unmounted is waited for, not refused.

use crate::common;

use common::mount::Mounted;
use std::process::Command;

/// `-o ro` of a world beside a writable mount of it: the writable mount
/// starts and writes, and the read-only daemon is named nowhere.
#[test]
fn a_read_only_mount_does_not_block_a_writable_one() {
    require_fuse!("a_read_only_mount_does_not_block_a_writable_one");
    let world = common::demo_world();
    let ro = Mounted::new(world.path(), &["ro"]);
    let rw = Mounted::new(world.path(), &["guard_ms=0"]);
    rw.ok("echo default:mese > $MNT/node/0,0,0");
    assert!(rw.ok("cat $MNT/node/0,0,0").starts_with("default:mese"));
    assert_eq!(rw.refusals(), "", "{}", rw.log_text());
    // The read-only mount still reads (and sees the change once its TTL passes).
    assert!(ro.ok("cat $MNT/blocks/0,0,0/info").contains("version = 29"));
}

/// `umount MNT; worldfs mount WORLD MNT` at once, as a service restart
/// does: the old daemon is still writing what it held when the new mount
/// starts; the new one waits for it instead of refusing.
#[test]
fn mount_right_after_umount_waits_for_the_old_daemon() {
    require_fuse!("mount_right_after_umount_waits_for_the_old_daemon");
    let world = common::demo_world();
    for round in 0..3 {
        let old = Mounted::new(world.path(), &["group_ms=60000"]);
        old.ok(&format!("echo default:mese > $MNT/node/{round},0,0"));
        let mnt = old.mnt.clone();
        let gone = Command::new("umount").arg(&mnt).status().unwrap();
        assert!(gone.success());
        old.mount_again_at_once(round);
        // The old daemon's held change reached the map, and the new mount shows it.
        let shown = std::fs::read_to_string(mnt.join(format!("node/{round},0,0"))).unwrap();
        assert!(shown.starts_with("default:mese"), "{shown}");
        assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
        drop(old);
    }
}

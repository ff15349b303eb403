//! Refusals on the write path through a real mount (issue 26): what a
//! shell, sed, cp and python see when a change is refused, and parallel
//! `sed -i` on one file.

use crate::common;

use common::mount::Mounted;

/// The name of node X,Y,Z through the mount.
fn node_name(m: &Mounted, at: &str) -> String {
    m.ok(&format!("cat $MNT/node/{at}")).split(' ').next().unwrap().to_string()
}

/// Eight `sed -i` at once on one `nodes` file, each changing its own line,
/// used to exit 0 with most of their edits lost. Now every sed that exits 0
/// has its edit in the world; the others report the refused rename.
#[test]
fn parallel_sed_i_processes_lose_no_edit_of_one_that_exited_0() {
    require_fuse!("parallel_sed_i_processes_lose_no_edit_of_one_that_exited_0");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let xs: Vec<i32> = (2..10).collect();
    for x in &xs {
        assert_ne!(node_name(&m, &format!("{x},6,5")), "default:stone");
    }
    let script = xs
        .iter()
        .map(|x| {
            format!(
                "( sed -i 's/^{x} 6 5 [^ ]*/{x} 6 5 default:stone/' $MNT/blocks/0,0,0/nodes 2>$MNT/../err{x}; \
                 echo $? > $MNT/../status{x} ) &"
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    m.ok(&format!("{script}\nwait"));
    let mut exited_0 = 0;
    for x in &xs {
        let status = std::fs::read_to_string(m.dir.path().join(format!("status{x}"))).unwrap();
        let err = std::fs::read_to_string(m.dir.path().join(format!("err{x}"))).unwrap();
        if status.trim() == "0" {
            exited_0 += 1;
            assert_eq!(node_name(&m, &format!("{x},6,5")), "default:stone", "sed {x} exited 0: its edit is in");
        } else {
            assert!(err.contains("Stale file handle"), "sed {x} failed loudly: {err}");
        }
    }
    assert!(exited_0 > 0, "at least one sed gets in");
    // One line per refusal (the kernel retries a rename that got ESTALE; it is recorded once).
    assert_eq!(m.refusals().lines().count(), xs.len() - exited_0, "{}", m.refusals());
}

/// `cp B/nodes B/.t; echo ... > node/X,Y,Z; mv B/.t B/nodes` used to exit 0
/// and undo the node write.
#[test]
fn mv_of_a_copy_over_a_file_changed_since_fails_with_estale() {
    require_fuse!("mv_of_a_copy_over_a_file_changed_since_fails_with_estale");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let (code, _, err) =
        m.sh("cd $MNT/blocks/0,0,0 && cp nodes .t && echo 'default:stone 0 0' > $MNT/node/5,3,5 && mv .t nodes");
    assert_ne!(code, 0, "mv reports the refusal");
    assert!(err.contains("Stale file handle"), "{err}");
    assert_eq!(node_name(&m, "5,3,5"), "default:stone", "the node write stands");
    assert!(m.refusals().contains(".t was made from the file as it was"), "{}", m.refusals());
    // An ordinary sed -i and a cp over the file work.
    m.ok("sed -i 's/^6 3 5 [^ ]*/6 3 5 default:stone/' $MNT/blocks/0,0,0/nodes");
    assert_eq!(node_name(&m, "6,3,5"), "default:stone");
    m.ok("cp $MNT/blocks/0,0,0/.t $MNT/../copy && cp $MNT/../copy $MNT/blocks/0,0,0/nodes");
    assert_ne!(node_name(&m, "6,3,5"), "default:stone", "cp of other content over a file is an overwrite");
}

/// `cat B/nodes | sed ... > B/.t; echo ... > node/X,Y,Z; mv B/.t B/nodes`
/// used to exit 0 and undo the node write: the scratch file's writer (sed)
/// never read `nodes`, its pipeline's reader (cat) did. With job control
/// (`set -m`) the pipeline is a process group of its own.
#[test]
fn mv_of_a_pipelines_output_over_a_file_changed_since_fails_with_estale() {
    require_fuse!("mv_of_a_pipelines_output_over_a_file_changed_since_fails_with_estale");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let pipeline = "cat nodes | sed 's/^6 3 5 [^ ]*/6 3 5 default:stone/' > .t";
    for job_control in ["set -m", "set +m"] {
        let script = format!(
            "{job_control}; cd $MNT/blocks/0,0,0 && {pipeline} && echo 'default:stone 0 0' > $MNT/node/5,3,5 && mv .t nodes"
        );
        let (code, _, err) = m.sh(&script);
        assert_ne!(code, 0, "{job_control}: mv reports the refusal");
        assert!(err.contains("Stale file handle"), "{job_control}: {err}");
        assert_eq!(node_name(&m, "5,3,5"), "default:stone", "{job_control}: the node write stands");
        assert_ne!(node_name(&m, "6,3,5"), "default:stone", "{job_control}: the pipeline's edit is not in");
        m.ok("echo 'default:dirt 0 0' > $MNT/node/5,3,5 && rm $MNT/blocks/0,0,0/.t");
    }
    // Nothing in between: accepted.
    m.ok(&format!("set -m; cd $MNT/blocks/0,0,0 && {pipeline} && mv .t nodes"));
    assert_eq!(node_name(&m, "6,3,5"), "default:stone");
}

/// bash ignores close() for redirections: a refused `echo bad > file`
/// exited 0 silently. A one-line file's whole line is judged at write.
#[test]
fn echo_of_a_bad_line_into_a_node_file_fails_in_bash() {
    require_fuse!("echo_of_a_bad_line_into_a_node_file_fails_in_bash");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let before = m.ok("cat $MNT/node/5,3,5");
    let (code, _, err) = m.sh("echo 'nonsense:::' > $MNT/node/5,3,5");
    assert_ne!(code, 0);
    assert!(err.contains("write error: Invalid argument"), "{err}");
    assert_eq!(m.ok("cat $MNT/node/5,3,5"), before, "nothing changed");
    assert!(m.refusals().contains("node/5,3,5"), "{}", m.refusals());
    m.ok("echo 'default:stone' > $MNT/node/5,3,5");
    assert_eq!(node_name(&m, "5,3,5"), "default:stone");
}

/// `cp /dev/null names` (open O_TRUNC, close without a write) used to
/// succeed while the empty file was refused; python's close too.
#[test]
fn truncating_and_closing_unwritten_fails_at_close() {
    require_fuse!("truncating_and_closing_unwritten_fails_at_close");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let before = m.ok("cat $MNT/blocks/0,0,0/names");
    let (code, _, err) = m.sh("cp /dev/null $MNT/blocks/0,0,0/names");
    assert_ne!(code, 0, "cp reports the failed close");
    assert!(err.contains("Invalid argument"), "{err}");
    if common::mount::which("python3").is_some() {
        let (code, _, err) = m.sh("python3 -c \"open('$MNT/blocks/0,0,0/param1', 'w').close()\"");
        assert_ne!(code, 0, "{err}");
        assert!(err.contains("Invalid argument"), "{err}");
    } else {
        common::skip("truncating_and_closing_unwritten_fails_at_close", "python3", "python3 is not installed");
    }
    assert_eq!(m.ok("cat $MNT/blocks/0,0,0/names"), before);
    common::wait_until("the refusals in write-errors", || {
        let r = m.refusals();
        r.contains("blocks/0,0,0/names") && r.contains("blocks/0,0,0/param1")
    });
}

/// fstat of a file being written gave the old size until close.
#[test]
fn fstat_after_o_trunc_gives_what_was_written() {
    require_fuse!("fstat_after_o_trunc_gives_what_was_written");
    if common::mount::which("python3").is_none() {
        common::skip("fstat_after_o_trunc_gives_what_was_written", "python3", "python3 is not installed");
        return;
    }
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let out = m.ok("python3 -c \"
import os
f = open('$MNT/blocks/0,0,0/nodes', 'w')
a = os.fstat(f.fileno()).st_size
f.write('0 0 0 default:stone 0 0\\n'); f.flush()
b = os.fstat(f.fileno()).st_size
print(a, b, flush=True)
os._exit(0)
\"");
    assert_eq!(out.lines().next().unwrap_or(""), "0 24", "{out}");
}

/// README, "In scripts, check every write": bash's built-in `echo` into a
/// file judged at `close()` exits 0 although the close refused the write
/// (bash ignores what close returns); `/bin/echo` exits 1, and the
/// README's script (set -e, /bin/echo, sed -i, then write-errors compared)
/// stops at a refused write and runs through good ones.
#[test]
fn builtin_echo_misses_a_refused_close_and_the_readme_script_does_not() {
    require_fuse!("builtin_echo_misses_a_refused_close_and_the_readme_script_does_not");
    let world = common::demo_world();
    let m = Mounted::new(world.path(), &[]);
    let names = "$MNT/blocks/0,0,0/names";
    let before = m.ok(&format!("cat {names}"));
    // A names file that leaves the block's other ids without names.
    let (code, _, err) = m.sh(&format!("echo '0 air' > {names}"));
    assert_eq!(code, 0, "bash's echo saw the refusal after all: {err}");
    assert_eq!(m.ok(&format!("cat {names}")), before, "nothing changed");
    assert!(m.refusals().contains("blocks/0,0,0/names"), "{}", m.refusals());
    let (code, _, err) = m.sh(&format!("/bin/echo '0 air' > {names}"));
    assert_ne!(code, 0, "/bin/echo missed the refused close");
    assert!(err.contains("Invalid argument"), "{err}");
    // Refusals are the lines of write-errors that are not warnings (such
    // as a name found nowhere else in the world: written, and noted).
    let script = |write: &str| {
        format!(
            "set -e\nrefusals() {{ grep -vc ': warning: ' $MNT/write-errors || true; }}\nbefore=$(refusals)\n\
             {write}\nsed -i 's/ default:cobble$/ default:stonebrick/' {names}\n\
             [ \"$(refusals)\" = \"$before\" ]\necho done"
        )
    };
    let sign = "$MNT/blocks/0,0,0/meta/3,2,8/fields/text";
    assert_eq!(m.ok(&script(&format!("/bin/echo 'Hello' > {sign}"))), "done\n");
    assert!(m.ok(&format!("cat {names}")).contains(" default:stonebrick\n"));
    assert!(m.ok("cat $MNT/write-errors").contains("default:stonebrick' appears nowhere else"), "the warning");
    assert_eq!(m.ok(&format!("cat {sign}")), "Hello\n");
    // A refused write: the script stops there, before the sed.
    let (code, out, _) = m.sh(&script(&format!("/bin/echo '0 air' > {names}")));
    assert_ne!(code, 0, "the script went on: {out}");
    assert_eq!(out, "", "the script went on past the refused write");
}

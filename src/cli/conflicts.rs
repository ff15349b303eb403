//! How `worldfs undo` reports a plan's conflicts (blocks or records changed
//! outside worldfs since), offline and through a running server alike.

/// How to revert conflicting blocks anyway, for `go_ahead`'s message.
pub(super) const FORCE_HINT: &str = "--force reverts them anyway";

/// Prints an undo plan's conflicts and says whether to carry it out: an
/// error when there are conflicts and no --force (ending with `hint`, how
/// to revert them anyway), false for a dry run.
pub(super) fn go_ahead<C: std::fmt::Display>(
    conflicts: &[C],
    what: &str,
    hint: &str,
    dry_run: bool,
    force: bool,
) -> Result<bool, String> {
    for c in conflicts {
        eprintln!("conflict: {c}");
    }
    if !conflicts.is_empty() && !force {
        return Err(format!(
            "{} {what} were changed outside worldfs since; nothing reverted ({hint})",
            conflicts.len()
        ));
    }
    Ok(!dry_run)
}

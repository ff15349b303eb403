//! The whole map as one instant, for `worldfs snapshot`: one REPEATABLE
//! READ transaction (PostgreSQL's snapshot isolation: every row as of the
//! transaction's first query, whatever the server commits meanwhile, and
//! without blocking it), read through a cursor a page at a time.

use super::{PgStore, row_pos};
use crate::{BlockPos, Consistency, Result, StoreError};

/// Rows fetched from the cursor at a time.
const ROWS_PER_FETCH: i32 = 4096;

pub(super) fn read_consistent(
    store: &PgStore,
    each: &mut dyn FnMut(BlockPos, &[u8]) -> Result<()>,
) -> Result<Consistency> {
    let mut failed: Option<StoreError> = None;
    store.with(|c, small| {
        let mut tx =
            c.build_transaction().isolation_level(postgres::IsolationLevel::RepeatableRead).read_only(true).start()?;
        let portal = tx.bind("SELECT posX, posY, posZ, data FROM blocks", &[])?;
        'fetch: loop {
            let rows = tx.query_portal(&portal, ROWS_PER_FETCH)?;
            if rows.is_empty() {
                break;
            }
            for r in &rows {
                let data: &[u8] = r.get(3);
                if data.is_empty() {
                    continue;
                }
                if let Err(e) = each(row_pos(r, small), data) {
                    failed = Some(e);
                    break 'fetch;
                }
            }
        }
        tx.commit()
    })?;
    match failed {
        Some(e) => Err(e),
        None => Ok(Consistency {
            one_instant: true,
            how: "one REPEATABLE READ transaction (the server's commits go on meanwhile)".into(),
        }),
    }
}

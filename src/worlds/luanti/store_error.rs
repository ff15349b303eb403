//! What a store's failure is for the filesystem core: the errno a program
//! gets and the message it sees. Here, where the stores and the core meet,
//! because the core names no store.

use crate::fs::FsError;
use worldfs_store::StoreError;

impl From<StoreError> for FsError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Busy(_) => FsError::io(e.to_string()),
            StoreError::ReadOnly => FsError::read_only(e.to_string()),
            StoreError::Full(_) => FsError::no_space(e.to_string()),
            // The file was edited from a copy that is no longer current.
            StoreError::Conflict(_) => FsError::stale(e.to_string()),
            StoreError::Unreachable(_) | StoreError::Backend(_) => FsError::io(e.to_string()),
            StoreError::Refused(_) => FsError::invalid(e.to_string()),
        }
    }
}

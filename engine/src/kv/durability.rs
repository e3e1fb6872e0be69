//! What a commit promises once it returns, and the compression setting of sled stores:
//! settings of the backend that the layers above choose.

/// What survives a crash once a write call has returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Durability {
    /// The write is applied atomically but not flushed, and may wait up to 50 ms in the
    /// store's write buffer ([`crate::kv::BufferedKv`]): a process kill may lose it only if
    /// the buffer or the backend had not yet written it out (sled flushes in the background
    /// every 500 ms); a power loss may lose recent writes. What survives is a prefix of the
    /// writes, never a torn one.
    None,
    /// Group commit: the call returns after a flush that covers the write, shared with every
    /// writer waiting at the same time (one writer flushes for all; the others wait for it).
    /// What survives is what `Sync` promises — a returned write survives a process kill and a
    /// power loss — at a fraction of the flushes under concurrent writers. A writer waits at
    /// most for the flush in progress plus one more.
    Group,
    /// The backend is flushed before the call returns: the write survives a process kill and
    /// a power loss.
    #[default]
    Sync,
}

/// The zstd level of compressed sled stores.
pub const ZSTD_LEVEL: i32 = 3;

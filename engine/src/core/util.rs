//! Small helpers: clocks, id generation, hex.

use std::time::{SystemTime, UNIX_EPOCH};

use crate::core::error::{GroveError, Result};

pub use crate::kv::hex;

/// The `N` bytes written as `2 * N` lowercase hex digits; `None` for any other text.
pub(crate) fn unhex<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (o, pair) in out.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
        *o = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

/// Now, in milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Now, in `toISOString` form.
pub fn now_iso() -> String {
    grove_codec::time::format_ms(i64::try_from(now_ms()).unwrap_or(i64::MAX))
}

/// Now, but never before `previous` (kept non-decreasing within a session).
pub fn timestamp_after(previous: Option<&str>) -> String {
    let now = now_iso();
    match previous {
        Some(p) if p.len() == now.len() && p > now.as_str() => p.to_owned(),
        _ => now,
    }
}

/// A fresh lowercase UUIDv7.
pub fn new_session_id() -> String {
    uuid::Uuid::now_v7().hyphenated().to_string()
}

/// Random bytes drawn from the OS CSPRNG 256 at a time (one system call per 64 entry ids
/// instead of one per id), per thread.
struct RandomPool {
    bytes: [u8; 256],
    used: usize,
}

thread_local! {
    static POOL: std::cell::RefCell<RandomPool> = const {
        std::cell::RefCell::new(RandomPool { bytes: [0; 256], used: 256 })
    };
}

/// Four random bytes from the pool; `None` when the OS generator is unavailable.
fn random_4() -> Option<[u8; 4]> {
    POOL.with(|pool| {
        let mut pool = pool.borrow_mut();
        if pool.used + 4 > pool.bytes.len() {
            getrandom::fill(&mut pool.bytes).ok()?;
            pool.used = 0;
        }
        let at = pool.used;
        pool.used += 4;
        let mut b = [0u8; 4];
        b.copy_from_slice(&pool.bytes[at..at + 4]);
        Some(b)
    })
}

/// Waits before try `tries` (0: the first, no wait) of a write other processes' writes
/// came before: a random time below 100 µs × 2^tries (at most about 25 ms), so that writers
/// that collided do not collide again in step.
pub(crate) fn backoff(tries: usize) {
    if tries == 0 {
        return;
    }
    let bound = 100u64 << tries.min(8);
    let r = random_4().map_or(0, u32::from_le_bytes);
    std::thread::sleep(std::time::Duration::from_micros(u64::from(r) % bound));
}

/// 32 random bits from the OS CSPRNG as 8 lowercase hex characters.
pub fn random_entry_id() -> String {
    let b = random_4().unwrap_or_else(|| {
        // The OS generator is unavailable: fall back to the UUIDv7's random tail.
        let u = uuid::Uuid::now_v7();
        let mut b = [0u8; 4];
        b.copy_from_slice(&u.as_bytes()[12..16]);
        b
    });
    hex(&b)
}

/// Checks a caller-chosen session id: grove's id rule ([`grove_codec::check_id`]: at most
/// 256 bytes) and pi-CLI's rule for custom ids.
pub fn check_session_id(id: &str) -> Result<()> {
    grove_codec::check_id("session", id)?;
    let ok_inner = |c: char| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-');
    let valid = id.starts_with(|c: char| c.is_ascii_alphanumeric())
        && id.ends_with(|c: char| c.is_ascii_alphanumeric())
        && id.chars().all(ok_inner);
    if valid {
        Ok(())
    } else {
        Err(GroveError::InvalidArgument(format!(
            "session id {} must match ^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?$",
            grove_codec::ids::show_id(id)
        )))
    }
}

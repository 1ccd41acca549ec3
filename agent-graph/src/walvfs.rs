//! A thin VFS over SQLite's default one that gathers the write-ahead log's writes.
//!
//! SQLite writes each WAL frame as two `write` calls (a 24-byte header, then the page), so a
//! commit of n pages costs 2n system calls before its sync; on the ext4 disks arbor runs on
//! each of those costs about 5 µs, against a sync of about 100 µs. This VFS keeps the
//! consecutive writes to a WAL file in memory and hands them to the file in one call as soon as
//! a transaction's commit frame is complete, and whenever SQLite syncs, reads, sizes, truncates
//! or closes the file, when a write is not contiguous, or when the gathered bytes pass
//! [`GATHER_LIMIT`].
//!
//! Nothing is published unwritten: SQLite announces a commit to other connections (in the
//! shared WAL index) only after writing its commit frame, and by then the frame and everything
//! before it are in the file, synced or not. Durability is unchanged: SQLite counts a commit
//! durable only after the WAL's sync, which follows the written frames. A process that dies
//! with bytes still gathered leaves the same WAL as one that died before writing them: an
//! uncommitted tail, which SQLite's recovery ignores by its frame checksums. Every other file
//! (the database, its shared-memory index, temporary files) is opened by the default VFS and
//! never passes through here.

use std::ffi::{CStr, c_int, c_void};
use std::mem::{align_of, size_of};
use std::ptr;
use std::sync::OnceLock;

use rusqlite::ffi;

/// The name connections open the store with.
pub(crate) const NAME: &CStr = c"arbor-wal";

/// Gathered bytes above which a WAL file is written out at once (a large transaction, or a
/// page-cache spill, should not hold its whole log in memory).
const GATHER_LIMIT: usize = 1 << 20;

/// The most one write call hands the default VFS: its unix write takes under 128 KiB a call.
const WRITE_CHUNK: usize = 64 * 1024;

/// The WAL format: a 32-byte file header, then frames of a 24-byte header and one page. Bytes
/// 4..8 of a frame header (big-endian) hold the database size after a commit, and are zero in
/// every frame but a transaction's last.
const WAL_HEADER: i64 = 32;
const FRAME_HEADER: usize = 24;

/// Registers the VFS (once per process); the error names what failed.
pub(crate) fn register() -> Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        // SAFETY: `sqlite3_vfs_find` with a null name returns the default VFS, which lives for
        // the whole process; we copy it and never mutate it.
        let base = unsafe { ffi::sqlite3_vfs_find(ptr::null()) };
        if base.is_null() {
            return Err("sqlite has no default vfs".into());
        }
        // SAFETY: `base` is a valid, never-freed VFS (above).
        let mut vfs: ffi::sqlite3_vfs = unsafe { *base };
        let real_size = usize::try_from(vfs.szOsFile).map_err(|_| "bad szOsFile")?;
        vfs.szOsFile = c_int::try_from(REAL_OFFSET + real_size).map_err(|_| "szOsFile overflow")?;
        vfs.zName = NAME.as_ptr();
        vfs.pNext = ptr::null_mut();
        vfs.xOpen = Some(open);
        BASE.set(Base(base)).map_err(|_| "vfs registered twice")?;
        let vfs: &'static mut ffi::sqlite3_vfs = Box::leak(Box::new(vfs));
        // SAFETY: `vfs` is leaked, so it outlives every connection that uses it.
        let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 0) };
        if rc == ffi::SQLITE_OK {
            Ok(())
        } else {
            Err(format!(
                "sqlite refused to register the arbor-wal vfs (code {rc})"
            ))
        }
    })
    .clone()
}

/// Syncs the write-ahead log of `conn`'s main database: transactions committed without a sync
/// of their own become durable.
pub(crate) fn sync_wal(conn: &rusqlite::Connection) -> Result<(), String> {
    let mut file: *mut ffi::sqlite3_file = ptr::null_mut();
    // SAFETY: the connection's handle is live while it is borrowed; this file control writes
    // one pointer to the WAL's open file (null when there is none), which the connection owns
    // and keeps open while it is in WAL mode.
    unsafe {
        let rc = ffi::sqlite3_file_control(
            conn.handle(),
            c"main".as_ptr(),
            ffi::SQLITE_FCNTL_JOURNAL_POINTER,
            (&raw mut file).cast(),
        );
        if rc != ffi::SQLITE_OK || file.is_null() || (*file).pMethods.is_null() {
            return Err(format!(
                "cannot reach the write-ahead log to sync it (code {rc})"
            ));
        }
        let Some(sync) = (*(*file).pMethods).xSync else {
            return Err("the write-ahead log cannot be synced".into());
        };
        match sync(file, ffi::SQLITE_SYNC_NORMAL) {
            ffi::SQLITE_OK => Ok(()),
            rc => Err(format!("syncing the write-ahead log failed (code {rc})")),
        }
    }
}

/// The default VFS this one forwards to.
struct Base(*mut ffi::sqlite3_vfs);
// SAFETY: the default VFS is immutable and shared by every thread; SQLite itself does so.
unsafe impl Send for Base {}
// SAFETY: as above.
unsafe impl Sync for Base {}

static BASE: OnceLock<Base> = OnceLock::new();

/// A WAL file as SQLite sees it; the default VFS's file lives at [`REAL_OFFSET`] bytes in.
#[repr(C)]
struct WalFile {
    base: ffi::sqlite3_file,
    real: *mut ffi::sqlite3_file,
    /// Bytes written but not yet handed to the file, which belong at `start`.
    gathered: Vec<u8>,
    start: i64,
    /// The last write was a commit frame's header: its page completes the transaction.
    commit_next: bool,
}

/// Where the default VFS's file starts inside ours, aligned for any C struct.
const REAL_OFFSET: usize = size_of::<WalFile>().next_multiple_of(2 * align_of::<u64>());

unsafe extern "C" fn open(
    _vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let Some(Base(base)) = BASE.get() else {
        return ffi::SQLITE_ERROR;
    };
    // SAFETY: `base` is the default VFS; SQLite gave us `file` with `szOsFile` bytes.
    unsafe {
        let base_open = (**base).xOpen.expect("the default vfs opens files");
        if flags & ffi::SQLITE_OPEN_WAL == 0 {
            // Not a WAL: the default VFS's file takes our whole slot, methods and all.
            return base_open(*base, name, file, flags, out_flags);
        }
        let real = file
            .cast::<u8>()
            .add(REAL_OFFSET)
            .cast::<ffi::sqlite3_file>();
        let rc = base_open(*base, name, real, flags, out_flags);
        if rc != ffi::SQLITE_OK {
            (*file).pMethods = ptr::null();
            return rc;
        }
        ptr::write(
            file.cast::<WalFile>(),
            WalFile {
                base: ffi::sqlite3_file { pMethods: &METHODS },
                real,
                gathered: Vec::new(),
                start: 0,
                commit_next: false,
            },
        );
        ffi::SQLITE_OK
    }
}

static METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 3,
    xClose: Some(close),
    xRead: Some(read),
    xWrite: Some(write),
    xTruncate: Some(truncate),
    xSync: Some(sync),
    xFileSize: Some(file_size),
    xLock: Some(lock),
    xUnlock: Some(unlock),
    xCheckReservedLock: Some(check_reserved_lock),
    xFileControl: Some(file_control),
    xSectorSize: Some(sector_size),
    xDeviceCharacteristics: Some(device_characteristics),
    xShmMap: Some(shm_map),
    xShmLock: Some(shm_lock),
    xShmBarrier: Some(shm_barrier),
    xShmUnmap: Some(shm_unmap),
    xFetch: Some(fetch),
    xUnfetch: Some(unfetch),
};

/// Our file and the default VFS's methods for the file inside it.
///
/// # Safety
/// `file` must be a file opened by [`open`] with the WAL flag and not yet closed.
unsafe fn parts<'a>(
    file: *mut ffi::sqlite3_file,
) -> (&'a mut WalFile, &'static ffi::sqlite3_io_methods) {
    // SAFETY: per the contract, `file` is a live `WalFile` whose real file opened successfully,
    // so its methods pointer is set and static.
    unsafe {
        let wal = &mut *file.cast::<WalFile>();
        let methods = &*(*wal.real).pMethods;
        (wal, methods)
    }
}

/// Hands the gathered bytes to the file in one write.
///
/// # Safety
/// As for [`parts`].
unsafe fn flush(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: per the contract.
    let (wal, methods) = unsafe { parts(file) };
    let write = methods.xWrite.expect("files write");
    let mut rc = ffi::SQLITE_OK;
    let mut offset = wal.start;
    for chunk in wal.gathered.chunks(WRITE_CHUNK) {
        // Chunks are at most WRITE_CHUNK bytes, which fits a c_int.
        let len = chunk.len() as c_int;
        // SAFETY: `real` is open; the chunk is valid for `len` bytes.
        rc = unsafe { write(wal.real, chunk.as_ptr().cast(), len, offset) };
        if rc != ffi::SQLITE_OK {
            break;
        }
        offset += i64::from(len);
    }
    wal.gathered.clear();
    rc
}

/// Flushes, then runs `then` on the real file.
///
/// # Safety
/// As for [`parts`].
unsafe fn flushed(
    file: *mut ffi::sqlite3_file,
    then: impl FnOnce(*mut ffi::sqlite3_file, &'static ffi::sqlite3_io_methods) -> c_int,
) -> c_int {
    // SAFETY: per the contract.
    unsafe {
        let rc = flush(file);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let (wal, methods) = parts(file);
        then(wal.real, methods)
    }
}

unsafe extern "C" fn close(file: *mut ffi::sqlite3_file) -> c_int {
    // SAFETY: SQLite closes a file it opened through us exactly once.
    unsafe {
        let rc = flush(file);
        let (wal, methods) = parts(file);
        let closed = methods
            .xClose
            .map_or(ffi::SQLITE_OK, |close| close(wal.real));
        ptr::drop_in_place(&mut wal.gathered);
        if rc != ffi::SQLITE_OK { rc } else { closed }
    }
}

unsafe extern "C" fn read(
    file: *mut ffi::sqlite3_file,
    buf: *mut c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    // SAFETY: SQLite calls us on an open file.
    unsafe {
        flushed(file, |real, m| {
            m.xRead.expect("read")(real, buf, amount, offset)
        })
    }
}

unsafe extern "C" fn write(
    file: *mut ffi::sqlite3_file,
    buf: *const c_void,
    amount: c_int,
    offset: i64,
) -> c_int {
    let Ok(len) = usize::try_from(amount) else {
        return ffi::SQLITE_IOERR_WRITE;
    };
    // SAFETY: SQLite calls us on an open file with `amount` readable bytes at `buf`.
    unsafe {
        let (wal, _) = parts(file);
        let end = wal.start + wal.gathered.len() as i64;
        if !wal.gathered.is_empty() && offset != end {
            let rc = flush(file);
            if rc != ffi::SQLITE_OK {
                return rc;
            }
        }
        let (wal, _) = parts(file);
        if wal.gathered.is_empty() {
            wal.start = offset;
        }
        let bytes = std::slice::from_raw_parts(buf.cast::<u8>(), len);
        wal.gathered.extend_from_slice(bytes);
        let completes = wal.commit_next;
        wal.commit_next =
            len == FRAME_HEADER && offset >= WAL_HEADER && bytes[4..8] != [0, 0, 0, 0];
        if completes || wal.gathered.len() >= GATHER_LIMIT {
            return flush(file);
        }
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn truncate(file: *mut ffi::sqlite3_file, size: i64) -> c_int {
    // SAFETY: SQLite calls us on an open file.
    unsafe { flushed(file, |real, m| m.xTruncate.expect("truncate")(real, size)) }
}

unsafe extern "C" fn sync(file: *mut ffi::sqlite3_file, flags: c_int) -> c_int {
    // SAFETY: SQLite calls us on an open file.
    unsafe { flushed(file, |real, m| m.xSync.expect("sync")(real, flags)) }
}

unsafe extern "C" fn file_size(file: *mut ffi::sqlite3_file, size: *mut i64) -> c_int {
    // SAFETY: SQLite calls us on an open file.
    unsafe { flushed(file, |real, m| m.xFileSize.expect("size")(real, size)) }
}

/// Forwards a method that neither reads nor writes the file's bytes.
macro_rules! forward {
    ($name:ident, $field:ident, $default:expr, ($($arg:ident: $ty:ty),*) -> $ret:ty) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file $(, $arg: $ty)*) -> $ret {
            // SAFETY: SQLite calls us on an open file.
            unsafe {
                let (wal, methods) = parts(file);
                match methods.$field {
                    Some(method) => method(wal.real $(, $arg)*),
                    None => $default,
                }
            }
        }
    };
}

forward!(lock, xLock, ffi::SQLITE_OK, (level: c_int) -> c_int);
forward!(unlock, xUnlock, ffi::SQLITE_OK, (level: c_int) -> c_int);
forward!(check_reserved_lock, xCheckReservedLock, ffi::SQLITE_OK, (out: *mut c_int) -> c_int);
forward!(sector_size, xSectorSize, 4096, () -> c_int);
forward!(device_characteristics, xDeviceCharacteristics, 0, () -> c_int);
forward!(shm_map, xShmMap, ffi::SQLITE_IOERR,
    (page: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int);
forward!(shm_lock, xShmLock, ffi::SQLITE_IOERR,
    (offset: c_int, n: c_int, flags: c_int) -> c_int);
forward!(shm_unmap, xShmUnmap, ffi::SQLITE_OK, (delete: c_int) -> c_int);
forward!(unfetch, xUnfetch, ffi::SQLITE_OK, (offset: i64, page: *mut c_void) -> c_int);

unsafe extern "C" fn file_control(
    file: *mut ffi::sqlite3_file,
    op: c_int,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: SQLite calls us on an open file; a control may size or map it.
    unsafe {
        flushed(file, |real, m| match m.xFileControl {
            Some(control) => control(real, op, arg),
            None => ffi::SQLITE_NOTFOUND,
        })
    }
}

unsafe extern "C" fn shm_barrier(file: *mut ffi::sqlite3_file) {
    // SAFETY: SQLite calls us on an open file.
    unsafe {
        let (wal, methods) = parts(file);
        if let Some(barrier) = methods.xShmBarrier {
            barrier(wal.real);
        }
    }
}

unsafe extern "C" fn fetch(
    file: *mut ffi::sqlite3_file,
    offset: i64,
    amount: c_int,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: SQLite calls us on an open file; a mapped read must see every byte written.
    unsafe {
        flushed(file, |real, m| match m.xFetch {
            Some(fetch) => fetch(real, offset, amount, out),
            None => {
                *out = ptr::null_mut();
                ffi::SQLITE_OK
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use rusqlite::{Connection, OpenFlags};

    use super::*;

    fn open(path: &std::path::Path, vfs: &CStr) -> Connection {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
        let conn = Connection::open_with_flags_and_vfs(path, flags, vfs).expect("open");
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))
            .expect("wal");
        assert_eq!(mode, "wal");
        conn.execute_batch("PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0")
            .expect("settings");
        conn
    }

    /// Every committed transaction written through the gathering VFS is in the WAL file by the
    /// time its commit returns: another connection (plain VFS) reads it, and a copy of the two
    /// files, recovered from the WAL alone, holds every row. Large transactions (past
    /// `GATHER_LIMIT`) and small ones alike.
    #[test]
    fn committed_frames_reach_the_file_and_recover_without_the_vfs() {
        register().expect("register");
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("db.sqlite");
        let conn = open(&path, NAME);
        conn.execute_batch("CREATE TABLE t (n INTEGER PRIMARY KEY, body TEXT NOT NULL)")
            .expect("create");
        for n in 0..300 {
            conn.execute(
                "INSERT INTO t (n, body) VALUES (?1, ?2)",
                (n, format!("row {n}")),
            )
            .expect("insert");
        }
        let big = "x".repeat(8 * 1024);
        conn.execute_batch("BEGIN").expect("begin");
        for n in 300..700 {
            conn.execute("INSERT INTO t (n, body) VALUES (?1, ?2)", (n, &big))
                .expect("insert");
        }
        conn.execute_batch("COMMIT").expect("commit");
        conn.execute("UPDATE t SET body = 'changed' WHERE n = 5", [])
            .expect("update");

        let other = open(&path, c"unix");
        let (rows, changed): (i64, String) = other
            .query_row(
                "SELECT count(*), (SELECT body FROM t WHERE n = 5) FROM t",
                [],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .expect("read");
        assert_eq!((rows, changed.as_str()), (700, "changed"));
        drop(other);

        // A copy taken while the writer is still open (nothing checkpointed) recovers from the
        // WAL file alone.
        let copy = tempfile::tempdir().expect("tempdir");
        for suffix in ["", "-wal"] {
            std::fs::copy(
                dir.path().join(format!("db.sqlite{suffix}")),
                copy.path().join(format!("db.sqlite{suffix}")),
            )
            .expect("copy");
        }
        let recovered = open(&copy.path().join("db.sqlite"), c"unix");
        let rows: i64 = recovered
            .query_row("SELECT count(*) FROM t", [], |row| row.get(0))
            .expect("count");
        assert_eq!(rows, 700);
        let check: String = recovered
            .query_row("PRAGMA integrity_check", [], |row| row.get(0))
            .expect("check");
        assert_eq!(check, "ok");
        drop(conn);
    }

    /// `sync_wal` reaches the WAL of a connection that has one, and says so when there is none.
    #[test]
    fn sync_wal_needs_a_write_ahead_log() {
        register().expect("register");
        let dir = tempfile::tempdir().expect("tempdir");
        let conn = open(&dir.path().join("db.sqlite"), NAME);
        conn.execute_batch("CREATE TABLE t (n INTEGER)")
            .expect("create");
        sync_wal(&conn).expect("sync");
        let memory = Connection::open_in_memory().expect("memory");
        let err = sync_wal(&memory).expect_err("no wal");
        assert!(err.contains("write-ahead log"), "{err}");
    }
}

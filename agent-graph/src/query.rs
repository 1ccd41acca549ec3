//! Reading rows: the one loop that runs a query and maps each row.

use crate::error::OpResult;

/// Runs a query and maps every row with `map`, in the order SQLite returns them.
pub(crate) fn collect<T>(
    conn: &rusqlite::Connection,
    sql: &str,
    params: impl rusqlite::Params,
    mut map: impl FnMut(&rusqlite::Row<'_>) -> OpResult<T>,
) -> OpResult<Vec<T>> {
    let mut stmt = conn.prepare_cached(sql)?;
    let mut rows = stmt.query(params)?;
    let mut out = Vec::new();
    while let Some(row) = rows.next()? {
        out.push(map(row)?);
    }
    Ok(out)
}

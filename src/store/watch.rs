//! Baselines for `nastune watch`: one row per (host, series) with the series'
//! state as JSON, replaced as the watch goes on.

use rusqlite::params;

use super::{Store, StoreError, classify};

impl Store {
    /// Every stored series state of `host_id`: (series key, state JSON).
    pub fn watch_series(&self, host_id: &str) -> Result<Vec<(String, String)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT series, state FROM watch_series WHERE host_id = ?1 ORDER BY series")
            .map_err(|e| self.sql_err(e))?;
        let rows = stmt
            .query_map(params![host_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(|e| self.sql_err(e))?;
        rows.collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.sql_err(e))
    }

    /// Replaces the given series states (series key, state JSON, time) in one
    /// transaction, so a crash keeps either the old or the new baselines.
    pub fn save_watch_series(
        &mut self,
        host_id: &str,
        rows: &[(String, String, f64)],
    ) -> Result<(), StoreError> {
        let tx = self
            .conn
            .transaction()
            .map_err(|e| classify(&self.path, e))?;
        {
            let mut stmt = tx
                .prepare(
                    "INSERT INTO watch_series (host_id, series, state, updated_unix) VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (host_id, series) DO UPDATE SET state = excluded.state, \
                     updated_unix = excluded.updated_unix",
                )
                .map_err(|e| classify(&self.path, e))?;
            for (series, state, time) in rows {
                stmt.execute(params![host_id, series, state, time])
                    .map_err(|e| classify(&self.path, e))?;
            }
        }
        tx.commit().map_err(|e| classify(&self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_round_trip_and_replace() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("db")).unwrap();
        s.save_watch_series("h", &[("a".into(), "{\"x\":1}".into(), 1.0)])
            .unwrap();
        s.save_watch_series("h", &[("a".into(), "{\"x\":2}".into(), 2.0)])
            .unwrap();
        s.save_watch_series("other", &[("b".into(), "{}".into(), 2.0)])
            .unwrap();
        assert_eq!(
            s.watch_series("h").unwrap(),
            vec![("a".to_string(), "{\"x\":2}".to_string())]
        );
    }
}

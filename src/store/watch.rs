//! Baselines for `nastune watch`: one row per (host, series) with the series'
//! state as JSON, replaced as the watch goes on; and the time series of every
//! watch run (`watch_points`), bounded by age and by count.

use rusqlite::params;

use super::{RunId, Store, StoreError, classify};
use crate::watch::points::WatchPoint;

/// Points kept in the whole store at most (about 130 bytes each with the
/// indexes: some 26 MB); the oldest go first.
pub const MAX_WATCH_POINTS: u64 = 200_000;

/// The event names a stored point may carry (see `watch::points::event_name`).
const EVENTS: [&str; 4] = ["wrap", "reset", "reboot", "new_identity"];

/// What one prune removed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub points: u64,
    pub baselines: u64,
}

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
        self.execute_each(
            "INSERT INTO watch_series (host_id, series, state, updated_unix) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (host_id, series) DO UPDATE SET state = excluded.state, \
             updated_unix = excluded.updated_unix",
            rows,
            |stmt, (series, state, time)| stmt.execute(params![host_id, series, state, time]),
        )
    }

    /// Appends points to watch run `run` in one transaction.
    pub fn save_watch_points(
        &mut self,
        run: RunId,
        points: &[WatchPoint],
    ) -> Result<(), StoreError> {
        self.execute_each(
            "INSERT INTO watch_points (run_id, series, time_unix, delta, max_rate_per_sec, events) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            points,
            |stmt, p| {
                // SQLite integers are signed; no real interval grows a counter by 2^63.
                let delta = i64::try_from(p.delta).unwrap_or(i64::MAX);
                let events = p.events.join(",");
                stmt.execute(params![
                    run,
                    p.series,
                    p.time_unix_s,
                    delta,
                    p.max_rate_per_sec,
                    events
                ])
            },
        )
    }

    /// Runs `sql` once per item in one transaction: all rows or none.
    fn execute_each<T>(
        &mut self,
        sql: &str,
        items: &[T],
        mut bind: impl FnMut(&mut rusqlite::Statement<'_>, &T) -> rusqlite::Result<usize>,
    ) -> Result<(), StoreError> {
        let path = self.path.clone();
        let err = |e| classify(&path, e);
        let tx = self.conn.transaction().map_err(err)?;
        {
            let mut stmt = tx.prepare(sql).map_err(err)?;
            for item in items {
                bind(&mut stmt, item).map_err(err)?;
            }
        }
        tx.commit().map_err(err)
    }

    /// Calls `each` with every point of `run`, by series then time, without
    /// holding them all in memory.
    pub fn watch_points(
        &self,
        run: RunId,
        each: &mut dyn FnMut(WatchPoint),
    ) -> Result<(), StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT series, time_unix, delta, max_rate_per_sec, events FROM watch_points \
                 WHERE run_id = ?1 ORDER BY series, time_unix, rowid",
            )
            .map_err(|e| self.sql_err(e))?;
        let mut rows = stmt.query(params![run]).map_err(|e| self.sql_err(e))?;
        while let Some(r) = rows.next().map_err(|e| self.sql_err(e))? {
            let get = |e| classify(&self.path, e);
            let events: String = r.get(4).map_err(get)?;
            each(WatchPoint {
                series: r.get(0).map_err(get)?,
                time_unix_s: r.get(1).map_err(get)?,
                delta: u64::try_from(r.get::<_, i64>(2).map_err(get)?).unwrap_or(0),
                max_rate_per_sec: r.get(3).map_err(get)?,
                events: events
                    .split(',')
                    .filter_map(|e| EVENTS.iter().find(|k| **k == e).copied())
                    .collect(),
            });
        }
        Ok(())
    }

    /// Drops watch points taken before `cutoff_unix`, baselines of series last
    /// seen before it, and then the oldest points beyond `max_points`.
    pub fn prune_watch(&self, cutoff_unix: f64, max_points: u64) -> Result<Pruned, StoreError> {
        let err = |e| self.sql_err(e);
        let mut pruned = Pruned {
            points: self
                .conn
                .execute(
                    "DELETE FROM watch_points WHERE time_unix < ?1",
                    [cutoff_unix],
                )
                .map_err(err)? as u64,
            baselines: self
                .conn
                .execute(
                    "DELETE FROM watch_series WHERE updated_unix < ?1",
                    [cutoff_unix],
                )
                .map_err(err)? as u64,
        };
        let count: i64 = self
            .conn
            .query_row("SELECT count(*) FROM watch_points", [], |r| r.get(0))
            .map_err(err)?;
        let excess = u64::try_from(count).unwrap_or(0).saturating_sub(max_points);
        if excess > 0 {
            // Rowids grow with insertion, so the smallest are the oldest points.
            pruned.points += self
                .conn
                .execute(
                    "DELETE FROM watch_points WHERE rowid IN \
                     (SELECT rowid FROM watch_points ORDER BY rowid LIMIT ?1)",
                    [i64::try_from(excess).unwrap_or(i64::MAX)],
                )
                .map_err(err)? as u64;
        }
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::RunKind;

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

    fn point(series: &str, t: f64, events: Vec<&'static str>) -> WatchPoint {
        WatchPoint {
            series: series.into(),
            time_unix_s: t,
            delta: u64::MAX,
            max_rate_per_sec: Some(1.5),
            events,
        }
    }

    fn all_points(s: &Store, run: RunId) -> Vec<WatchPoint> {
        let mut out = Vec::new();
        s.watch_points(run, &mut |p| out.push(p)).unwrap();
        out
    }

    #[test]
    fn points_round_trip_ordered_and_go_with_their_run() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("db")).unwrap();
        let run = s.begin_run(RunKind::Watch, "h", "x").unwrap();
        s.save_watch_points(
            run,
            &[
                point("b", 2.0, vec![]),
                point("a", 3.0, vec!["wrap", "reset"]),
            ],
        )
        .unwrap();
        s.save_watch_points(run, &[point("a", 1.0, vec![])])
            .unwrap();
        let got = all_points(&s, run);
        let order: Vec<(&str, f64)> = got
            .iter()
            .map(|p| (p.series.as_str(), p.time_unix_s))
            .collect();
        assert_eq!(order, vec![("a", 1.0), ("a", 3.0), ("b", 2.0)]);
        assert_eq!(got[1].events, vec!["wrap", "reset"]);
        assert_eq!(got[0].delta, i64::MAX as u64, "clamped to SQLite's range");
        assert_eq!(got[0].max_rate_per_sec, Some(1.5));
        assert!(s.delete_run(run).unwrap());
        assert!(
            all_points(&s, run).is_empty(),
            "points cascade with the run"
        );
    }

    #[test]
    fn prune_by_age_then_by_count() {
        let d = tempfile::tempdir().unwrap();
        let mut s = Store::open(&d.path().join("db")).unwrap();
        let run = s.begin_run(RunKind::Watch, "h", "x").unwrap();
        let pts: Vec<WatchPoint> = (0..10).map(|i| point("a", f64::from(i), vec![])).collect();
        s.save_watch_points(run, &pts).unwrap();
        s.save_watch_series(
            "h",
            &[
                ("old".into(), "{}".into(), 1.0),
                ("new".into(), "{}".into(), 5.0),
            ],
        )
        .unwrap();
        assert_eq!(
            s.prune_watch(3.0, 5).unwrap(),
            Pruned {
                points: 3 + 2,
                baselines: 1
            }
        );
        let times: Vec<f64> = all_points(&s, run).iter().map(|p| p.time_unix_s).collect();
        assert_eq!(times, vec![5.0, 6.0, 7.0, 8.0, 9.0]);
        assert_eq!(s.watch_series("h").unwrap().len(), 1);
        assert_eq!(s.prune_watch(0.0, 5).unwrap(), Pruned::default());
    }
}

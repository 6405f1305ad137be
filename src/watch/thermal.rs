//! Temperatures: hwmon sensors (`sys/class/hwmon/hwmonN/tempM_input`, named by
//! the chip's `name` and the sensor's `tempM_label`) and thermal zones
//! (`sys/class/thermal/thermal_zoneN/temp`, named by `type`). Both report
//! millidegrees Celsius.

use crate::root::Root;

#[derive(Debug, Clone, PartialEq)]
pub struct Temperature {
    /// `hwmon/<chip>/<label or tempN>` or `thermal/<type>/<zone>`.
    pub sensor: String,
    pub celsius: f64,
}

/// Parses a sysfs millidegree value (`48312`, `-5000`).
pub fn parse_millicelsius(text: &str) -> Option<f64> {
    text.trim().parse::<i64>().ok().map(|m| m as f64 / 1000.0)
}

/// Every readable temperature. A sensor that fails to read (some give EIO or
/// ENODATA while idle) is noted in `problems` and skipped.
pub fn read_temperatures(root: &Root, problems: &mut Vec<String>) -> Vec<Temperature> {
    let mut out = Vec::new();
    for chip in root
        .read_dir_optional("sys/class/hwmon")
        .unwrap_or_default()
    {
        let dir = format!("sys/class/hwmon/{chip}");
        let name = value(root, &format!("{dir}/name")).unwrap_or_else(|| chip.clone());
        let files = root.read_dir_optional(&dir).unwrap_or_default();
        for f in files
            .iter()
            .filter(|f| f.starts_with("temp") && f.ends_with("_input"))
        {
            let sensor = f.trim_end_matches("_input");
            let label =
                value(root, &format!("{dir}/{sensor}_label")).unwrap_or_else(|| sensor.into());
            match root.read_value(&format!("{dir}/{f}")) {
                Ok(text) => match parse_millicelsius(&text) {
                    Some(celsius) => out.push(Temperature {
                        sensor: format!("hwmon/{name}/{label}"),
                        celsius,
                    }),
                    None => problems.push(format!("'{dir}/{f}' is not millidegrees: '{text}'")),
                },
                Err(e) => problems.push(e.to_string()),
            }
        }
    }
    for zone in root
        .read_dir_optional("sys/class/thermal")
        .unwrap_or_default()
    {
        if !zone.starts_with("thermal_zone") {
            continue;
        }
        let dir = format!("sys/class/thermal/{zone}");
        let kind = value(root, &format!("{dir}/type")).unwrap_or_else(|| "unknown".into());
        match root.read_value(&format!("{dir}/temp")) {
            Ok(text) => match parse_millicelsius(&text) {
                Some(celsius) => out.push(Temperature {
                    sensor: format!("thermal/{kind}/{zone}"),
                    celsius,
                }),
                None => problems.push(format!("'{dir}/temp' is not millidegrees: '{text}'")),
            },
            Err(e) if e.is_not_found() => {}
            Err(e) => problems.push(e.to_string()),
        }
    }
    out
}

fn value(root: &Root, rel: &str) -> Option<String> {
    root.read_optional(rel)
        .ok()
        .flatten()
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millidegrees() {
        assert_eq!(parse_millicelsius("48312\n"), Some(48.312));
        assert_eq!(parse_millicelsius("-5000"), Some(-5.0));
        assert_eq!(parse_millicelsius("n/a"), None);
    }

    #[test]
    fn hwmon_and_thermal_from_a_tree() {
        let d = tempfile::tempdir().unwrap();
        let w = |p: &str, v: &str| {
            let p = d.path().join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        w("sys/class/hwmon/hwmon0/name", "drivetemp\n");
        w("sys/class/hwmon/hwmon0/temp1_input", "41000\n");
        w("sys/class/hwmon/hwmon1/name", "cpu_thermal\n");
        w("sys/class/hwmon/hwmon1/temp1_input", "garbage\n");
        w("sys/class/thermal/thermal_zone0/type", "soc-thermal\n");
        w("sys/class/thermal/thermal_zone0/temp", "52500\n");
        let root = Root::tree(d.path()).unwrap();
        let mut problems = Vec::new();
        let t = read_temperatures(&root, &mut problems);
        assert_eq!(
            t,
            vec![
                Temperature {
                    sensor: "hwmon/drivetemp/temp1".into(),
                    celsius: 41.0
                },
                Temperature {
                    sensor: "thermal/soc-thermal/thermal_zone0".into(),
                    celsius: 52.5
                },
            ]
        );
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("'garbage'"), "{problems:?}");
    }
}
